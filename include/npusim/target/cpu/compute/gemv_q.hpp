// Decode GEMV over block-quantized weights (docs/quantization.md, issue 37): y[n] = sum_k W[n, k]
// x[k] for a weight stored as rows of q8_0 or q4_0 blocks (core/quant.hpp). As llama.cpp does, the
// activation row is quantized to int8 per block of 32 first (here with an f32 scale per block,
// max|x| / 127, round to nearest), so that each block's product is an int8 dot product scaled by
// the two blocks' scales:
//   y[n] = sum_b dw[n, b] * dx[b] * sum_j cw[n, b, j] * qx[b, j]
// (cw = q for q8_0, c - 8 for q4_0). That is the kernel's exact meaning (the integer sums are
// exact; only the float sum over blocks is ordered differently by the vector path). It differs from
// the format's own meaning, the dequantized weight times x in f32, by the activation's rounding:
// at most sum_j |w_j| dx_b / 2 per block.
//
// AVX-512 VNNI (vpdpbusd: u8 x s8 products summed in fours into int32 lanes), two blocks per
// 512-bit step, four rows at a time sharing the activation's loads: q4_0's codes 0..15 are the
// unsigned operand (the -8 comes off as 8 * sum qx, precomputed per lane); for q8_0 the
// activation is the unsigned one, offset by 128 (the 128 * sum w comes off with a second vpdpbusd
// on the same weights). Portable loops elsewhere, same sums.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/core/error.hpp"
#include "npusim/core/quant.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define NPUSIM_CPU_VNNI 1
#endif

namespace npusim::inline NPUSIM_ABI::cpu::qgemv {

using quant::BlockFormat;
using quant::block_values;

// How far ahead the block GEMVs ask for lines (the bf16 GEMV's distance, docs/benchmarks.md).
inline constexpr std::size_t QGEMV_PREFETCH_BYTES = 4096;

inline constexpr bool vnni_available() {
#if defined(NPUSIM_CPU_VNNI)
  return true;
#else
  return false;
#endif
}

// One activation row quantized for one weight format: K values, ceil(K / 32) blocks.
struct QActivation {
  BlockFormat format = BlockFormat::q8_0;
  std::int64_t k = 0, blocks = 0;
  std::vector<std::int8_t> q;      // blocks * 32 codes in value order (zero-padded)
  std::vector<float> d;            // per block scale
  // The vector path's copies, per pair of blocks (16 lanes of 4 bytes):
  std::vector<std::uint8_t> lanes;  // q8_0: q + 128, value order; q4_0: q as [b0 0..15, b1 0..15, b0 16..31, b1 16..31]
  std::vector<float> d_lanes;       // each lane's block scale
  std::vector<std::int32_t> bias;   // q4_0: 8 * the lane's sum of q
};

namespace detail {
[[noreturn]] inline void not_finite(float v, std::int64_t at) {
  throw Error(ErrorCode::runtime, "a quantized linear's input is not finite", {.found = std::to_string(v) + " at index " + std::to_string(at)});
}
// One block of n <= 32 values, portably.
inline std::int32_t quantize_block(const float* x, std::int64_t n, std::int64_t at, std::int8_t* q, float* d) {
  float amax = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    if (!std::isfinite(x[j])) not_finite(x[j], at + j);
    amax = std::max(amax, std::fabs(x[j]));
  }
  const float db = amax / 127.0f, id = db != 0 ? 1.0f / db : 0.0f;
  *d = db;
  std::int32_t sum = 0;
  for (std::int64_t j = 0; j < block_values; ++j) {
    q[j] = j < n ? static_cast<std::int8_t>(std::nearbyint(x[j] * id)) : std::int8_t{0};
    sum += q[j];
  }
  return sum;
}
}  // namespace detail

