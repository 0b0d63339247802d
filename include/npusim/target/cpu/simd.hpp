// SIMD helpers for the CPU target (xsimd, built with -march=native): loading f32/bf16/f16 storage
// into float batches and storing back with round-to-nearest-even, plus tail-safe loops. bf16 and
// f16 conversions use the AVX-512/F16C instructions where the build has them, portable code
// otherwise. This is the only place the CPU target touches raw intrinsics besides its GEMM.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "npusim/core/dtype.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// The instruction set the float batches use: xsimd's best for the build flags, except that an
// unoptimised AVX-512BW build (a Debug build with -march=native) uses xsimd's AVX-512F kernels.
// xsimd 8.1's AVX-512BW select for 8- and 16-bit lanes, which its float math (exp, log) reaches,
// does not compile without optimisation: GCC's unoptimised blend intrinsics are macros that cast
// the batch object itself (fixed upstream after 8.1). Optimised builds are unchanged, and the float
// kernels are the AVX-512F ones either way.
#if defined(__AVX512BW__) && !defined(__OPTIMIZE__)
using simd_arch = xsimd::avx512f;
#else
using simd_arch = xsimd::default_arch;
#endif
using fbatch = xsimd::batch<float, simd_arch>;
inline constexpr std::size_t W = fbatch::size;  // floats per vector

// Storage tags for the three float storages.
struct SF32 {
  using T = float;
  static constexpr DType dtype = DType::f32;
};
struct SBf16 {
  using T = std::uint16_t;
  static constexpr DType dtype = DType::bf16;
};
struct SF16 {
  using T = std::uint16_t;
  static constexpr DType dtype = DType::f16;
};

inline float to_f32(SF32, float v) { return v; }
inline float to_f32(SBf16, std::uint16_t v) { return bf16_bits_to_f32(v); }
inline float to_f32(SF16, std::uint16_t v) { return f16_bits_to_f32(v); }
inline float from_f32(SF32, float v) { return v; }
inline std::uint16_t from_f32(SBf16, float v) { return f32_to_bf16_bits(v); }
inline std::uint16_t from_f32(SF16, float v) { return f32_to_f16_bits(v); }

// Loads W values.
inline fbatch load(SF32, const float* p) { return fbatch::load_unaligned(p); }
// The vector width xsimd picked decides which intrinsics apply (AVX-512: 16 floats; AVX2: 8).
#if defined(__AVX512F__)
#define NPUSIM_CPU_AVX512 1
#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define NPUSIM_CPU_MASKED_TAILS 1  // store_n / load_n of a partial vector as one masked access
#endif
#elif defined(__AVX2__) && defined(__F16C__)
#define NPUSIM_CPU_AVX2 1
#endif

