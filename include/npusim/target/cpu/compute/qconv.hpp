// Affine int8 convolutions and matrix products on the CPU target (ops::QConv2d, ops::QLinear):
// an indirect GEMM over int8 codes, exact in int32, requantized as core/quant.hpp defines.
//
// The activation is copied once per run into pixel rows of C4 bytes (channels last, C rounded up
// to 4) holding x + 128 as unsigned bytes, plus one padding row holding the input's zero point
// (+ 128): the value 0. An indirection table, made at bind time, gives for every output pixel
// and kernel tap the row it reads, so a convolution needs no im2col copy (XNNPACK's indirect
// convolution). The GEMM multiplies these rows by the weights packed per 16 output channels and
// 4 input channels, with AVX-512 VNNI's vpdpbusd (unsigned x signed bytes, 64 products per
// instruction) where the build has it, else the same sums in plain integer code. Because the
// activation was offset by 128, each output channel's accumulator starts at
// bias - (zero_point + 128) * sum(w): the sum is then sum((x - zero_point) * w) + bias exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "npusim/ops/quantized.hpp"
#include "npusim/target/cpu/parallel.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define NPUSIM_CPU_QCONV_VNNI 1
#endif

namespace npusim::inline NPUSIM_ABI::cpu::qconv {

inline constexpr bool vnni_available() {
#if defined(NPUSIM_CPU_QCONV_VNNI)
  return true;
#else
  return false;
#endif
}

// Weights and per-channel constants, packed once at bind time.
struct Packed {
  std::int64_t K = 0, K16 = 0;  // output channels, rounded up to 16
  std::int64_t T = 0;           // kernel taps (kh * kw; 1 for a linear)
  std::int64_t C = 0, C4 = 0;   // input channels, rounded up to 4
  std::vector<std::int8_t> w;   // [K16 / 16][T][C4 / 4][16][4]
  std::vector<std::int32_t> start;                 // per channel (K16): bias - (x_zero_point + 128) * sum(w)
  std::vector<quant::FixedPointMultiplier> mult;   // per channel (K16)
  std::int32_t out_zero_point = 0, out_min = -128, out_max = 127;
  bool right_shifts_only = true;  // every multiplier below 1: the vector requantization applies
};

// w: int8 [K][C][T] (a convolution's [Cout, Cin, kh, kw], a linear's [N, K] with T = 1).
inline Packed pack(const std::int8_t* w, std::int64_t K, std::int64_t C, std::int64_t T, const float* w_scale, const std::int32_t* bias,
                   const ops::QuantOutAttrs& a) {
  Packed p;
  p.K = K, p.K16 = (K + 15) / 16 * 16, p.T = T, p.C = C, p.C4 = (C + 3) / 4 * 4;
  p.w.assign(static_cast<std::size_t>(p.K16 * T * p.C4), 0);
  p.start.assign(static_cast<std::size_t>(p.K16), 0);
  p.mult.assign(static_cast<std::size_t>(p.K16), {});
  p.out_zero_point = static_cast<std::int32_t>(a.out_zero_point), p.out_min = static_cast<std::int32_t>(a.out_min), p.out_max = static_cast<std::int32_t>(a.out_max);
  const std::int64_t u_zero = a.x_zero_point + 128;
  for (std::int64_t k = 0; k < K; ++k) {
    std::int64_t sum = 0;
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int8_t v = w[(k * C + c) * T + t];
        sum += v;
        p.w[static_cast<std::size_t>((((k / 16) * T + t) * (p.C4 / 4) + c / 4) * 64 + (k % 16) * 4 + c % 4)] = v;
      }
    p.start[static_cast<std::size_t>(k)] = static_cast<std::int32_t>((bias ? bias[k] : 0) - u_zero * sum);
    p.mult[static_cast<std::size_t>(k)] = ops::channel_multiplier(a.x_scale, w_scale[k], a.out_scale);
    p.right_shifts_only = p.right_shifts_only && p.mult[static_cast<std::size_t>(k)].shift <= 0;
  }
  return p;
}

// Where the GEMM reads and writes: `rows` pixel rows (+ the padding row at index rows), `cols`
// output pixels each reading T rows through `index` ([cols][T]), outputs at
// out[k * k_stride + col * col_stride].
struct Problem {
  std::int64_t cols = 0;
  const std::int32_t* index = nullptr;  // [cols][T] row numbers
  std::int64_t k_stride = 0, col_stride = 0;
};

