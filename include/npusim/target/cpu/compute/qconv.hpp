// Affine int8 convolutions and matrix products on the CPU target (ops::QConv2d, ops::QLinear):
// an indirect GEMM over int8 codes, exact in int32, requantized as core/quant.hpp defines.
//
// The activation is copied once per run into a padded image, channels last (C bytes a pixel, no
// channel padding), holding x + 128 as unsigned bytes and the input's zero point (+ 128: the
// value 0) in the border. A convolution without horizontal dilation then reads, for each output
// pixel and kernel row, one run of kw * C contiguous bytes (the kw taps of that row: XNNPACK's
// indirection, with the taps of a row merged), so the GEMM's inner dimension is kw * C rounded up
// to 4 (the extra bytes meet zero weights) and an indirection table made at bind time gives each
// run's offset. The GEMM multiplies these runs by the weights packed per 16 output channels and 4
// inner values, with AVX-512 VNNI's vpdpbusd (unsigned x signed bytes, 64 products per
// instruction) where the build has it, else the same sums in plain integer code. Because the
// activation was offset by 128, each output channel's accumulator starts at
// bias - (zero_point + 128) * sum(w): the sum is then sum((x - zero_point) * w) + bias exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
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
  std::int64_t T = 0;           // runs per output pixel (kernel rows, or every tap with horizontal dilation; 1 for a linear)
  std::int64_t Cb = 0, Cb4 = 0; // bytes of a run, rounded up to 4
  std::vector<std::int8_t> w;   // [K16 / 16][T][Cb4 / 4][16][4]
  std::vector<std::int32_t> start;                 // per channel (K16): bias - (x_zero_point + 128) * sum(w)
  std::vector<quant::FixedPointMultiplier> mult;   // per channel (K16)
  std::int32_t out_zero_point = 0, out_min = -128, out_max = 127;
  bool right_shifts_only = true;  // every multiplier below 1 and every accumulator below 2^30: the vector requantization applies
};

// w_at(k, t, b): the weight that byte b of run t meets for output channel k.
template <class W>
Packed pack(std::int64_t K, std::int64_t T, std::int64_t Cb, W&& w_at, const float* w_scale, const std::int32_t* bias, const ops::QuantOutAttrs& a) {
  Packed p;
  p.K = K, p.K16 = (K + 15) / 16 * 16, p.T = T, p.Cb = Cb, p.Cb4 = (Cb + 3) / 4 * 4;
  p.w.assign(static_cast<std::size_t>(p.K16 * T * p.Cb4), 0);
  p.start.assign(static_cast<std::size_t>(p.K16), 0);
  p.mult.assign(static_cast<std::size_t>(p.K16), {});
  p.out_zero_point = static_cast<std::int32_t>(a.out_zero_point), p.out_min = static_cast<std::int32_t>(a.out_min), p.out_max = static_cast<std::int32_t>(a.out_max);
  const std::int64_t u_zero = a.x_zero_point + 128;
  for (std::int64_t k = 0; k < K; ++k) {
    std::int64_t sum = 0;
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t c = 0; c < Cb; ++c) {
        const std::int8_t v = w_at(k, t, c);
        sum += v;
        p.w[static_cast<std::size_t>((((k / 16) * T + t) * (p.Cb4 / 4) + c / 4) * 64 + (k % 16) * 4 + c % 4)] = v;
      }
    p.start[static_cast<std::size_t>(k)] = static_cast<std::int32_t>((bias ? bias[k] : 0) - u_zero * sum);
    p.mult[static_cast<std::size_t>(k)] = ops::channel_multiplier(a.x_scale, w_scale[k], a.out_scale);
    p.right_shifts_only = p.right_shifts_only && p.mult[static_cast<std::size_t>(k)].shift <= 0;
  }
  // The largest accumulator: |start| + 255 * 128 per byte of the runs (multiply16's |x| < 2^30).
  std::int64_t most = 0;
  for (auto v : p.start) most = std::max<std::int64_t>(most, v < 0 ? -std::int64_t{v} : v);
  if (most + 255 * 128 * T * p.Cb4 >= (std::int64_t{1} << 30)) p.right_shifts_only = false;
  return p;
}

