// bf16 convolution on AVX-512 BF16 dot products, for CPUs that have them but no AMX (e.g. AMD
// Zen 4): ConvDpbf16Step for the shared drivers, conv_blocks (conv_blocks.hpp: 32-pixel blocks,
// 12 channels x 32 pixels per register block, K in chunks of 96 pairs) and conv_small
// (conv_small.hpp: images of at most 64 pixels, channels along the vectors).
//
// A block's im2col columns are gathered straight from the bf16 planes into the k-pair tile
// (conv_pairs.hpp: pair row kk = rows 2kk and 2kk+1 interleaved, so one pixel's pair is one
// 32-bit unit). One vdpbf16ps multiplies 16 units by one channel's weight pair, broadcast, and
// adds both products into f32. The weights are packed once at load into strips of bf16 pairs (round
// to nearest even from f32 weights, as the AMX kernel does; 12 rows for conv_blocks, 48 for
// conv_small). vdpbf16ps flushes denormal inputs and outputs to zero.
#pragma once

#include <cstring>
#include <vector>

#include "npusim/target/cpu/compute/conv_blocks.hpp"
#include "npusim/target/cpu/compute/conv_pairs.hpp"
#include "npusim/target/cpu/compute/conv_small.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512_BF16) && defined(NPUSIM_CPU_CONV_PAIRS)
#define NPUSIM_CPU_CONV_DPBF16 1

// One group's weights: strip s holds, for every k pair kk, the 32-bit bf16 pairs
// (w[r][2kk], w[r][2kk + 1]) of its rows r = mr s.. (zero past `rows` and for an odd K's last
// partner); 12-row strips for conv_blocks, 48-row ones for conv_small.
struct PairStrips {
  std::int64_t rows = 0, K = 0, KP = 0, strips = 0, mr = CONV_MR;
  AlignedBuf data;  // [strip][KP][mr] u32
  const std::uint32_t* strip(std::int64_t s) const { return data.as<std::uint32_t>() + s * KP * mr; }
};

inline PairStrips pack_pair_strips(const void* w, DType dtype, std::int64_t rows, std::int64_t K, std::int64_t mr = CONV_MR) {
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

// bf16 steps: one k pair per step, strips of bf16 weight pairs, products by vdpbf16ps.
struct ConvDpbf16Step {
  using Weights = PairStrips;
  using In = std::uint16_t;
  using Unit = std::uint32_t;
  static constexpr std::int64_t block_kc = 96;
  static std::int64_t steps(const PairStrips& w) { return w.KP; }
  static void gather(const ConvGeom& g, const std::uint16_t* x, const ConvBlock& b, std::int64_t pairs, std::uint32_t* tile) {
    gather_pairs(g, x, b, pairs, reinterpret_cast<std::uint16_t*>(tile));
  }
  // outer_product's vector operations: one vdpbf16ps adds both products of 16 pairs.
  using Vec = __m512bh;
  static __m512bh load(const std::uint32_t* p) { return reinterpret_cast<__m512bh>(_mm512_load_si512(p)); }
  static __m512bh broadcast(std::uint32_t x) { return reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x))); }
  static __m512 madd(__m512 acc, __m512bh a, __m512bh b) { return _mm512_dpbf16_ps(acc, a, b); }
};

#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
