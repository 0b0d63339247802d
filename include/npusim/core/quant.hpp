// Quantized numbers, the representation both quantization issues share (docs/quantization.md):
//  - block formats for weights read by matrix products (LLM weights in 8 and 4 bits): q8_0 and
//    q4_0, byte for byte GGML's block_q8_0 and block_q4_0, rows of blocks of 32 values, each block
//    an f16 scale and its codes;
//  - affine int8 (NPU post-training quantization): real = scale * (q - zero_point), and the
//    fixed-point requantization of integer-only inference (TFLite's multiplier and shift), which
//    gives the same integers on every target.
// Reference semantics only: what a quantized value means and how a float becomes one. Kernels
// that compute with them belong to the targets.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "npusim/core/dtype.hpp"
#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI::quant {

// ---- block formats ---------------------------------------------------------------------------

enum class BlockFormat : std::uint8_t { q8_0, q4_0 };

inline constexpr std::int64_t block_values = 32;  // values per block, both formats

// GGML's layouts. q8_0: scale d, then 32 int8 codes; value j = d * qs[j].
// q4_0: scale d, then 16 bytes; byte j holds value j in its low nibble and value j + 16 in its high
// nibble, each a code c in 0..15; value = d * (c - 8).
struct BlockQ8_0 {
  std::uint16_t d;  // f16 bits
  std::int8_t qs[block_values];
};
struct BlockQ4_0 {
  std::uint16_t d;  // f16 bits
  std::uint8_t qs[block_values / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && alignof(BlockQ8_0) == 2 &&
              alignof(BlockQ4_0) == 2);

constexpr std::size_t block_bytes(BlockFormat f) { return f == BlockFormat::q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0); }
constexpr std::int64_t blocks_per_row(std::int64_t k) { return (k + block_values - 1) / block_values; }
// Bytes of one packed row of k values: whole blocks, the last one zero-padded when k is not a
// multiple of 32.
constexpr std::size_t row_bytes(BlockFormat f, std::int64_t k) {
  return static_cast<std::size_t>(blocks_per_row(k)) * block_bytes(f);
}
// Bits read per value of a long row (the bandwidth floor's numerator): 8.5 and 4.5.
constexpr double bits_per_value(BlockFormat f) { return 8.0 * static_cast<double>(block_bytes(f)) / block_values; }

constexpr std::string_view to_string(BlockFormat f) { return f == BlockFormat::q8_0 ? "q8_0" : "q4_0"; }
// "q8"/"q8_0" and "q4"/"q4_0"; nothing else.
inline std::optional<BlockFormat> parse_block_format(std::string_view s) {
  if (s == "q8" || s == "q8_0") return BlockFormat::q8_0;
  if (s == "q4" || s == "q4_0") return BlockFormat::q4_0;
  return std::nullopt;
}

namespace detail {
inline Error bad_value(std::int64_t index, float v) {
  return Error(ErrorCode::weights, "cannot quantize a value that is not finite",
               {.expected = "finite values", .found = std::to_string(v) + " at index " + std::to_string(index)});
}
// GGML's scale, stored as f16: an amax so large that the f16 scale overflows is refused (it would
// turn the whole block into Inf/NaN), never stored.
inline std::uint16_t block_scale_bits(float d, BlockFormat f, float amax) {
  const std::uint16_t bits = f32_to_f16_bits(d);
  if ((bits & 0x7c00u) == 0x7c00u)
    throw Error(ErrorCode::weights, std::string("a block's scale does not fit float16 in ") + std::string(to_string(f)),
                {.expected = "|values| below about " + std::to_string(f == BlockFormat::q8_0 ? 65504.0 * 127 : 65504.0 * 8),
                 .found = "max |value| " + std::to_string(amax)});
  return bits;
}
}  // namespace detail