// Where the GEMM reads and writes: `cols` output pixels, each reading T runs at the byte offsets
// `index` ([cols][T]) of the image, outputs at out[k * k_stride + col * col_stride].
struct Problem {
  std::int64_t cols = 0;
  const std::int64_t* index = nullptr;
  std::int64_t k_stride = 0, col_stride = 0;
  bool biased_out = false;  // write code + 128 (unsigned), as channels-last int8 tensors are held
};

// Channels-last int8 tensors between the integer kernels are held biased: code + 128 as an
// unsigned byte (code ^ 0x80), the form the GEMM reads, so a convolution without padding reads
// its input where it lies.
inline constexpr std::uint8_t bias_bit = 0x80;

namespace detail {

inline std::int8_t add_one(const ops::QAddParams& p, std::int8_t a, std::int8_t b, bool biased) {
  const std::uint8_t f = biased ? bias_bit : 0;
  return static_cast<std::int8_t>(p(static_cast<std::int8_t>(a ^ f), static_cast<std::int8_t>(b ^ f)) ^ f);
}

inline std::int8_t requantize_one(const Packed& p, std::int64_t k, std::int32_t acc) {
  return ops::requantize(acc, p.mult[static_cast<std::size_t>(k)], p.out_zero_point, p.out_min, p.out_max);
}

// Plain integer code: the same sums in the same packed layout.
inline void tile_portable(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int64_t ncols,
                          std::int8_t* out) {
  const std::int64_t C4 = p.Cb4, T = p.T;
  for (std::int64_t j = 0; j < ncols; ++j) {
    const std::int64_t* idx = pr.index + (col0 + j) * T;
    std::int32_t acc[16];
    for (int l = 0; l < 16; ++l) acc[l] = p.start[static_cast<std::size_t>(kb * 16 + l)];
    for (std::int64_t t = 0; t < T; ++t) {
      const std::uint8_t* x = rows + idx[t];
      const std::int8_t* w = p.w.data() + ((kb * T + t) * (C4 / 4)) * 64;
      for (std::int64_t c4 = 0; c4 < C4 / 4; ++c4, w += 64)
        for (int l = 0; l < 16; ++l)
          for (int i = 0; i < 4; ++i) acc[l] += static_cast<std::int32_t>(x[c4 * 4 + i]) * static_cast<std::int32_t>(w[l * 4 + i]);
    }
    for (int l = 0; l < 16 && kb * 16 + l < p.K; ++l)
      out[(kb * 16 + l) * pr.k_stride + (col0 + j) * pr.col_stride] =
          static_cast<std::int8_t>(requantize_one(p, kb * 16 + l, acc[l]) ^ (pr.biased_out ? bias_bit : 0));
  }
}

#if defined(NPUSIM_CPU_QCONV_VNNI)
// GCC 12 reports its own intrinsics' _mm512_undefined_epi32() as uninitialized here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// x * M for 16 lanes, M = multiplier * 2^(shift - 31) with shift <= 0, as
// quant::multiply_by_quantized_multiplier computes it, for |x| < 2^30 (the callers' bound). Two
// identities make it short: gemmlowp's SaturatingRoundingDoublingHighMul, (a * b + nudge) / 2^31
// truncated with a nudge of 2^30 or 1 - 2^30 by sign, is floor((a * b + 2^30) / 2^31) (no
// saturation case: the multiplier is positive); and RoundingDivideByPOT(h, e), h / 2^e rounded
// half away from zero, is (h + half - (h < 0 and e > 0)) >> e with half = 2^e / 2 (rounded down),
// which cannot overflow for |h| < 2^30. `mult_odd` is the multipliers shifted right by 32 (the
// odd lanes' operands), `half` and `neg` (1 where e > 0) per lane.
struct Multipliers16 {
  __m512i mult, mult_odd, rshift, half, neg;
  Multipliers16() = default;
  Multipliers16(const std::int32_t* m, const std::int32_t* e) {
    mult = _mm512_loadu_si512(m), mult_odd = _mm512_srli_epi64(mult, 32), rshift = _mm512_loadu_si512(e);
    const __m512i one = _mm512_set1_epi32(1);
    half = _mm512_srli_epi32(_mm512_sllv_epi32(one, rshift), 1);
    neg = _mm512_min_epi32(rshift, one);
  }
};
inline __m512i multiply16(__m512i x, const Multipliers16& m) {
  const __m512i round = _mm512_set1_epi64(1LL << 30);
  const __m512i even = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m.mult), round), 31);
  const __m512i odd = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m.mult_odd), round), 31);
  const __m512i h = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  return _mm512_srav_epi32(_mm512_sub_epi32(_mm512_add_epi32(h, m.half), _mm512_and_si512(_mm512_srli_epi32(h, 31), m.neg)), m.rshift);
}