// One activation row's blocks: q (blocks_per_row(k) * 32 codes, zero-padded) and d (a scale per
// block, max|x| / 127, codes rounded to nearest even), and with `sums` each block's sum of codes.
// The decode GEMV and the prefill GEMM (gemm_q.hpp) quantize through this one function, so both
// give a row the same codes. AVX-512 where the build has it (the same arithmetic: a product
// rounded by vcvtps2dq in the default rounding mode is nearbyint's). A NaN or infinite value is an
// error naming its index (the product would be NaN either way; this says where it came from).
inline void quantize_blocks(const float* x, std::int64_t k, std::int8_t* q, float* d, std::int32_t* sums = nullptr) {
  const std::int64_t nb = quant::blocks_per_row(k);
  std::int64_t b = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
  for (; (b + 1) * block_values <= k; ++b) {
    const float* xb = x + b * block_values;
    const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
    if (_mm512_fpclass_ps_mask(v0, 0x99) | _mm512_fpclass_ps_mask(v1, 0x99))  // QNaN, SNaN, +-Inf: the portable
      detail::quantize_block(xb, block_values, b * block_values, q + b * block_values, d + b);  // block throws, naming the index
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float db = amax / 127.0f, id = db != 0 ? 1.0f / db : 0.0f;
    d[b] = db;
    const __m512 s = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, s)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, s));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * block_values), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * block_values + 16), _mm512_cvtepi32_epi8(q1));
    if (sums) sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
#endif
  for (; b < nb; ++b) {
    const std::int32_t sum = detail::quantize_block(x + b * block_values, std::min(block_values, k - b * block_values), b * block_values,
                                                    q + b * block_values, d + b);
    if (sums) sums[b] = sum;
  }
}

// Quantizes x (k values) for weights of format f (quantize_blocks, then the vector path's lanes).
inline void quantize_activation(BlockFormat f, const float* x, std::int64_t k, QActivation& a) {
  a.format = f;
  a.k = k;
  a.blocks = quant::blocks_per_row(k);
  const auto nb = static_cast<std::size_t>(a.blocks);
  a.q.assign(nb * block_values, 0);
  a.d.assign(nb, 0.0f);
  quantize_blocks(x, k, a.q.data(), a.d.data());
  const std::size_t pairs = nb / 2;
  a.lanes.assign(pairs * 64, 0);
  a.d_lanes.assign(pairs * 16, 0.0f);
  a.bias.assign(f == BlockFormat::q4_0 ? pairs * 16 : 0, 0);
  for (std::size_t p = 0; p < pairs; ++p) {
    const std::int8_t* q0 = a.q.data() + 2 * p * block_values;
    const std::int8_t* q1 = q0 + block_values;
    std::uint8_t* l = a.lanes.data() + p * 64;
    if (f == BlockFormat::q8_0) {
      for (int j = 0; j < 32; ++j) l[j] = static_cast<std::uint8_t>(q0[j] + 128), l[32 + j] = static_cast<std::uint8_t>(q1[j] + 128);
      for (int lane = 0; lane < 16; ++lane) a.d_lanes[p * 16 + static_cast<std::size_t>(lane)] = a.d[2 * p + (lane < 8 ? 0 : 1)];
    } else {
      for (int j = 0; j < 16; ++j) {
        l[j] = static_cast<std::uint8_t>(q0[j]);
        l[16 + j] = static_cast<std::uint8_t>(q1[j]);
        l[32 + j] = static_cast<std::uint8_t>(q0[16 + j]);
        l[48 + j] = static_cast<std::uint8_t>(q1[16 + j]);
      }
      for (int lane = 0; lane < 16; ++lane) {
        a.d_lanes[p * 16 + static_cast<std::size_t>(lane)] = a.d[2 * p + ((lane / 4) % 2)];
        std::int32_t s = 0;
        for (int j = 0; j < 4; ++j) s += static_cast<std::int8_t>(l[lane * 4 + j]);
        a.bias[p * 16 + static_cast<std::size_t>(lane)] = 8 * s;
      }
    }
  }
}