// Packs one row of x.size() values into row_bytes(f, x.size()) bytes at out, with GGML's
// reference rounding (quantize_row_q8_0_ref / quantize_row_q4_0_ref), so a row packed here is the
// same bytes llama.cpp writes. q8_0: d = max|x| / 127, code = round(x / d) (ties away from zero).
// q4_0: m = the value of largest magnitude (its sign kept), d = m / -8, code = min(15, trunc(x / d
// + 8.5)): m itself is code 0, the full 16 levels are used. The last block's missing values are
// zeros. A NaN or infinite value is an error naming its index.
inline void quantize_row(BlockFormat f, std::span<const float> x, std::byte* out) {
  const auto k = static_cast<std::int64_t>(x.size());
  for (std::int64_t b = 0; b < blocks_per_row(k); ++b) {
    float v[block_values] = {};
    const std::int64_t n = std::min(block_values, k - b * block_values);
    for (std::int64_t j = 0; j < n; ++j) {
      v[j] = x[static_cast<std::size_t>(b * block_values + j)];
      if (!std::isfinite(v[j])) throw detail::bad_value(b * block_values + j, v[j]);
    }
    std::byte* dst = out + static_cast<std::size_t>(b) * block_bytes(f);
    if (f == BlockFormat::q8_0) {
      BlockQ8_0 blk{};
      float amax = 0;
      for (float e : v) amax = std::max(amax, std::fabs(e));
      const float d = amax / 127.0f;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      blk.d = detail::block_scale_bits(d, f, amax);
      for (std::int64_t j = 0; j < block_values; ++j) blk.qs[j] = static_cast<std::int8_t>(std::round(v[j] * id));
      std::memcpy(dst, &blk, sizeof blk);
    } else {
      BlockQ4_0 blk{};
      float amax = 0, m = 0;
      for (float e : v)
        if (amax < std::fabs(e)) amax = std::fabs(e), m = e;
      const float d = m / -8.0f;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      blk.d = detail::block_scale_bits(d, f, amax);
      for (std::int64_t j = 0; j < block_values / 2; ++j) {
        const auto lo = std::min<int>(15, static_cast<std::int8_t>(v[j] * id + 8.5f));
        const auto hi = std::min<int>(15, static_cast<std::int8_t>(v[j + block_values / 2] * id + 8.5f));
        blk.qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
      std::memcpy(dst, &blk, sizeof blk);
    }
  }
}

// The values a packed row stands for: out.size() values (the row's k) from row_bytes(f, k) bytes.
// This is the format's meaning, the reference every kernel that reads packed rows is held to.
inline void dequantize_row(BlockFormat f, const std::byte* in, std::span<float> out) {
  const auto k = static_cast<std::int64_t>(out.size());
  for (std::int64_t b = 0; b < blocks_per_row(k); ++b) {
    const std::byte* src = in + static_cast<std::size_t>(b) * block_bytes(f);
    const std::int64_t n = std::min(block_values, k - b * block_values);
    float* dst = out.data() + b * block_values;
    if (f == BlockFormat::q8_0) {
      BlockQ8_0 blk;
      std::memcpy(&blk, src, sizeof blk);
      const float d = f16_bits_to_f32(blk.d);
      for (std::int64_t j = 0; j < n; ++j) dst[j] = d * static_cast<float>(blk.qs[j]);
    } else {
      BlockQ4_0 blk;
      std::memcpy(&blk, src, sizeof blk);
      const float d = f16_bits_to_f32(blk.d);
      for (std::int64_t j = 0; j < n; ++j) {
        const int byte = blk.qs[j % (block_values / 2)];
        const int code = j < block_values / 2 ? (byte & 0x0f) : (byte >> 4);
        dst[j] = d * static_cast<float>(code - 8);
      }
    }
  }
}

// A block's scale: its first two bytes, f16 (both formats).
inline float block_scale(const std::byte* block) {
  std::uint16_t d;
  std::memcpy(&d, block, sizeof d);
  return f16_bits_to_f32(d);
}

// A packed row's scales must be finite: what a loader checks before a kernel trusts the bytes
// (codes cannot be out of range: every byte is a valid code). Returns the first bad block's index.
inline std::optional<std::int64_t> first_bad_scale(BlockFormat f, const std::byte* in, std::int64_t k) {
  for (std::int64_t b = 0; b < blocks_per_row(k); ++b) {
    std::uint16_t d;
    std::memcpy(&d, in + static_cast<std::size_t>(b) * block_bytes(f), sizeof d);
    if ((d & 0x7c00u) == 0x7c00u) return b;
  }
  return std::nullopt;
}

// ---- affine int8 and fixed-point requantization -----------------------------------------------

// real = scale * (q - zero_point), q in [qmin, qmax].
struct Affine {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  std::int32_t qmin = -128;
  std::int32_t qmax = 127;
};

// Parameters that cover [lo, hi] (widened to hold 0, so that zero is exact: padding and ReLU),
// as PyTorch's MinMaxObserver computes them: scale = (hi - lo) / (qmax - qmin) (at least
// float's epsilon), zero_point = qmin - round_half_even(lo / scale), clamped to [qmin, qmax].
// symmetric: zero_point 0 and scale = max(|lo|, |hi|) / ((qmax - qmin) / 2), as for weights.
inline Affine choose_affine(float lo, float hi, bool symmetric = false, std::int32_t qmin = -128, std::int32_t qmax = 127) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    throw Error(ErrorCode::check, "a quantization range must be finite and ordered",
                {.expected = "finite lo <= hi", .found = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"});
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  Affine a{.scale = 1.0f, .zero_point = 0, .qmin = qmin, .qmax = qmax};
  const float eps = std::numeric_limits<float>::epsilon();
  if (symmetric) {
    const float amax = std::max(-lo, hi);
    a.scale = std::max(amax / (static_cast<float>(qmax - qmin) / 2.0f), eps);
    return a;
  }
  a.scale = std::max((hi - lo) / static_cast<float>(qmax - qmin), eps);
  const auto zp = static_cast<std::int64_t>(qmin) - static_cast<std::int64_t>(std::nearbyint(lo / a.scale));
  a.zero_point = static_cast<std::int32_t>(std::clamp<std::int64_t>(zp, qmin, qmax));
  return a;
}

// q = clamp(zero_point + round_half_even(x * (1 / scale)), qmin, qmax), in float as ATen's
// quantize_val computes it (so that PyTorch's quantized fixtures are matched exactly). NaN is an
// error; +-Inf saturate.
inline std::int32_t quantize(float x, const Affine& a) {
  if (std::isnan(x)) throw Error(ErrorCode::check, "cannot quantize NaN");
  const float r = std::nearbyint(x * (1.0f / a.scale));
  const double q = static_cast<double>(r) + a.zero_point;
  return static_cast<std::int32_t>(std::clamp(q, static_cast<double>(a.qmin), static_cast<double>(a.qmax)));
}
inline float dequantize(std::int32_t q, const Affine& a) { return a.scale * static_cast<float>(q - a.zero_point); }

// A real multiplier M > 0 as multiplier * 2^(shift - 31), multiplier in [2^30, 2^31) (TFLite's
// QuantizeMultiplier): requantizing an int32 accumulator by M is then integer-only. M = 0 is
// (0, 0); a multiplier below 2^-31 (no bit left) is (0, 0) as well. Negative or non-finite M is
// an error.
struct FixedPointMultiplier {
  std::int32_t multiplier = 0;
  int shift = 0;
};

inline FixedPointMultiplier quantize_multiplier(double m) {
  if (!(m >= 0) || !std::isfinite(m))
    throw Error(ErrorCode::check, "a requantization multiplier must be finite and not negative",
                {.found = std::to_string(m)});
  if (m == 0) return {};
  int shift = 0;
  const double q = std::frexp(m, &shift);  // m = q * 2^shift, q in [0.5, 1)
  auto fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(1LL << 31)));
  if (fixed == (1LL << 31)) fixed /= 2, ++shift;
  if (shift < -31) return {};
  if (shift > 30)
    throw Error(ErrorCode::check, "a requantization multiplier is too large for 32-bit fixed point",
                {.expected = "below 2^30", .found = std::to_string(m)});
  return {static_cast<std::int32_t>(fixed), shift};
}