namespace detail {

inline std::int8_t requantize_one(const Packed& p, std::int64_t k, std::int32_t acc) {
  return ops::requantize(acc, p.mult[static_cast<std::size_t>(k)], p.out_zero_point, p.out_min, p.out_max);
}

// Plain integer code: the same sums in the same packed layout.
inline void tile_portable(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int64_t ncols,
                          std::int8_t* out) {
  const std::int64_t C4 = p.C4, T = p.T;
  for (std::int64_t j = 0; j < ncols; ++j) {
    const std::int32_t* idx = pr.index + (col0 + j) * T;
    std::int32_t acc[16];
    for (int l = 0; l < 16; ++l) acc[l] = p.start[static_cast<std::size_t>(kb * 16 + l)];
    for (std::int64_t t = 0; t < T; ++t) {
      const std::uint8_t* x = rows + static_cast<std::int64_t>(idx[t]) * C4;
      const std::int8_t* w = p.w.data() + ((kb * T + t) * (C4 / 4)) * 64;
      for (std::int64_t c4 = 0; c4 < C4 / 4; ++c4, w += 64)
        for (int l = 0; l < 16; ++l)
          for (int i = 0; i < 4; ++i) acc[l] += static_cast<std::int32_t>(x[c4 * 4 + i]) * static_cast<std::int32_t>(w[l * 4 + i]);
    }
    for (int l = 0; l < 16 && kb * 16 + l < p.K; ++l)
      out[(kb * 16 + l) * pr.k_stride + (col0 + j) * pr.col_stride] = requantize_one(p, kb * 16 + l, acc[l]);
  }
}

#if defined(NPUSIM_CPU_QCONV_VNNI)
// GCC 12 reports its own intrinsics' _mm512_undefined_epi32() as uninitialized here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// x * M for 16 lanes, M = multiplier * 2^(shift - 31) with shift <= 0 (rshift = -shift): gemmlowp's
// SaturatingRoundingDoublingHighMul then RoundingDivideByPOT, as quant::multiply_by_quantized_multiplier.
inline __m512i multiply16(__m512i x, __m512i mult, __m512i rshift) {
  auto high_mul = [](__m512i a, __m512i b) {  // 8 lanes of 64-bit products: (a * b + nudge) / 2^31, truncated
    const __m512i ab = _mm512_mul_epi32(a, b);
    const __mmask8 neg = _mm512_cmplt_epi64_mask(ab, _mm512_setzero_si512());
    const __m512i v = _mm512_add_epi64(ab, _mm512_mask_blend_epi64(neg, _mm512_set1_epi64(1LL << 30), _mm512_set1_epi64(1 - (1LL << 30))));
    __m512i q = _mm512_srai_epi64(v, 31);
    // Division truncates towards zero: a negative quotient with a remainder is one more.
    const __mmask8 fix = _mm512_mask_cmpneq_epi64_mask(_mm512_cmplt_epi64_mask(v, _mm512_setzero_si512()),
                                                      _mm512_and_si512(v, _mm512_set1_epi64((1LL << 31) - 1)), _mm512_setzero_si512());
    return _mm512_mask_add_epi64(q, fix, q, _mm512_set1_epi64(1));
  };
  const __m512i even = high_mul(x, mult);
  const __m512i odd = high_mul(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(mult, 32));
  __m512i h = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, rshift), one);
  const __m512i rem = _mm512_and_si512(h, mask);
  const __m512i thr = _mm512_add_epi32(_mm512_srai_epi32(mask, 1), _mm512_srli_epi32(h, 31));
  h = _mm512_srav_epi32(h, rshift);
  return _mm512_mask_add_epi32(h, _mm512_cmpgt_epi32_mask(rem, thr), h, one);
}

// The output code of 16 accumulators: x * M + zero point, clamped to [lo, hi].
inline __m512i requantize16(__m512i x, __m512i mult, __m512i rshift, __m512i zp, __m512i lo, __m512i hi) {
  __m512i h = multiply16(x, mult, rshift);
  // Far outside int8 either way; clamped first so that adding the zero point cannot overflow.
  h = _mm512_min_epi32(_mm512_max_epi32(h, _mm512_set1_epi32(-(1 << 30))), _mm512_set1_epi32(1 << 30));
  h = _mm512_add_epi32(h, zp);
  return _mm512_min_epi32(_mm512_max_epi32(h, lo), hi);
}