// The output code of 16 accumulators: x * M + zero point, clamped to [lo, hi].
inline __m512i requantize16(__m512i x, const Multipliers16& m, __m512i zp, __m512i lo, __m512i hi) {
  return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(multiply16(x, m), zp), lo), hi);
}

// MR output pixels x NB * 16 channels, accumulated in registers over T runs of Cb4 bytes.
template <int MR, int NB>
inline void tile_vnni(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int8_t* out,
                      const std::int32_t* mult, const std::int32_t* rshift) {
  const std::int64_t T = p.T, steps = p.Cb4 / 4;
  __m512i acc[NB][MR];
  for (int b = 0; b < NB; ++b) {
    const __m512i s = _mm512_loadu_si512(p.start.data() + (kb + b) * 16);
    for (int j = 0; j < MR; ++j) acc[b][j] = s;
  }
  const std::int64_t* idx = pr.index + col0 * T;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::uint8_t* x[MR];
    for (int j = 0; j < MR; ++j) x[j] = rows + idx[j * T + t];
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
  alignas(64) std::int8_t res[MR][NB * 16];  // [pixel][channel]
  const __m128i flip = _mm_set1_epi8(pr.biased_out ? static_cast<char>(bias_bit) : 0);
  Multipliers16 m16[NB];
  for (int b = 0; b < NB; ++b) m16[b] = Multipliers16(mult + (kb + b) * 16, rshift + (kb + b) * 16);
  for (int j = 0; j < MR; ++j)
    for (int b = 0; b < NB; ++b) {
      const __m512i r = requantize16(acc[b][j], m16[b], zp, lo, hi);
      _mm_store_si128(reinterpret_cast<__m128i*>(res[j] + b * 16), _mm_xor_si128(_mm512_cvtsepi32_epi8(r), flip));
    }
  const std::int64_t kmax = std::min<std::int64_t>(NB * 16, p.K - kb * 16);
  if (pr.k_stride == 1) {  // channels contiguous: a run per pixel
    for (int j = 0; j < MR; ++j) std::memcpy(out + (col0 + j) * pr.col_stride + kb * 16, res[j], static_cast<std::size_t>(kmax));
  } else {  // NCHW: a run of MR pixels per channel
    for (std::int64_t l = 0; l < kmax; ++l) {
      std::int8_t run[MR];
      for (int j = 0; j < MR; ++j) run[j] = res[j][l];
      std::int8_t* o = out + (kb * 16 + l) * pr.k_stride + col0 * pr.col_stride;
      if (pr.col_stride == 1) std::memcpy(o, run, MR);
      else
        for (int j = 0; j < MR; ++j) o[j * pr.col_stride] = run[j];
    }
  }
}

