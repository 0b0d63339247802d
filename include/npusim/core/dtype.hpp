// Element types: the runtime DType enum (what a tensor holds), the compile-time tags F32/F16/Bf16
// (what a Pipeline computes in), and round-to-nearest-even conversions through Eigen's half types.
#pragma once

#include <Eigen/Core>
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
using half_t = Eigen::half;
using bfloat16_t = Eigen::bfloat16;

inline std::uint16_t f32_to_f16_bits(float x) { return Eigen::numext::bit_cast<std::uint16_t>(half_t(x)); }
inline float f16_bits_to_f32(std::uint16_t b) { return static_cast<float>(Eigen::numext::bit_cast<half_t>(b)); }
inline std::uint16_t f32_to_bf16_bits(float x) { return Eigen::numext::bit_cast<std::uint16_t>(bfloat16_t(x)); }
inline float bf16_bits_to_f32(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
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
