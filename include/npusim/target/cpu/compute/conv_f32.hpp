// f32 convolution by blocks of output pixels (AVX-512 builds): ConvF32Step for the shared drivers,
// conv_blocks (conv_blocks.hpp: 32-pixel blocks, 12 channels x 32 pixels per register block, K in
// chunks of 192) and conv_small (conv_small.hpp: images of at most 64 pixels, channels along the
// vectors).
//
// A block's im2col columns are gathered into an f32 tile [K][32] (two masked loads per row, or
// per row piece where the block's pieces read at different shifts, from the block's run table).
// The weights are packed once at load into f32 strips (pack_strips: 12 rows for conv_blocks, 48
// for conv_small).
#pragma once

#include "npusim/target/cpu/compute/conv_blocks.hpp"
#include "npusim/target/cpu/compute/conv_small.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

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

}  // namespace conv_f32_detail

// f32 steps: one im2col row per K step, f32 weight strips (pack_strips), products by FMA.
struct ConvF32Step {
  using Weights = PackedStrips;
  using In = float;
  using Unit = float;
  static constexpr std::int64_t block_kc = 192;
  static std::int64_t steps(const PackedStrips& w) { return w.K; }
  static void gather(const ConvGeom& g, const float* x, const ConvBlock& b, std::int64_t, float* tile) { conv_f32_detail::gather(g, x, b, tile); }
  // outer_product's vector operations: products by FMA.
  using Vec = __m512;
  static __m512 load(const float* p) { return _mm512_load_ps(p); }
  static __m512 broadcast(float x) { return _mm512_set1_ps(x); }
  static __m512 madd(__m512 acc, __m512 a, __m512 b) { return _mm512_fmadd_ps(a, b, acc); }
};

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