template <int NB, int MR>
inline void tile_vnni_n(const Packed& p, const std::uint8_t* rows, const Problem& pr, std::int64_t kb, std::int64_t col0, std::int64_t ncols,
                        std::int8_t* out, const std::int32_t* mult, const std::int32_t* rshift) {
  if constexpr (MR > 0) {
    if (ncols == MR) return tile_vnni<MR, NB>(p, rows, pr, kb, col0, out, mult, rshift);
    return tile_vnni_n<NB, MR - 1>(p, rows, pr, kb, col0, ncols, out, mult, rshift);
  }
}
// TFLite's int8 add over n elements, 16 at a time (every multiplier below 1, as QAddParams makes them).
inline void add16(const ops::QAddParams& p, const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n, bool biased) {
  const __m128i flip = _mm_set1_epi8(biased ? static_cast<char>(bias_bit) : 0);
  const __m512i ao = _mm512_set1_epi32(p.a_offset), bo = _mm512_set1_epi32(p.b_offset), oo = _mm512_set1_epi32(p.out_offset);
  auto lanes = [](quant::FixedPointMultiplier m) {
    alignas(64) std::int32_t mm[16], ee[16];
    for (int i = 0; i < 16; ++i) mm[i] = m.multiplier, ee[i] = -m.shift;
    return Multipliers16(mm, ee);
  };
  const Multipliers16 am = lanes(p.a_mult), bm = lanes(p.b_mult), om = lanes(p.out_mult);
  const __m512i lo = _mm512_set1_epi32(p.out_min), hi = _mm512_set1_epi32(p.out_max);
  std::int64_t i = 0;
  // |(q - zero point) * 2^20| < 2^28 and the sum of two rescaled ones < 2^29: multiply16's bound holds.
  for (; i + 16 <= n; i += 16) {
    const __m128i qa = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)), flip);
    const __m128i qb = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), flip);
    const __m512i x = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(qa), ao), ops::QAddParams::left_shift);
    const __m512i z = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(qb), bo), ops::QAddParams::left_shift);
    const __m512i sum = _mm512_add_epi32(multiply16(x, am), multiply16(z, bm));
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(multiply16(sum, om), oo), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_xor_si128(_mm512_cvtsepi32_epi8(r), flip));
  }
  for (; i < n; ++i) y[i] = add_one(p, a[i], b[i], biased);
}
#pragma GCC diagnostic pop
#endif

}  // namespace detail

// TFLite's int8 add of n elements: vectorised where the build has AVX-512 VNNI and every
// multiplier of p is below 1 (as they are: inputs by at most 1/2, the output by 2^-20 / ...).
// biased: the three tensors hold code + 128 (channels last).
inline void add(const ops::QAddParams& p, const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n, bool biased) {
#if defined(NPUSIM_CPU_QCONV_VNNI)
  if (p.a_mult.shift <= 0 && p.b_mult.shift <= 0 && p.out_mult.shift <= 0) return detail::add16(p, a, b, y, n, biased);
#endif
  for (std::int64_t i = 0; i < n; ++i) y[i] = detail::add_one(p, a[i], b[i], biased);
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

// A tile: tile_cols output pixels x tile_blocks * 16 channels in 24 accumulators.
#ifndef NPUSIM_QCONV_NB
#define NPUSIM_QCONV_NB 4
#define NPUSIM_QCONV_MR 6
#endif
inline constexpr std::int64_t tile_blocks = NPUSIM_QCONV_NB, tile_cols = NPUSIM_QCONV_MR;

// Runs the GEMM over every output pixel and channel, on the thread pool.
inline void run(const Packed& p, [[maybe_unused]] const VectorParams& vp, const std::uint8_t* rows, const Problem& pr, std::int8_t* out, bool vnni) {
  const std::int64_t col_tiles = (pr.cols + tile_cols - 1) / tile_cols;
  const std::int64_t blocks = p.K16 / 16, groups = (blocks + tile_blocks - 1) / tile_blocks;
  [[maybe_unused]] const bool vec = vnni && p.right_shifts_only;
  parallel_for(groups * col_tiles, 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t it = b; it < e; ++it) {
      const std::int64_t kb = (it / col_tiles) * tile_blocks, col0 = (it % col_tiles) * tile_cols, n = std::min(tile_cols, pr.cols - col0);
      const std::int64_t nb = std::min(tile_blocks, blocks - kb);
#if defined(NPUSIM_CPU_QCONV_VNNI)
      if (vec) {
        [&]<int... B>(std::integer_sequence<int, B...>) {
          ((nb == B + 1 ? detail::tile_vnni_n<B + 1, static_cast<int>(tile_cols)>(p, rows, pr, kb, col0, n, out, vp.mult.data(), vp.rshift.data()) : void()), ...);
        }(std::make_integer_sequence<int, static_cast<int>(tile_blocks)>{});
        continue;
      }
#endif
      for (std::int64_t i = 0; i < nb; ++i) detail::tile_portable(p, rows, pr, kb + i, col0, n, out);
    }
  });
}

