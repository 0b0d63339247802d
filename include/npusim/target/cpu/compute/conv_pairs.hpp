// The k-pair im2col tile that the bf16 convolutions read (AMX tiles in conv_amx.hpp, AVX-512 BF16
// dot products in conv_dpbf16.hpp): for a block of 32 output pixels, pair row kk holds im2col rows
// 2kk and 2kk+1 interleaved, pixel by pixel — (row 2kk, row 2kk+1) of pixel 0, of pixel 1, ... —
// so the 32-bit value of one pixel in one pair row is the bf16 pair a dot-product instruction
// multiplies. Built in registers from the block's run table (conv_block.hpp), straight from bf16
// planes: a stride-2 run is two loads and a compaction.
#pragma once

#include "npusim/target/cpu/compute/conv_block.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512) && defined(__AVX512BW__) && defined(__BMI2__)
#define NPUSIM_CPU_CONV_PAIRS 1

namespace conv_pairs_detail {

// Interleaves rows into the pair layout: the first call holds a row, the second writes the pair.
struct PairWriter {
  std::uint16_t* tile;
  std::int64_t kk = 0;
  bool half = false;
  __m512i held = _mm512_setzero_si512(), lo_idx, hi_idx;
  explicit PairWriter(std::uint16_t* t) : tile(t) {
    alignas(64) std::uint16_t lo[32], hi[32];
    for (int q = 0; q < 16; ++q) lo[2 * q] = static_cast<std::uint16_t>(q), lo[2 * q + 1] = static_cast<std::uint16_t>(32 + q),
                                 hi[2 * q] = static_cast<std::uint16_t>(16 + q), hi[2 * q + 1] = static_cast<std::uint16_t>(48 + q);
    lo_idx = _mm512_load_si512(lo), hi_idx = _mm512_load_si512(hi);
  }
  void put(__m512i v) {
    if (!half) {
      held = v, half = true;
      return;
    }
    _mm512_store_si512(tile + kk * 64, _mm512_permutex2var_epi16(held, lo_idx, v));
    _mm512_store_si512(tile + kk * 64 + 32, _mm512_permutex2var_epi16(held, hi_idx, v));
    ++kk, half = false;
  }
  // Pads with zero rows up to `pairs` pair rows.
  void finish(std::int64_t pairs) {
    if (half) put(_mm512_setzero_si512());
    for (; kk < pairs; ++kk) _mm512_store_si512(tile + kk * 64, _mm512_setzero_si512()), _mm512_store_si512(tile + kk * 64 + 32, _mm512_setzero_si512());
  }
};

}  // namespace conv_pairs_detail

// The k-pair tile of block `b` (one group: `src` is its first bf16 input plane) into `tile`
// ([pairs][32 pixels][2] bf16, 64-byte aligned); pair rows past the im2col's K/2 are zero, and so
// are the lanes of pixels past the block.
inline void gather_pairs(const ConvGeom& g, const std::uint16_t* src, const ConvBlock& b, std::int64_t pairs, std::uint16_t* tile) {
  const std::int64_t Cg = g.C / g.G, khw = g.kh * g.kw, plane = g.H * g.W;
  conv_pairs_detail::PairWriter out(tile);
  if (g.pointwise()) {
    const __mmask32 colmask = static_cast<__mmask32>((std::uint64_t{1} << b.cols) - 1);
    for (std::int64_t ch = 0; ch < Cg; ++ch) out.put(_mm512_maskz_loadu_epi16(colmask, src + ch * plane + b.p0));
  } else if (b.vector) {
    alignas(64) std::uint16_t ev[32];  // lane L <- element 2L of a 64-element pair of vectors
    for (int q = 0; q < 32; ++q) ev[q] = static_cast<std::uint16_t>(2 * q);
    const __m512i even_idx = _mm512_load_si512(ev);
    for (std::int64_t ch = 0; ch < Cg; ++ch) {
      // Masked-off lanes are not read; the address of lane 0 may lie before the plane, so it is
      // formed as an integer.
      const auto pl = reinterpret_cast<std::uintptr_t>(src + ch * plane);
      for (std::int64_t t = 0; t < khw; ++t) {
        const ConvBlock::Run* r = b.runs_at(t);
        __m512i v = _mm512_setzero_si512();
        for (int k = 0; k < b.nr; ++k) {
          const auto at = pl + static_cast<std::uintptr_t>(r[k].off * 2);
          if (g.sw == 1) {
            v = _mm512_mask_loadu_epi16(v, r[k].lanes, reinterpret_cast<const void*>(at));
          } else if (r[k].lanes) {
            const __m512i lo = _mm512_maskz_loadu_epi16(_pdep_u32(r[k].lanes & 0xffffu, 0x55555555u), reinterpret_cast<const void*>(at)),
                          hi = _mm512_maskz_loadu_epi16(_pdep_u32(r[k].lanes >> 16, 0x55555555u), reinterpret_cast<const void*>(at + 64));
            v = _mm512_mask_mov_epi16(v, r[k].lanes, _mm512_permutex2var_epi16(lo, even_idx, hi));
          }
        }
        out.put(v);
      }
    }
  } else {
    alignas(64) std::uint16_t row[CONV_PX];
    for (std::int64_t ch = 0; ch < Cg; ++ch)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j) {
          b.gather_row(g, src + ch * plane, i, j, row);
          out.put(_mm512_load_si512(row));
        }
  }
  out.finish(pairs);
}

#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