// gemmlowp's SaturatingRoundingDoublingHighMul: a * b / 2^31 rounded to nearest, ties upward
// (+0.5 -> 1, -0.5 -> 0, -1.5 -> -1); the one overflow (INT32_MIN * INT32_MIN) saturates.
constexpr std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  if (a == b && a == std::numeric_limits<std::int32_t>::min()) return std::numeric_limits<std::int32_t>::max();
  const std::int64_t ab = static_cast<std::int64_t>(a) * b;
  const std::int64_t nudge = ab >= 0 ? (1LL << 30) : (1 - (1LL << 30));
  return static_cast<std::int32_t>((ab + nudge) / (1LL << 31));
}

// gemmlowp's RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero.
constexpr std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  const std::int32_t mask = static_cast<std::int32_t>((1LL << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// x * M for M = quantize_multiplier(...): TFLite's MultiplyByQuantizedMultiplier (reference
// kernels, double rounding), the integer result every target must reproduce exactly. Where
// TFLite's left shift would overflow int32 (undefined there), the result saturates.
constexpr std::int32_t multiply_by_quantized_multiplier(std::int32_t x, FixedPointMultiplier m) {
  if (m.shift <= 0) return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m.multiplier), -m.shift);
  // TFLite: SRDHM(x << shift, multiplier), i.e. floor(x * multiplier / 2^(31 - shift) + 1/2), the
  // same integers computed in 64 bits (the product needs 62), then saturated to int32.
  const std::int64_t p = static_cast<std::int64_t>(x) * m.multiplier;
  const int s = 31 - m.shift;  // >= 1: quantize_multiplier keeps shift <= 30
  const std::int64_t r = (p + (std::int64_t{1} << (s - 1))) >> s;
  return static_cast<std::int32_t>(
      std::clamp<std::int64_t>(r, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()));
}

}  // namespace npusim::inline NPUSIM_ABI::quant