namespace detail {
// One block's integer dot product, sum_j cw_j * qx_j.
// The codes are copied into typed arrays first: with VNNI enabled (-mavx512vnni or -mavxvnni, so
// -march=native on Zen 4), GCC 12.2 at -O2 and -O3 vectorises a sum of int8_t(unsigned byte) *
// int8_t products into a wrong dot product (Clang is right; the loop below is compiled right).
inline std::int32_t block_dot(BlockFormat f, const std::byte* blk, const std::int8_t* qx) {
  std::int32_t s = 0;
  if (f == BlockFormat::q8_0) {
    std::int8_t q[32];
    std::memcpy(q, blk + 2, sizeof q);
    for (int j = 0; j < 32; ++j) s += std::int32_t{q[j]} * qx[j];
  } else {
    std::uint8_t q[16];
    std::memcpy(q, blk + 2, sizeof q);
    for (int j = 0; j < 16; ++j) s += ((q[j] & 15) - 8) * std::int32_t{qx[j]} + ((q[j] >> 4) - 8) * std::int32_t{qx[16 + j]};
  }
  return s;
}
using quant::block_scale;
// Blocks [b0, b1) of one row, portable: the vector path's tail and the whole row elsewhere.
inline float row_blocks(BlockFormat f, const std::byte* row, const QActivation& a, std::int64_t b0, std::int64_t b1) {
  const std::size_t bb = quant::block_bytes(f);
  float s = 0;
  for (std::int64_t b = b0; b < b1; ++b) {
    const std::byte* blk = row + static_cast<std::size_t>(b) * bb;
    s += block_scale(blk) * a.d[static_cast<std::size_t>(b)] *
         static_cast<float>(block_dot(f, blk, a.q.data() + b * block_values));
  }
  return s;
}

#if defined(NPUSIM_CPU_VNNI)
inline __m512 pair_scales(const std::byte* b0, const std::byte* b1, __mmask16 second) {
  const __m512 s0 = _mm512_set1_ps(block_scale(b0)), s1 = _mm512_set1_ps(block_scale(b1));
  return _mm512_mask_blend_ps(second, s0, s1);
}
// Rows [r, r + R) of W, all blocks: pairs by VNNI, an odd last block portably.
template <int R>
inline void rows_vnni(BlockFormat f, const std::byte* w, std::size_t rb, std::int64_t r, const QActivation& a, float* y) {
  const std::size_t bb = quant::block_bytes(f);
  const std::int64_t pairs = a.blocks / 2;
  __m512 acc[R];
  for (auto& v : acc) v = _mm512_setzero_ps();
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80)), nib = _mm512_set1_epi8(0x0f);
  const __mmask16 second = f == BlockFormat::q8_0 ? __mmask16{0xFF00} : __mmask16{0xF0F0};
  // A thread's rows are one sequential run of memory, and the hardware prefetchers alone keep too
  // few of its lines in flight. Each step asks for its share of the next group's R * rb bytes, 4 KiB
  // further on, as one sequential run (asking per row, at the same place R rows on, read q4_0 rows
  // about 1.4x slower: docs/benchmarks.md). Addresses formed as integers: they may lie past the
  // weights' end (a prefetch never faults).
  const std::uintptr_t next = reinterpret_cast<std::uintptr_t>(w) + static_cast<std::size_t>(r + R) * rb + QGEMV_PREFETCH_BYTES;
  const std::size_t per_step = pairs > 0 ? (static_cast<std::size_t>(R) * rb + static_cast<std::size_t>(pairs) - 1) / static_cast<std::size_t>(pairs) : 0;
  for (std::int64_t p = 0; p < pairs; ++p) {
    for (std::size_t o = 0; o < per_step + 64; o += 64)
      _mm_prefetch(reinterpret_cast<const char*>(next + static_cast<std::size_t>(p) * per_step + o), _MM_HINT_T0);
    const __m512i x = _mm512_loadu_si512(a.lanes.data() + p * 64);
    const __m512 dx = _mm512_loadu_ps(a.d_lanes.data() + p * 16);
    for (int i = 0; i < R; ++i) {
      const std::byte* b0 = w + static_cast<std::size_t>(r + i) * rb + static_cast<std::size_t>(2 * p) * bb;
      const std::byte* b1 = b0 + bb;
      __m512i dot;
      if (f == BlockFormat::q8_0) {
        const __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
        // sum (qx + 128) w - sum 128 w
        dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), x, wq), _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, wq));
      } else {
        const __m256i t = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 2)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2)));
        const __m512i codes = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1), nib);
        // sum c qx - 8 sum qx
        dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, x), _mm512_loadu_si512(a.bias.data() + p * 16));
      }
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dx, pair_scales(b0, b1, second)), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) {
    float s = _mm512_reduce_add_ps(acc[i]);
    if (a.blocks % 2) s += row_blocks(f, w + static_cast<std::size_t>(r + i) * rb, a, a.blocks - 1, a.blocks);
    y[r + i] = s;
  }
}
#endif
}  // namespace detail