// MR output pixels x NB * 16 channels, accumulated in registers over T taps x C4 channels.
template <int MR, int NB>
inline void tile_vnni(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int8_t* out,
                      const std::int32_t* mult, const std::int32_t* rshift) {
  const std::int64_t C4 = p.C4, T = p.T, steps = C4 / 4;
  __m512i acc[NB][MR];
  for (int b = 0; b < NB; ++b) {
    const __m512i s = _mm512_loadu_si512(p.start.data() + (kb + b) * 16);
    for (int j = 0; j < MR; ++j) acc[b][j] = s;
  }
  const std::int32_t* idx = pr.index + col0 * T;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::uint8_t* x[MR];
    for (int j = 0; j < MR; ++j) x[j] = rows + static_cast<std::int64_t>(idx[j * T + t]) * C4;
    const std::int8_t* w = p.w.data() + ((kb * T + t) * steps) * 64;
    const std::int64_t wnext = T * steps * 64;  // the next 16 channels
    for (std::int64_t s = 0; s < steps; ++s) {
      __m512i wv[NB];
      for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w + b * wnext + s * 64);
      for (int j = 0; j < MR; ++j) {
        std::int32_t v;
        std::memcpy(&v, x[j] + s * 4, 4);
        const __m512i xv = _mm512_set1_epi32(v);
        for (int b = 0; b < NB; ++b) acc[b][j] = _mm512_dpbusd_epi32(acc[b][j], xv, wv[b]);
      }
    }
  }
  const __m512i zp = _mm512_set1_epi32(p.out_zero_point), lo = _mm512_set1_epi32(p.out_min), hi = _mm512_set1_epi32(p.out_max);
  alignas(64) std::int8_t res[NB * 16];
  for (int j = 0; j < MR; ++j) {
    for (int b = 0; b < NB; ++b) {
      const std::int64_t k0 = (kb + b) * 16;
      const __m512i r = requantize16(acc[b][j], _mm512_loadu_si512(mult + k0), _mm512_loadu_si512(rshift + k0), zp, lo, hi);
      _mm_store_si128(reinterpret_cast<__m128i*>(res + b * 16), _mm512_cvtsepi32_epi8(r));
    }
    std::int8_t* o = out + (col0 + j) * pr.col_stride;
    const std::int64_t kmax = std::min<std::int64_t>(NB * 16, p.K - kb * 16);
    if (pr.k_stride == 1) std::memcpy(o + kb * 16, res, static_cast<std::size_t>(kmax));
    else
      for (std::int64_t l = 0; l < kmax; ++l) o[(kb * 16 + l) * pr.k_stride] = res[l];
  }
}

template <int NB, int MR = 12>
inline void tile_vnni_n(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int64_t ncols,
                        std::int8_t* out, const std::int32_t* mult, const std::int32_t* rshift) {
  if constexpr (MR > 0) {
    if (ncols == MR) return tile_vnni<MR, NB>(p, rows, pr, kb, col0, out, mult, rshift);
    return tile_vnni_n<NB, MR - 1>(p, rows, pr, kb, col0, ncols, out, mult, rshift);
  }
}
// TFLite's int8 add over n elements, 16 at a time (every multiplier below 1, as QAddParams makes them).
inline void add16(const ops::QAddParams& p, const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n) {
  const __m512i ao = _mm512_set1_epi32(p.a_offset), bo = _mm512_set1_epi32(p.b_offset), oo = _mm512_set1_epi32(p.out_offset);
  const __m512i am = _mm512_set1_epi32(p.a_mult.multiplier), bm = _mm512_set1_epi32(p.b_mult.multiplier), om = _mm512_set1_epi32(p.out_mult.multiplier);
  const __m512i as = _mm512_set1_epi32(-p.a_mult.shift), bs = _mm512_set1_epi32(-p.b_mult.shift), os = _mm512_set1_epi32(-p.out_mult.shift);
  const __m512i lo = _mm512_set1_epi32(p.out_min), hi = _mm512_set1_epi32(p.out_max);
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))), ao), ops::QAddParams::left_shift);
    const __m512i z = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i))), bo), ops::QAddParams::left_shift);
    const __m512i sum = _mm512_add_epi32(multiply16(x, am, as), multiply16(z, bm, bs));
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(multiply16(sum, om, os), oo), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtsepi32_epi8(r));
  }
  for (; i < n; ++i) y[i] = p(a[i], b[i]);
}
#pragma GCC diagnostic pop
#endif

}  // namespace detail

// TFLite's int8 add of n elements: vectorised where the build has AVX-512 VNNI and every
// multiplier of p is below 1 (as they are: inputs by at most 1/2, the output by 2^-20 / ...).
inline void add(const ops::QAddParams& p, const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n) {
#if defined(NPUSIM_CPU_QCONV_VNNI)
  if (p.a_mult.shift <= 0 && p.b_mult.shift <= 0 && p.out_mult.shift <= 0) return detail::add16(p, a, b, y, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) y[i] = p(a[i], b[i]);
}

// The multipliers split for the vector requantization (lanes of multipliers and right shifts).
struct VectorParams {
  std::vector<std::int32_t> mult, rshift;
};
inline VectorParams vector_params(const Packed& p) {
  VectorParams v;
  for (const auto& m : p.mult) v.mult.push_back(m.multiplier), v.rshift.push_back(-m.shift);
  return v;
}