// A convolution's geometry on the padded image: Hp x Wp pixels of C bytes, and how the GEMM
// reads it (runs of kw * C bytes, one per kernel row, or one per tap with horizontal dilation).
struct ConvLayout {
  std::int64_t C = 0, H = 0, W = 0, ph = 0, pw = 0, Hp = 0, Wp = 0;
  std::int64_t T = 0, Cb = 0;  // runs per output pixel and bytes per run
  bool merged = true;          // a run covers a kernel row's kw taps
  std::int64_t image_bytes() const { return Hp * Wp * C + 4; }  // + the last run's round-up to 4
  // A biased channels-last input is the image itself: no border, and no run read past its end.
  bool in_place() const { return ph == 0 && pw == 0 && Cb % 4 == 0; }
};

inline ConvLayout conv_layout(std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t kh, std::int64_t kw, const ops::QConv2d::Attrs& a) {
  ConvLayout l;
  l.C = C, l.H = H, l.W = W, l.ph = a.padding[0], l.pw = a.padding[1], l.Hp = H + 2 * l.ph, l.Wp = W + 2 * l.pw;
  l.merged = a.dilation[1] == 1;
  l.T = l.merged ? kh : kh * kw, l.Cb = l.merged ? kw * C : C;
  return l;
}

// Byte offsets of every output pixel's runs ([OH * OW][T]).
inline std::vector<std::int64_t> conv_index(const ConvLayout& l, std::int64_t kh, std::int64_t kw, std::int64_t OH, std::int64_t OW, const ops::QConv2d::Attrs& a) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(OH * OW * l.T));
  std::size_t at = 0;
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow)
      for (std::int64_t i = 0; i < kh; ++i)
        for (std::int64_t j = 0; j < (l.merged ? 1 : kw); ++j)
          idx[at++] = ((oh * a.stride[0] + i * a.dilation[0]) * l.Wp + ow * a.stride[1] + j * a.dilation[1]) * l.C;
  return idx;
}

// The padded image of one image's C channels (x: NCHW planes, or biased NHWC pixels when
// channels_last), x + 128, the border x_zero_point + 128; rows of the padded image in parallel.
inline void to_image(const std::int8_t* x, bool channels_last, const ConvLayout& l, std::int32_t x_zero_point, std::uint8_t* img) {
  const auto zero = static_cast<std::uint8_t>(x_zero_point + 128);
  const std::int64_t C = l.C, H = l.H, W = l.W, Wp = l.Wp, HW = H * W;
  parallel_for(l.Hp, 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      std::uint8_t* dst = img + r * Wp * C;
      const std::int64_t ih = r - l.ph;
      if (ih < 0 || ih >= H) {
        std::memset(dst, zero, static_cast<std::size_t>(Wp * C));
        continue;
      }
      std::memset(dst, zero, static_cast<std::size_t>(l.pw * C));
      std::memset(dst + (l.pw + W) * C, zero, static_cast<std::size_t>((Wp - l.pw - W) * C));
      std::uint8_t* row = dst + l.pw * C;
      if (channels_last) {
        std::memcpy(row, x + ih * W * C, static_cast<std::size_t>(W * C));  // already biased
      } else {
        // A row of W pixels: each plane's W bytes spread over the pixels (the row stays in L1).
        for (std::int64_t c = 0; c < C; ++c) {
          const std::int8_t* src = x + c * HW + ih * W;
          for (std::int64_t w = 0; w < W; ++w) row[w * C + c] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[w]) ^ 0x80u);
        }
      }
    }
  });
  std::memset(img + l.Hp * Wp * C, 0, 4);
}

}  // namespace npusim::inline NPUSIM_ABI::cpu::qconv
