// bf16 convolution on AVX-512 BF16 dot products, for CPUs that have them but no AMX (e.g. AMD
// Zen 4): conv_f32's pixel blocks with half the K steps.
//
// Per block of 32 output pixels a thread gathers the block's im2col columns straight from the bf16
// planes into its k-pair tile (conv_pairs.hpp: pair row kk = rows 2kk and 2kk+1 interleaved, two
// vectors of 16 pixels). Every output-channel strip then multiplies it: 12 channels x 32 pixels =
// 24 f32 accumulators, one vdpbf16ps per channel and 16 pixels per pair row, the channel's weight
// pair broadcast as one 32-bit value; K in chunks of 96 pairs so the tile chunk stays in L1 while
// the strip streams. The weights are packed once at load into 12-row strips of bf16 pairs (round
// to nearest even from f32 weights, as the AMX kernel does). Bias, relu and the output's storage
// are applied from the registers, and a residual the way the unfused add would. Images of at most
// 64 pixels take conv_small<ConvDpbf16Step> (conv_small.hpp: channels along the vectors).
// vdpbf16ps flushes denormal inputs and outputs to zero.
#pragma once

#include <cstring>
#include <vector>

#include "npusim/target/cpu/conv_pairs.hpp"
#include "npusim/target/cpu/conv_small.hpp"
#include "npusim/target/cpu/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512_BF16) && defined(NPUSIM_CPU_CONV_PAIRS)
#define NPUSIM_CPU_CONV_DPBF16 1

inline constexpr std::int64_t DPCONV_MR = 12;   // output channels per strip
inline constexpr std::int64_t DPCONV_KPC = 96;  // k pairs per chunk

// One group's weights: strip s holds, for every k pair kk, the 32-bit bf16 pairs
// (w[r][2kk], w[r][2kk + 1]) of its rows r = mr s.. (zero past `rows` and for an odd K's last
// partner); 12-row strips for conv_dpbf16, 48-row ones for small images.
struct PairStrips {
  std::int64_t rows = 0, K = 0, KP = 0, strips = 0, mr = DPCONV_MR;
  AlignedBuf data;  // [strip][KP][mr] u32
  const std::uint32_t* strip(std::int64_t s) const { return data.as<std::uint32_t>() + s * KP * mr; }
};

inline PairStrips pack_pair_strips(const void* w, DType dtype, std::int64_t rows, std::int64_t K, std::int64_t mr = DPCONV_MR) {
  PairStrips p;
  p.rows = rows, p.K = K, p.KP = (K + 1) / 2, p.mr = mr, p.strips = (rows + mr - 1) / mr;
  p.data = AlignedBuf::make(static_cast<std::size_t>(p.strips * p.KP * mr) * 4);
  std::memset(p.data.p.get(), 0, p.data.bytes);
  std::vector<float> row(static_cast<std::size_t>(K));
  std::vector<std::uint16_t> h(static_cast<std::size_t>(2 * p.KP), 0);
  auto* d = p.data.as<std::uint32_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    load_row(dtype, static_cast<const std::byte*>(w) + static_cast<std::size_t>(r * K) * dtype_size(dtype), row.data(), K);
    convert<SF32, SBf16>(row.data(), h.data(), K);
    for (std::int64_t kk = 0; kk < p.KP; ++kk) std::memcpy(d + (r / mr) * p.KP * mr + kk * mr + r % mr, h.data() + 2 * kk, 4);
  }
  return p;
}

// Per-thread scratch: the group's pair tiles [KP][32][2] bf16 and partial sums
// [block][strip * 12][32] f32 between K chunks.
inline std::size_t conv_dpbf16_thread_bytes(std::int64_t KP, std::int64_t strips, std::int64_t group) {
  return static_cast<std::size_t>(group * (KP * CONV_PX + strips * DPCONV_MR * CONV_PX)) * 4 + 64;
}
inline std::size_t conv_dpbf16_scratch_bytes(std::int64_t KP, std::int64_t strips, std::int64_t P) {
  return static_cast<std::size_t>(max_threads()) * conv_dpbf16_thread_bytes(KP, strips, conv_block_group(P));
}

namespace conv_dpbf16_detail {

// acc[0..R)[2] += the first R rows of a strip chunk (kc pairs x 12) . tile chunk (kc pairs x 32
// pixels). R < 12 for a last strip with fewer rows, so no products of its zero rows.
template <int R>
inline void micro(const std::uint32_t* a, const std::uint16_t* b, std::int64_t kc, __m512 (&acc)[DPCONV_MR][2]) {
  for (std::int64_t kk = 0; kk < kc; ++kk) {
    const auto b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + kk * 2 * CONV_PX)),
               b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + kk * 2 * CONV_PX + CONV_PX));
    for (int r = 0; r < R; ++r) {
      const auto av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[kk * DPCONV_MR + r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
}

}  // namespace conv_dpbf16_detail