inline constexpr std::int64_t tile_cols = 12;

// Runs the GEMM over every output pixel and channel, on the thread pool.
inline void run(const Packed& p, const VectorParams& vp, const std::uint8_t* rows, const Problem& pr, std::int8_t* out, bool vnni) {
  const std::int64_t col_tiles = (pr.cols + tile_cols - 1) / tile_cols;
  const std::int64_t pairs = (p.K16 / 16 + 1) / 2;
  [[maybe_unused]] const bool vec = vnni && p.right_shifts_only;
  parallel_for(pairs * col_tiles, 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t it = b; it < e; ++it) {
      const std::int64_t kb = (it / col_tiles) * 2, col0 = (it % col_tiles) * tile_cols, n = std::min(tile_cols, pr.cols - col0);
      const bool two = kb + 1 < p.K16 / 16;
#if defined(NPUSIM_CPU_QCONV_VNNI)
      if (vec) {
        if (two) detail::tile_vnni_n<2>(p, rows, pr, kb, col0, n, out, vp.mult.data(), vp.rshift.data());
        else detail::tile_vnni_n<1>(p, rows, pr, kb, col0, n, out, vp.mult.data(), vp.rshift.data());
        continue;
      }
#endif
      detail::tile_portable(p, rows, pr, kb, col0, n, out);
      if (two) detail::tile_portable(p, rows, pr, kb + 1, col0, n, out);
    }
  });
}

// The convolution's indirection table: for output pixel (oh, ow) and tap (i, j), the input pixel
// row (ih * W + iw), or H * W (the padding row) outside the image.
inline std::vector<std::int32_t> conv_index(std::int64_t H, std::int64_t W, std::int64_t kh, std::int64_t kw, std::int64_t OH, std::int64_t OW,
                                            const ops::QConv2d::Attrs& a) {
  std::vector<std::int32_t> idx(static_cast<std::size_t>(OH * OW * kh * kw));
  std::size_t at = 0;
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow)
      for (std::int64_t i = 0; i < kh; ++i)
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t ih = oh * a.stride[0] - a.padding[0] + i * a.dilation[0], iw = ow * a.stride[1] - a.padding[1] + j * a.dilation[1];
          idx[at++] = static_cast<std::int32_t>(ih >= 0 && ih < H && iw >= 0 && iw < W ? ih * W + iw : H * W);
        }
  return idx;
}

// NCHW int8 (one image's C channels) -> pixel rows of C4 bytes, x + 128, then the padding row
// (x_zero_point + 128). In blocks of 32 pixels, on the thread pool: a block's rows stay in L1
// while every channel's 32 bytes are spread over them (row by row, each store would miss).
inline void to_rows(const std::int8_t* x, std::int64_t C, std::int64_t HW, std::int64_t C4, std::int32_t x_zero_point, std::uint8_t* rows) {
  constexpr std::int64_t P = 32;
  parallel_for((HW + P - 1) / P, 8, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t blk = b; blk < e; ++blk) {
      const std::int64_t i0 = blk * P, n = std::min(P, HW - i0);
      std::uint8_t* dst = rows + i0 * C4;
      if (C4 != C)
        for (std::int64_t j = 0; j < n; ++j) std::memset(dst + j * C4 + C, 0, static_cast<std::size_t>(C4 - C));
      for (std::int64_t c = 0; c < C; ++c) {
        const std::int8_t* src = x + c * HW + i0;
        for (std::int64_t j = 0; j < n; ++j) dst[j * C4 + c] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[j]) ^ 0x80u);
      }
    }
  });
  std::memset(rows + HW * C4, 0, static_cast<std::size_t>(C4));
  for (std::int64_t c = 0; c < C; ++c) rows[HW * C4 + c] = static_cast<std::uint8_t>(x_zero_point + 128);
}

// Channels-last int8 (one image: HW pixels of C channels) -> pixel rows of C4 bytes, x + 128, then
// the padding row.
inline void nhwc_to_rows(const std::int8_t* x, std::int64_t C, std::int64_t HW, std::int64_t C4, std::int32_t x_zero_point, std::uint8_t* rows) {
  parallel_for(HW, 256, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const std::int8_t* src = x + i * C;
      std::uint8_t* dst = rows + i * C4;
      for (std::int64_t c = 0; c < C; ++c) dst[c] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[c]) ^ 0x80u);
      for (std::int64_t c = C; c < C4; ++c) dst[c] = 0;
    }
  });
  std::memset(rows + HW * C4, 0, static_cast<std::size_t>(C4));
  for (std::int64_t c = 0; c < C; ++c) rows[HW * C4 + c] = static_cast<std::uint8_t>(x_zero_point + 128);
}

}  // namespace npusim::inline NPUSIM_ABI::cpu::qconv