inline fbatch load(SBf16, const std::uint16_t* p) {
#if defined(NPUSIM_CPU_AVX512)
  __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
  return fbatch(_mm512_castsi512_ps(v));
#elif defined(NPUSIM_CPU_AVX2)
  __m256i v = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
  return fbatch(_mm256_castsi256_ps(v));
#else
  alignas(64) float tmp[W];
  for (std::size_t i = 0; i < W; ++i) tmp[i] = bf16_bits_to_f32(p[i]);
  return fbatch::load_aligned(tmp);
#endif
}
inline fbatch load(SF16, const std::uint16_t* p) {
#if defined(NPUSIM_CPU_AVX512)
  return fbatch(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif defined(NPUSIM_CPU_AVX2)
  return fbatch(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  alignas(64) float tmp[W];
  for (std::size_t i = 0; i < W; ++i) tmp[i] = f16_bits_to_f32(p[i]);
  return fbatch::load_aligned(tmp);
#endif
}

inline void store(SF32, float* p, fbatch v) { v.store_unaligned(p); }
#if defined(NPUSIM_CPU_AVX512)
// 16 floats to bf16 bits, rounded to nearest even (add 0x7fff + lsb), NaNs kept quiet.
inline __m256i bf16_bits(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
}
#endif
inline void store(SBf16, std::uint16_t* p, fbatch v) {
#if defined(NPUSIM_CPU_AVX512)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_bits(v));
#else
  alignas(64) float tmp[W];
  v.store_aligned(tmp);
  for (std::size_t i = 0; i < W; ++i) p[i] = f32_to_bf16_bits(tmp[i]);
#endif
}
inline void store(SF16, std::uint16_t* p, fbatch v) {
#if defined(NPUSIM_CPU_AVX512)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(NPUSIM_CPU_AVX2)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  alignas(64) float tmp[W];
  v.store_aligned(tmp);
  for (std::size_t i = 0; i < W; ++i) p[i] = f32_to_f16_bits(tmp[i]);
#endif
}

// Stores the first n lanes of v (all of them when n >= W; none when n <= 0).
template <class S>
inline void store_n(S, typename S::T* p, fbatch v, std::int64_t n) {
  if (n >= static_cast<std::int64_t>(W)) {
    store(S{}, p, v);
    return;
  }
#if defined(NPUSIM_CPU_MASKED_TAILS)
  // Masked-off lanes are not written.
  if (n <= 0) return;
  const auto m = static_cast<__mmask16>((1u << n) - 1);
  if constexpr (std::is_same_v<S, SF32>) _mm512_mask_storeu_ps(p, m, v);
  else if constexpr (std::is_same_v<S, SBf16>) _mm256_mask_storeu_epi16(p, m, bf16_bits(v));
  else _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  alignas(64) float t[W];
  v.store_aligned(t);
  for (std::int64_t j = 0; j < n; ++j) p[j] = from_f32(S{}, t[j]);
#endif
}

// Loads the first n values (all W when n >= W), the other lanes zero.
template <class S>
inline fbatch load_n(S, const typename S::T* p, std::int64_t n) {
  if (n >= static_cast<std::int64_t>(W)) return load(S{}, p);
#if defined(NPUSIM_CPU_MASKED_TAILS)
  // Masked-off lanes are not read.
  if (n <= 0) return fbatch(0.0f);
  const auto m = static_cast<__mmask16>((1u << n) - 1);
  if constexpr (std::is_same_v<S, SF32>) return fbatch(_mm512_maskz_loadu_ps(m, p));
  else if constexpr (std::is_same_v<S, SBf16>) return fbatch(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16)));
  else return fbatch(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)));
#endif
  alignas(64) float t[W] = {};
  for (std::int64_t j = 0; j < n; ++j) t[j] = to_f32(S{}, p[j]);
  return fbatch::load_aligned(t);
}

// Converts n values between any two float storages (or copies).
template <class From, class To>
inline void convert(const typename From::T* s, typename To::T* d, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + static_cast<std::int64_t>(W) <= n; i += W) store(To{}, d + i, load(From{}, s + i));
  for (; i < n; ++i) d[i] = from_f32(To{}, to_f32(From{}, s[i]));
}

// Calls f(tag) with the storage tag of a float dtype.
template <class F>
decltype(auto) visit_float_storage(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(SF32{});
    case DType::bf16: return f(SBf16{});
    case DType::f16: return f(SF16{});
    default: throw Error(ErrorCode::dtype, "CPU kernel expects f32/bf16/f16 storage", {.found = std::string(dtype_name(t))});
  }
}

// Float buffer <-> any float storage.
inline void load_row(DType t, const void* src, float* dst, std::int64_t n) {
  visit_float_storage(t, [&](auto tag) { convert<decltype(tag), SF32>(static_cast<const typename decltype(tag)::T*>(src), dst, n); });
}
inline void store_row(DType t, const float* src, void* dst, std::int64_t n) {
  visit_float_storage(t, [&](auto tag) { convert<SF32, decltype(tag)>(src, static_cast<typename decltype(tag)::T*>(dst), n); });
}

// Rounds float values in place to what `t` can hold (identity for f32).
inline void round_to_storage(DType t, float* p, std::int64_t n) {
  if (t == DType::bf16) {
    std::int64_t i = 0;
    alignas(64) std::uint16_t tmp[W];
    for (; i + static_cast<std::int64_t>(W) <= n; i += W) store(SBf16{}, tmp, load(SF32{}, p + i)), store(SF32{}, p + i, load(SBf16{}, tmp));
    for (; i < n; ++i) p[i] = round_to(t, p[i]);
  } else if (t == DType::f16) {
    std::int64_t i = 0;
    alignas(64) std::uint16_t tmp[W];
    for (; i + static_cast<std::int64_t>(W) <= n; i += W) store(SF16{}, tmp, load(SF32{}, p + i)), store(SF32{}, p + i, load(SF16{}, tmp));
    for (; i < n; ++i) p[i] = round_to(t, p[i]);
  }
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