// One image, one group: C[rows][P] (NCHW, row stride P) = W . im2col(x), + bias, [+ residual],
// relu. `x` is the group's first input plane (bf16); `residual`, if any, is laid out as C and held
// in its storage type. Work items are (block group, strip range); a thread gathers a group once for
// the strip ranges it runs.
inline void conv_dpbf16(const ConvGeom& g, const PairStrips& w, const std::uint16_t* x, void* y, DType ydt, const float* bias, bool relu,
                        std::byte* scratch, const void* residual = nullptr) {
  const std::int64_t P = g.pixels(), KP = w.KP, blocks = (P + CONV_PX - 1) / CONV_PX, threads = max_threads();
  const std::int64_t nb = conv_block_group(P), groups = (blocks + nb - 1) / nb;
  const std::int64_t parts = conv_parts(groups, w.strips, threads);
  parallel_for_t(groups * parts, 1, [&](int tid, std::int64_t i0, std::int64_t i1) {
    auto* tiles = reinterpret_cast<std::uint16_t*>(thread_scratch(scratch, tid, conv_dpbf16_thread_bytes(KP, w.strips, nb)));
    auto* partial = reinterpret_cast<float*>(tiles + nb * KP * 2 * CONV_PX);
    visit_float_storage(ydt, [&](auto ctag) {
      using SC = decltype(ctag);
      auto* C = static_cast<typename SC::T*>(y);
      const auto* R = static_cast<const typename SC::T*>(residual);
      std::int64_t have = -1;
      for (std::int64_t it = i0; it < i1; ++it) {
        const std::int64_t grp = it / parts, part = it % parts, b0 = grp * nb, nbv = std::min(nb, blocks - b0);
        if (grp != have) {
          for (std::int64_t b = 0; b < nbv; ++b) gather_pairs(g, x, ConvBlock(g, b0 + b), KP, tiles + b * KP * 2 * CONV_PX);
          have = grp;
        }
        const std::int64_t s0 = w.strips * part / parts, s1 = w.strips * (part + 1) / parts;
        for (std::int64_t k0 = 0; k0 < KP; k0 += DPCONV_KPC) {
          const std::int64_t kc = std::min(DPCONV_KPC, KP - k0);
          const bool first = k0 == 0, last = k0 + kc == KP;
          for (std::int64_t s = s0; s < s1; ++s)
            for (std::int64_t b = 0; b < nbv; ++b) {
              __m512 acc[DPCONV_MR][2];
              float* ps = partial + (b * w.strips + s) * DPCONV_MR * CONV_PX;
              for (int r = 0; r < DPCONV_MR; ++r)
                for (int v = 0; v < 2; ++v) acc[r][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ps + r * CONV_PX + v * 16);
              const std::uint32_t* sa = w.strip(s) + k0 * DPCONV_MR;
              const std::uint16_t* sb = tiles + (b * KP + k0) * 2 * CONV_PX;
              if (const std::int64_t live = w.rows - s * DPCONV_MR; live <= 4) conv_dpbf16_detail::micro<4>(sa, sb, kc, acc);
              else if (live <= 8) conv_dpbf16_detail::micro<8>(sa, sb, kc, acc);
              else conv_dpbf16_detail::micro<DPCONV_MR>(sa, sb, kc, acc);
              if (!last) {
                for (int r = 0; r < DPCONV_MR; ++r)
                  for (int v = 0; v < 2; ++v) _mm512_store_ps(ps + r * CONV_PX + v * 16, acc[r][v]);
                continue;
              }
              const std::int64_t r0 = s * DPCONV_MR, rows = std::min(DPCONV_MR, w.rows - r0), n0 = (b0 + b) * CONV_PX, cols = std::min(CONV_PX, P - n0);
              for (std::int64_t r = 0; r < rows; ++r)
                for (int v = 0; v < 2; ++v) {
                  const std::int64_t at = (r0 + r) * P + n0 + v * 16;
                  store_output<SC>(C + at, fbatch(acc[r][v]), bias ? bias[r0 + r] : 0.0f, relu, cols - v * 16, R ? R + at : nullptr);
                }
            }
        }
      }
    });
  });
}

// bf16 steps for conv_small (conv_small.hpp): one k pair per step, the weights as 48-row pair
// strips, a vector of 16 channels' pairs times one pixel's pair broadcast.
struct ConvDpbf16Step {
  using Weights = PairStrips;
  using In = std::uint16_t;
  using Unit = std::uint32_t;
  static std::int64_t steps(const PairStrips& w) { return w.KP; }
  static void gather(const ConvGeom& g, const std::uint16_t* x, const ConvBlock& b, std::int64_t pairs, std::uint32_t* tile) {
    gather_pairs(g, x, b, pairs, reinterpret_cast<std::uint16_t*>(tile));
  }
  // acc[p][v] += sum over the chunk's pairs kk of tile[kk][p] . strip[kk][16 v ..]: NV vectors of
  // channels, 7 pixels at t (row stride 32 pairs).
  template <int NV>
  static void micro(const std::uint32_t* w, const std::uint32_t* t, std::int64_t kc, __m512 (&acc)[CONV_CV_NP][3]) {
    for (std::int64_t kk = 0; kk < kc; ++kk) {
      __m512bh wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = reinterpret_cast<__m512bh>(_mm512_load_si512(w + kk * CONV_CV_MR + 16 * v));
      for (int p = 0; p < CONV_CV_NP; ++p) {
        const auto x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(t[kk * CONV_PX + p])));
        for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_dpbf16_ps(acc[p][v], x, wv[v]);
      }
    }
  }
};

#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
