// Element types: the runtime DType enum (what a tensor holds), the compile-time tags F32/F16/Bf16
// (what a Pipeline computes in), the 16-bit storage types half_t and bfloat16_t, and
// round-to-nearest-even conversions between them and float. No third-party header: every npusim
// header includes this one (Eigen's half types cost a TU about 0.5 s of parsing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI {

enum class DType : std::uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

inline constexpr DType all_dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64,
                                       DType::i32, DType::i16, DType::i8,   DType::u8,  DType::boolean};

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64: return 8;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16: return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}
constexpr bool is_integral(DType t) { return !is_floating(t) && t != DType::boolean; }
constexpr bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
// One rule for inputs and weights: a float takes any float type, an integer any integer type,
// a bool only bool; anything else is a different kind of value, never converted silently.
constexpr bool same_dtype_kind(DType a, DType b) { return is_floating(a) == is_floating(b) && (a == DType::boolean) == (b == DType::boolean); }

// The torch_ir spelling ("float32"), which is also what .npubin and our messages use.
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f64: return "float64";
    case DType::i64: return "int64";
    case DType::i32: return "int32";
    case DType::i16: return "int16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "?";
}

// The short spelling used on the command line and in tags ("f32", "bf16").
constexpr std::string_view dtype_short_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::i16: return "i16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::boolean: return "bool";
  }
  return "?";
}

// Safetensors spelling ("F32", "BF16", "I64", "BOOL").
constexpr std::string_view dtype_safetensors_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f64: return "F64";
    case DType::i64: return "I64";
    case DType::i32: return "I32";
    case DType::i16: return "I16";
    case DType::i8: return "I8";
    case DType::u8: return "U8";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

// Accepts both torch_ir spellings ("bfloat16" in tensor metas, "torch.bfloat16" in attrs), the
// safetensors names and our short names. Unknown spellings give nullopt (callers report them).
inline std::optional<DType> parse_dtype(std::string_view s) {
  if (s.starts_with("torch.")) s.remove_prefix(6);
  for (DType t : all_dtypes) {
    if (s == dtype_name(t) || s == dtype_short_name(t) || s == dtype_safetensors_name(t)) return t;
  }
  if (s == "half") return DType::f16;
  if (s == "float") return DType::f32;
  if (s == "double") return DType::f64;
  if (s == "long") return DType::i64;
  if (s == "int") return DType::i32;
  return std::nullopt;
}

inline DType parse_dtype_or_throw(std::string_view s, std::string_view where = {}) {
  if (auto t = parse_dtype(s)) return *t;
  throw Error(ErrorCode::dtype, "unsupported dtype '" + std::string(s) + "'" +
                                    (where.empty() ? std::string() : " in " + std::string(where)),
              {.expected = "one of float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8, bool"});
}

// ---- scalar conversions (round to nearest even) -------------------------------------------------
// The same results as Eigen's half and bfloat16 (tests/unit/core/test_dtype.cpp compares them):
// F16C's conversion instructions where the build has them (Eigen uses them too), otherwise the
// portable bit manipulation Eigen falls back to. NaNs stay NaNs (quiet).
namespace detail {
inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#if defined(__F16C__) && (defined(__GNUC__) || defined(__clang__))
#define NPUSIM_F16C_SCALAR 1
// The compilers' own builtins for VCVTPS2PH / VCVTPH2PS, spelled without <immintrin.h>.
typedef float npusim_v4sf __attribute__((__vector_size__(16)));
typedef short npusim_v8hi __attribute__((__vector_size__(16)));
#endif
}  // namespace detail

