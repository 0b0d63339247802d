// f32 convolution by blocks of output pixels (AVX-512 builds).
//
// Per block of 32 output pixels a thread gathers the block's im2col columns into its own f32
// tile [K][32] (two masked loads per row, or per row piece where the block's pieces read at
// different shifts, from the block's run table), then every output-channel strip multiplies it:
// 12 channels x 32 pixels = 24 accumulators, K in chunks of 192 so the tile chunk stays in L1
// while the strip streams. The weights are packed once at load into 12-row f32 strips
// (pack_strips). Bias, relu and the output's storage are applied from the registers. Images of at
// most 64 pixels take conv_small<ConvF32Step> (conv_small.hpp: channels along the vectors).
#pragma once

#include "npusim/target/cpu/conv_block.hpp"
#include "npusim/target/cpu/conv_small.hpp"
#include "npusim/target/cpu/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

inline constexpr std::int64_t CONV_MR = 12;   // output channels per strip
inline constexpr std::int64_t CONV_KC = 192;  // K chunk

// Per-thread scratch: the group's tiles [K][32] and partial sums [block][strip * 12][32] between
// K chunks.
inline std::size_t conv_f32_thread_bytes(std::int64_t K, std::int64_t strips, std::int64_t group) {
  return static_cast<std::size_t>(group * (K * CONV_PX + strips * CONV_MR * CONV_PX)) * 4 + 64;
}
inline std::size_t conv_f32_scratch_bytes(std::int64_t K, std::int64_t strips, std::int64_t P) {
  return static_cast<std::size_t>(max_threads()) * conv_f32_thread_bytes(K, strips, conv_block_group(P));
}

namespace conv_f32_detail {

// The im2col columns of block `b` into tile[K][32] (lanes past its pixels zero).
inline void gather(const ConvGeom& g, const float* src, const ConvBlock& b, float* tile) {
  const std::int64_t Cg = g.C / g.G, khw = g.kh * g.kw, plane = g.H * g.W;
  if (g.pointwise()) {
    const auto m = static_cast<std::uint32_t>((std::uint64_t{1} << b.cols) - 1);
    for (std::int64_t ch = 0; ch < Cg; ++ch) {
      const float* s = src + ch * plane + b.p0;
      _mm512_store_ps(tile + ch * CONV_PX, _mm512_maskz_loadu_ps(static_cast<__mmask16>(m), s));
      _mm512_store_ps(tile + ch * CONV_PX + 16, _mm512_maskz_loadu_ps(static_cast<__mmask16>(m >> 16), s + 16));
    }
    return;
  }
  if (!b.vector) {
    for (std::int64_t ch = 0, r = 0; ch < Cg; ++ch)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j, ++r) b.gather_row(g, src + ch * plane, i, j, tile + r * CONV_PX);
    return;
  }
  // Masked-off lanes are not read; the address of lane 0 may lie before the plane, so addresses
  // are formed as integers.
  float* dst = tile;
  alignas(64) std::int32_t ev[16];  // lane L <- element 2L of a 32-element pair of vectors
  for (int q = 0; q < 16; ++q) ev[q] = 2 * q;
  const __m512i even_idx = _mm512_load_si512(ev);
  for (std::int64_t ch = 0; ch < Cg; ++ch) {
    const auto pl = reinterpret_cast<std::uintptr_t>(src + ch * plane);
    for (std::int64_t t = 0; t < khw; ++t, dst += CONV_PX) {
      const ConvBlock::Run* r = b.runs_at(t);
      __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
      for (int k = 0; k < b.nr; ++k) {
        const std::uint32_t l = r[k].lanes;
        const auto at = pl + static_cast<std::uintptr_t>(r[k].off * 4);
        auto ld = [&](std::uint32_t mask, std::uintptr_t a) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), reinterpret_cast<const void*>(a)); };
        if (g.sw == 1) {
          v0 = _mm512_mask_loadu_ps(v0, static_cast<__mmask16>(l), reinterpret_cast<const void*>(at));
          v1 = _mm512_mask_loadu_ps(v1, static_cast<__mmask16>(l >> 16), reinterpret_cast<const void*>(at + 64));
        } else if (l) {
          const __m512 a0 = ld(_pdep_u32(l & 0xffu, 0x5555u), at), a1 = ld(_pdep_u32((l >> 8) & 0xffu, 0x5555u), at + 64);
          const __m512 a2 = ld(_pdep_u32((l >> 16) & 0xffu, 0x5555u), at + 128), a3 = ld(_pdep_u32(l >> 24, 0x5555u), at + 192);
          v0 = _mm512_mask_mov_ps(v0, static_cast<__mmask16>(l), _mm512_permutex2var_ps(a0, even_idx, a1));
          v1 = _mm512_mask_mov_ps(v1, static_cast<__mmask16>(l >> 16), _mm512_permutex2var_ps(a2, even_idx, a3));
        }
      }
      _mm512_store_ps(dst, v0);
      _mm512_store_ps(dst + 16, v1);
    }
  }
}