// y[n] for rows n in [n0, n1) of a packed weight w (rows of quant::row_bytes(f, k) bytes), x
// quantized by quantize_activation for the same format and k.
inline void gemv(BlockFormat f, const std::byte* w, const QActivation& a, std::int64_t n0, std::int64_t n1, float* y) {
  if (a.format != f) throw Error(ErrorCode::runtime, "activation quantized for another weight format");
  const std::size_t rb = quant::row_bytes(f, a.k);
#if defined(NPUSIM_CPU_VNNI)
  std::int64_t n = n0;
  for (; n + 4 <= n1; n += 4) detail::rows_vnni<4>(f, w, rb, n, a, y);
  for (; n < n1; ++n) detail::rows_vnni<1>(f, w, rb, n, a, y);
#else
  for (std::int64_t n = n0; n < n1; ++n) y[n] = detail::row_blocks(f, w + static_cast<std::size_t>(n) * rb, a, 0, a.blocks);
#endif
}

// The same sums, portably, in the vector path's order of blocks: what the tests hold the vector
// path to (and the path used where the build has no VNNI).
inline void gemv_portable(BlockFormat f, const std::byte* w, const QActivation& a, std::int64_t n0, std::int64_t n1, float* y) {
  const std::size_t rb = quant::row_bytes(f, a.k);
  for (std::int64_t n = n0; n < n1; ++n) y[n] = detail::row_blocks(f, w + static_cast<std::size_t>(n) * rb, a, 0, a.blocks);
}

// ---- the other way: unpack to bf16 ------------------------------------------------------------
// Issue 37 asks for both to be measured: the blocks' codes widened to bf16 (exact: small
// integers; q4_0's by a 16-entry table lookup, vpermw), the activation in bf16 instead of int8,
// one vdpbf16ps per block, then the block's scale. Its meaning is closer to the format's (bf16's
// rounding of x, 2^-9 relative, instead of int8's of the block's max), but it does about twice the
// instructions per weight: bench_ops times it beside the VNNI path (BM_GemvDecodeQ, "bf16 unpack").
// The target binds the VNNI path.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512BF16__)
#define NPUSIM_CPU_QGEMV_BF16 1
struct BActivation {
  std::int64_t k = 0, blocks = 0;
  std::vector<std::uint16_t> x;  // bf16 bits, blocks * 32 (zero-padded)
};
inline void bf16_activation(const float* x, std::int64_t k, BActivation& a) {
  a.k = k;
  a.blocks = quant::blocks_per_row(k);
  a.x.assign(static_cast<std::size_t>(a.blocks * block_values), 0);
  for (std::int64_t j = 0; j < k; ++j) a.x[static_cast<std::size_t>(j)] = f32_to_bf16_bits(x[j]);
}
inline void gemv_bf16_unpack(BlockFormat f, const std::byte* w, const BActivation& a, std::int64_t n0, std::int64_t n1, float* y) {
  const std::size_t bb = quant::block_bytes(f), rb = quant::row_bytes(f, a.k);
  alignas(64) std::uint16_t table[32] = {};
  for (int c = 0; c < 16; ++c) table[c] = f32_to_bf16_bits(static_cast<float>(c - 8));
  const __m512i tab = _mm512_load_si512(table);
  const __m256i nib256 = _mm256_set1_epi8(0x0f);
  for (std::int64_t n = n0; n < n1; ++n) {
    const std::byte* row = w + static_cast<std::size_t>(n) * rb;
    __m512 acc = _mm512_setzero_ps();
    for (std::int64_t b = 0; b < a.blocks; ++b) {
      const std::byte* blk = row + static_cast<std::size_t>(b) * bb;
      // One sequential stream (a row at a time): the line 4 KiB ahead, as an integer address.
      _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(blk) + QGEMV_PREFETCH_BYTES), _MM_HINT_T0);
      const auto xb = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a.x.data() + b * block_values));
      __m512bh wb;
      if (f == BlockFormat::q4_0) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
        const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), nib256);
        wb = reinterpret_cast<__m512bh>(_mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(codes), tab));
      } else {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
        wb = _mm512_cvtne2ps_pbh(hi, lo);
      }
      acc = _mm512_fmadd_ps(_mm512_dpbf16_ps(_mm512_setzero_ps(), wb, xb), _mm512_set1_ps(detail::block_scale(blk)), acc);
    }
    y[n] = _mm512_reduce_add_ps(acc);
  }
}
#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu::qgemv