inline std::uint16_t f32_to_f16_bits(float x) {
#ifdef NPUSIM_F16C_SCALAR
  const detail::npusim_v8hi h = __builtin_ia32_vcvtps2ph(detail::npusim_v4sf{x, 0.0f, 0.0f, 0.0f}, 0);
  return static_cast<std::uint16_t>(h[0]);
#else
  std::uint32_t u = detail::float_bits(x);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  std::uint16_t o;
  if (u >= 0x47800000u) {  // |x| >= 65536 (rounds to inf), inf or NaN
    o = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < 0x38800000u) {  // the result is subnormal or zero: let the FPU round (RNE)
    const float magic = detail::bits_float(0x3f000000u);  // 0.5: aligns the 10 mantissa bits at the bottom
    o = static_cast<std::uint16_t>(detail::float_bits(detail::bits_float(u) + magic) - 0x3f000000u);
  } else {
    const std::uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd;  // rebias the exponent (15 - 127) and add the rounding bias
    o = static_cast<std::uint16_t>(u >> 13);
  }
  return static_cast<std::uint16_t>(o | (sign >> 16));
#endif
}

inline float f16_bits_to_f32(std::uint16_t b) {
#ifdef NPUSIM_F16C_SCALAR
  const detail::npusim_v4sf f = __builtin_ia32_vcvtph2ps(detail::npusim_v8hi{static_cast<short>(b), 0, 0, 0, 0, 0, 0, 0});
  return f[0];
#else
  std::uint32_t o = static_cast<std::uint32_t>(b & 0x7fffu) << 13;  // exponent and mantissa
  const std::uint32_t exp = o & 0x0f800000u;
  o += 0x38000000u;  // rebias the exponent (127 - 15)
  if (exp == 0x0f800000u) {
    o += 0x38000000u;  // inf or NaN: all exponent bits set
  } else if (exp == 0) {
    o += 0x00800000u;  // zero or subnormal: renormalise through the FPU
    o = detail::float_bits(detail::bits_float(o) - detail::bits_float(0x38800000u));
  }
  return detail::bits_float(o | (static_cast<std::uint32_t>(b & 0x8000u) << 16));
#endif
}

inline std::uint16_t f32_to_bf16_bits(float x) {
  const std::uint32_t u = detail::float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 31) ? 0xffc0 : 0x7fc0;  // NaN: quiet, whatever the payload
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_bits_to_f32(std::uint16_t b) { return detail::bits_float(static_cast<std::uint32_t>(b) << 16); }

// 16-bit float storage: the bits, converted to and from float with the functions above. What
// Tensor::data<half_t>() and data<bfloat16_t>() point at; no arithmetic of their own. Widening to
// float is lossless, so it is implicit (as with Eigen's half types, which these replace).
struct half_t {
  std::uint16_t bits = 0;
  half_t() = default;
  explicit half_t(float f) : bits(f32_to_f16_bits(f)) {}
  operator float() const { return f16_bits_to_f32(bits); }  // NOLINT(google-explicit-constructor): lossless
  static half_t from_bits(std::uint16_t b) {
    half_t h;
    h.bits = b;
    return h;
  }
};
struct bfloat16_t {
  std::uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f) : bits(f32_to_bf16_bits(f)) {}
  operator float() const { return bf16_bits_to_f32(bits); }  // NOLINT(google-explicit-constructor): lossless
  static bfloat16_t from_bits(std::uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};
static_assert(sizeof(half_t) == 2 && sizeof(bfloat16_t) == 2);

// Value of x after a round trip through the given storage type (identity for f32 and wider).
inline float round_to(DType t, float x) {
  switch (t) {
    case DType::f16: return f16_bits_to_f32(f32_to_f16_bits(x));
    case DType::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
    default: return x;
  }
}

// ---- compile-time tags for Pipeline<Target, DType> ----------------------------------------------
struct F32 {
  using storage = float;
  static constexpr DType dtype = DType::f32;
  static constexpr std::string_view name = "f32";
};
struct F16 {
  using storage = half_t;
  static constexpr DType dtype = DType::f16;
  static constexpr std::string_view name = "f16";
};
struct Bf16 {
  using storage = bfloat16_t;
  static constexpr DType dtype = DType::bf16;
  static constexpr std::string_view name = "bf16";
};

template <class T>
concept ComputeTag = requires {
  typename T::storage;
  { T::dtype } -> std::convertible_to<DType>;
};

}  // namespace npusim::inline NPUSIM_ABI