// acc[0..R)[2] += the first R rows of a strip chunk (kc x 12) . tile chunk (kc x 32). R < 12 for
// a last strip with fewer rows (64 channels = 5 strips + 4 rows), so no products of its zero rows.
template <int R>
inline void micro(const float* a, const float* b, std::int64_t kc, __m512 (&acc)[CONV_MR][2]) {
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * CONV_PX), b1 = _mm512_load_ps(b + k * CONV_PX + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[k * CONV_MR + r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
}

}  // namespace conv_f32_detail

// One image, one group: C[rows][P] (NCHW, row stride P) = W . im2col(x), + bias, relu. Work items
// are (block group, strip range); a thread gathers a group once for the strip ranges it runs.
inline void conv_f32(const ConvGeom& g, const PackedStrips& w, const float* x, void* y, DType ydt, const float* bias, bool relu, std::byte* scratch) {
  const std::int64_t P = g.pixels(), K = w.K, blocks = (P + CONV_PX - 1) / CONV_PX, threads = max_threads();
  const std::int64_t nb = conv_block_group(P), groups = (blocks + nb - 1) / nb;
  const std::int64_t parts = conv_parts(groups, w.strips, threads);
  parallel_for_t(groups * parts, 1, [&](int tid, std::int64_t i0, std::int64_t i1) {
    auto* tiles = reinterpret_cast<float*>(thread_scratch(scratch, tid, conv_f32_thread_bytes(K, w.strips, nb)));
    float* partial = tiles + nb * K * CONV_PX;
    visit_float_storage(ydt, [&](auto ctag) {
      using SC = decltype(ctag);
      auto* C = static_cast<typename SC::T*>(y);
      std::int64_t have = -1;
      for (std::int64_t it = i0; it < i1; ++it) {
        const std::int64_t grp = it / parts, part = it % parts, b0 = grp * nb, nbv = std::min(nb, blocks - b0);
        if (grp != have) {
          for (std::int64_t b = 0; b < nbv; ++b) conv_f32_detail::gather(g, x, ConvBlock(g, b0 + b), tiles + b * K * CONV_PX);
          have = grp;
        }
        const std::int64_t s0 = w.strips * part / parts, s1 = w.strips * (part + 1) / parts;
        for (std::int64_t k0 = 0; k0 < K; k0 += CONV_KC) {
          const std::int64_t kc = std::min(CONV_KC, K - k0);
          const bool first = k0 == 0, last = k0 + kc == K;
          for (std::int64_t s = s0; s < s1; ++s)
            for (std::int64_t b = 0; b < nbv; ++b) {
              __m512 acc[CONV_MR][2];
              float* ps = partial + (b * w.strips + s) * CONV_MR * CONV_PX;
              for (int r = 0; r < CONV_MR; ++r)
                for (int v = 0; v < 2; ++v) acc[r][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ps + r * CONV_PX + v * 16);
              const float *sa = w.strip(s) + k0 * CONV_MR, *sb = tiles + b * K * CONV_PX + k0 * CONV_PX;
              if (const std::int64_t live = w.rows - s * CONV_MR; live <= 4) conv_f32_detail::micro<4>(sa, sb, kc, acc);
              else if (live <= 8) conv_f32_detail::micro<8>(sa, sb, kc, acc);
              else conv_f32_detail::micro<CONV_MR>(sa, sb, kc, acc);
              if (!last) {
                for (int r = 0; r < CONV_MR; ++r)
                  for (int v = 0; v < 2; ++v) _mm512_store_ps(ps + r * CONV_PX + v * 16, acc[r][v]);
                continue;
              }
              const std::int64_t r0 = s * CONV_MR, rows = std::min(CONV_MR, w.rows - r0), n0 = (b0 + b) * CONV_PX, cols = std::min(CONV_PX, P - n0);
              for (std::int64_t r = 0; r < rows; ++r)
                for (int v = 0; v < 2; ++v) store_output<SC>(C + (r0 + r) * P + n0 + v * 16, fbatch(acc[r][v]), bias ? bias[r0 + r] : 0.0f, relu, cols - v * 16);
            }
        }
      }
    });
  });
}

// f32 steps for conv_small (conv_small.hpp): one im2col row per K step, the weights as f32
// strips of 48 rows (pack_strips), a vector of channels times one pixel's value broadcast.
struct ConvF32Step {
  using Weights = PackedStrips;
  using In = float;
  using Unit = float;
  static std::int64_t steps(const PackedStrips& w) { return w.K; }
  static void gather(const ConvGeom& g, const float* x, const ConvBlock& b, std::int64_t, float* tile) { conv_f32_detail::gather(g, x, b, tile); }
  // acc[p][v] += sum over the chunk's k of tile[k][p] * strip[k][16 v ..]: NV vectors of
  // channels, 7 pixels at t (row stride 32).
  template <int NV>
  static void micro(const float* w, const float* t, std::int64_t kc, __m512 (&acc)[CONV_CV_NP][3]) {
    for (std::int64_t k = 0; k < kc; ++k) {
      __m512 wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_load_ps(w + k * CONV_CV_MR + 16 * v);
      for (int p = 0; p < CONV_CV_NP; ++p) {
        const __m512 x = _mm512_set1_ps(t[k * CONV_PX + p]);
        for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(x, wv[v], acc[p][v]);
      }
    }
  }
};

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
