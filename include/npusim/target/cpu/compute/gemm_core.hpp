// GEMM building blocks shared by the CPU target's GEMM candidates (compute/gemm/*.hpp) and the
// convolutions: packed weights (PackedB), views of A and C, the epilogue, scratch, the f32
// micro-kernel and the GEMV panels. The candidates and gemm() itself are in compute/gemm.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/target/cpu/compute/amx.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512) && defined(__AVX512BF16__)
#define NPUSIM_CPU_AVX512_BF16 1  // vdpbf16ps: bf16 pair dot products into f32
#endif

// Whether this build has the AVX-512 BF16 dot products (vdpbf16ps). Whether a GEMM or a
// convolution uses them is its candidate list's choice (candidates.hpp; NPUSIM_CPU_SKIP).
inline bool dpbf16_enabled() {
#if defined(NPUSIM_CPU_AVX512_BF16)
  return true;
#else
  return false;
#endif
}

inline constexpr std::int64_t NR = 16;  // columns per panel (one AVX-512 vector of floats)
inline constexpr std::int64_t MR = 6;   // rows per micro-tile
inline constexpr std::int64_t KC = 256; // K block
inline constexpr std::int64_t MC = 192; // M block (rows of A kept hot per B block)

struct AlignedBuf {
  std::shared_ptr<std::byte> p;
  std::size_t bytes = 0;
  static AlignedBuf make(std::size_t n) {
    AlignedBuf b;
    b.bytes = n;
    auto* raw = static_cast<std::byte*>(::operator new(std::max<std::size_t>(n, 64), std::align_val_t(64)));
    b.p = std::shared_ptr<std::byte>(raw, [](std::byte* q) { ::operator delete(q, std::align_val_t(64)); });
    return b;
  }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(p.get());
  }
};

// A weight packed into column panels. `b_is_nk`: the source is [N, K] (linear weights, conv
// weights as [Cout, Cin*kh*kw]); otherwise [K, N] (a matmul's right operand).
//
// bf16 weights use a k-pair layout: panel p, row kk holds B[2kk][16p+j], B[2kk+1][16p+j] for
// j = 0..15 (64 bytes), K padded with zeros to a multiple of 32. That is the B operand layout of
// AMX tile products and of AVX-512 bf16 dot products, and the decode GEMV reads it too.
struct PackedB {
  DType dtype = DType::f32;  // storage of the panels
  std::int64_t K = 0, N = 0, panels = 0;
  std::int64_t Kp = 0;       // K as stored (padded for the pair layout)
  bool pairs = false;
  AlignedBuf data;

  const void* panel(std::int64_t p) const { return data.as<std::byte>() + p * Kp * NR * static_cast<std::int64_t>(dtype_size(dtype)); }
};

inline PackedB pack_b(const void* src, DType dtype, std::int64_t K, std::int64_t N, bool b_is_nk) {
  PackedB b;
  b.dtype = dtype, b.K = K, b.N = N, b.panels = (N + NR - 1) / NR;
  b.pairs = dtype == DType::bf16;
  b.Kp = b.pairs ? (K + 31) / 32 * 32 : K;
  const std::size_t es = dtype_size(dtype);
  b.data = AlignedBuf::make(static_cast<std::size_t>(b.panels * b.Kp * NR) * es);
  std::memset(b.data.p.get(), 0, b.data.bytes);
  // Element-size-specific copies: packing a 1.5B-parameter model must take seconds, not minutes.
  auto pack = [&]<class T>() {
    const T* s = static_cast<const T*>(src);
    T* d = b.data.as<T>();
    parallel_for(b.panels, 8, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t cols = std::min(NR, N - p * NR);
        T* dp = d + p * b.Kp * NR;
        if (b.pairs) {
          for (std::int64_t j = 0; j < cols; ++j)
            for (std::int64_t k = 0; k < K; ++k) dp[((k / 2) * NR + j) * 2 + k % 2] = b_is_nk ? s[(p * NR + j) * K + k] : s[k * N + p * NR + j];
        } else if (b_is_nk) {
          for (std::int64_t j = 0; j < cols; ++j) {
            const T* row = s + (p * NR + j) * K;
            for (std::int64_t k = 0; k < K; ++k) dp[k * NR + j] = row[k];
          }
        } else {
          for (std::int64_t k = 0; k < K; ++k) std::memcpy(dp + k * NR, s + k * N + p * NR, static_cast<std::size_t>(cols) * sizeof(T));
        }
      }
    });
  };
  if (es == 4) pack.template operator()<std::uint32_t>();
  else if (es == 2) pack.template operator()<std::uint16_t>();
  else throw Error(ErrorCode::dtype, "packed weights must be f32, f16 or bf16", {.found = std::string(dtype_name(dtype))});
  return b;
}

// How A is laid out: row-major [M][lda] (linear), or K-major [K][lda] (conv's im2col).
struct AView {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t ld = 0;
  bool k_major = false;
};

// How C is written: row-major [M][ldc], or transposed [N][ldc] (NCHW conv output, m = pixel).
struct CView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t ld = 0;
  bool transposed = false;
};

struct Epilogue {
  const float* bias = nullptr;  // per column n (f32)
  bool relu = false;
};

namespace gemm_detail {

// Packs A into 6-row strips: strip s holds, for every k, A[6s..6s+5][k] (zero rows past M).
inline void pack_a(const AView& a, std::int64_t M, std::int64_t K, float* dst) {
  const std::int64_t strips = (M + MR - 1) / MR;
  parallel_for(strips, 4, [&](std::int64_t s0, std::int64_t s1) {
    visit_float_storage(a.dtype, [&](auto tag) {
      using T = typename decltype(tag)::T;
      const T* p = static_cast<const T*>(a.data);
      for (std::int64_t s = s0; s < s1; ++s) {
        float* out = dst + s * K * MR;
        const std::int64_t m0 = s * MR, rows = std::min(MR, M - m0);
        if (a.k_major) {
          // Row k of A^T holds the strip's 6 values contiguously.
          for (std::int64_t k = 0; k < K; ++k) {
            const T* src = p + k * a.ld + m0;
            for (std::int64_t r = 0; r < rows; ++r) out[k * MR + r] = to_f32(tag, src[r]);
            for (std::int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
          }
        } else {
          for (std::int64_t r = 0; r < MR; ++r) {
            if (r >= rows) {
              for (std::int64_t k = 0; k < K; ++k) out[k * MR + r] = 0.0f;
              continue;
            }
            const T* src = p + (m0 + r) * a.ld;
            for (std::int64_t k = 0; k < K; ++k) out[k * MR + r] = to_f32(tag, src[k]);
          }
        }
      }
    });
  });
}

// Widens kc rows of a B panel (any storage) into f32 [kc][NR]; `p` points at row k0.
template <class S>
inline void widen_panel(const typename S::T* p, std::int64_t kc, float* dst) {
  for (std::int64_t i = 0; i < kc * NR; i += static_cast<std::int64_t>(W)) store(SF32{}, dst + i, load(S{}, p + i));
}
// The same from the bf16 k-pair layout (k0 even): pair row kk -> f32 rows 2kk, 2kk+1.
inline void widen_pairs(const std::uint16_t* p, std::int64_t kc, float* dst) {
  for (std::int64_t k = 0; k < kc; ++k)
    for (std::int64_t j = 0; j < NR; ++j) dst[k * NR + j] = bf16_bits_to_f32(p[((k / 2) * NR + j) * 2 + k % 2]);
}

// acc[6][NP panels] += A strip (kc x 6) * B (kc x 16*NP); C (f32, row stride ldc) is written or
// accumulated. Everything is a compile-time constant so the accumulators stay in registers.
template <int NP>
inline void micro(const float* a, const float* b, std::int64_t kc, float* c, std::int64_t ldc, std::int64_t rows, bool accumulate) {
  constexpr int V = static_cast<int>(W), VP = static_cast<int>(NR) / V, NV = NP * VP;
  fbatch acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = fbatch(0.0f);
  for (std::int64_t k = 0; k < kc; ++k) {
    fbatch bv[NV];
    for (int p = 0; p < NP; ++p)
      for (int v = 0; v < VP; ++v) bv[p * VP + v] = fbatch::load_aligned(b + p * KC * NR + k * NR + v * V);
    for (int r = 0; r < MR; ++r) {
      const fbatch av(a[k * MR + r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(av, bv[v], acc[r][v]);
    }
  }
  for (std::int64_t r = 0; r < rows; ++r)
    for (int v = 0; v < NV; ++v) {
      float* dst = c + r * ldc + v * V;
      if (accumulate) (acc[r][v] + fbatch::load_unaligned(dst)).store_unaligned(dst);
      else acc[r][v].store_unaligned(dst);
    }
}

// The decode GEMVs stream a thread's panels as one sequential run of weights from DRAM. The
// hardware prefetchers alone keep too few lines in flight for that (84-87% of the measured read
// bandwidth over a Qwen2.5-1.5B decode step); asking for the line 4 KiB ahead brings it to 95-101%
// (docs/benchmarks.md). Past the end of a range it touches at most 4 KiB of the next one.
inline constexpr std::size_t GEMV_PREFETCH_BYTES = 4096;
inline void prefetch_ahead(const void* p) {
  // Formed as an integer: the address may lie past the end of the weights (a prefetch never faults).
  const auto* at = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) + GEMV_PREFETCH_BYTES);
#if defined(__x86_64__) || defined(__i386__)
  _mm_prefetch(at, _MM_HINT_T0);
#else
  __builtin_prefetch(at);
#endif
}

// Few-row product: streams each weight panel once, keeping the M <= 4 rows of A in f32.
template <class S>
inline void gemv_panels(const float* a, std::int64_t M, std::int64_t K, const PackedB& b, std::int64_t p0, std::int64_t p1, float* c, std::int64_t ldc) {
  constexpr std::int64_t V = static_cast<std::int64_t>(W), VP = NR / V;
  for (std::int64_t p = p0; p < p1; ++p) {
    const auto* bp = static_cast<const typename S::T*>(b.panel(p));
    fbatch acc[4][VP][2];
    for (auto& x : acc)
      for (auto& y : x) y[0] = y[1] = fbatch(0.0f);
    std::int64_t k = 0;
    // Two independent accumulator chains per row hide the FMA latency.
    constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(typename S::T));  // elements per cache line
    for (; k + 1 < K; k += 2) {
      for (std::int64_t e = 0; e < 2 * NR; e += line) prefetch_ahead(bp + k * NR + e);
      for (std::int64_t v = 0; v < VP; ++v) {
        fbatch w0 = load(S{}, bp + k * NR + v * V), w1 = load(S{}, bp + (k + 1) * NR + v * V);
        for (std::int64_t m = 0; m < M; ++m) {
          acc[m][v][0] = xsimd::fma(fbatch(a[m * K + k]), w0, acc[m][v][0]);
          acc[m][v][1] = xsimd::fma(fbatch(a[m * K + k + 1]), w1, acc[m][v][1]);
        }
      }
    }
    for (; k < K; ++k)
      for (std::int64_t v = 0; v < VP; ++v) {
        fbatch w0 = load(S{}, bp + k * NR + v * V);
        for (std::int64_t m = 0; m < M; ++m) acc[m][v][0] = xsimd::fma(fbatch(a[m * K + k]), w0, acc[m][v][0]);
      }
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t v = 0; v < VP; ++v) (acc[m][v][0] + acc[m][v][1]).store_unaligned(c + m * ldc + p * NR + v * V);
  }
}

// Few-row product from the bf16 k-pair layout: one 64-byte load gives 16 columns for k and k+1.
inline void gemv_pairs(const float* a, std::int64_t M, std::int64_t K, const PackedB& b, std::int64_t p0, std::int64_t p1, float* c, std::int64_t ldc) {
#if defined(NPUSIM_CPU_AVX512)
  for (std::int64_t p = p0; p < p1; ++p) {
    const auto* bp = static_cast<const std::uint16_t*>(b.panel(p));
    __m512 acc[4][2];
    for (auto& x : acc) x[0] = x[1] = _mm512_setzero_ps();
    const __m512i hi = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    for (std::int64_t kk = 0; kk < K / 2; ++kk) {
      prefetch_ahead(bp + kk * 2 * NR);
      const __m512i v = _mm512_loadu_si512(bp + kk * 2 * NR);
      const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), odd = _mm512_castsi512_ps(_mm512_and_si512(v, hi));
      for (std::int64_t m = 0; m < M; ++m) {
        acc[m][0] = _mm512_fmadd_ps(_mm512_set1_ps(a[m * K + 2 * kk]), even, acc[m][0]);
        acc[m][1] = _mm512_fmadd_ps(_mm512_set1_ps(a[m * K + 2 * kk + 1]), odd, acc[m][1]);
      }
    }
    for (std::int64_t m = 0; m < M; ++m) {
      __m512 r = _mm512_add_ps(acc[m][0], acc[m][1]);
      if (K % 2) r = _mm512_fmadd_ps(_mm512_set1_ps(a[m * K + K - 1]), _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(bp + (K / 2) * 2 * NR), 16)), r);
      _mm512_storeu_ps(c + m * ldc + p * NR, r);
    }
  }
#else
  for (std::int64_t p = p0; p < p1; ++p) {
    const auto* bp = static_cast<const std::uint16_t*>(b.panel(p));
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t j = 0; j < NR; ++j) {
        float s = 0;
        for (std::int64_t k = 0; k < K; ++k) s += a[m * K + k] * bf16_bits_to_f32(bp[((k / 2) * NR + j) * 2 + k % 2]);
        c[m * ldc + p * NR + j] = s;
      }
  }
#endif
}

}  // namespace gemm_detail

// Scratch layout of one GEMM call (carved from a shared pool at run time).
struct GemmScratch {
  std::int64_t M = 0, K = 0, N = 0;
  std::size_t a_bytes = 0, b_bytes = 0, cb_bytes = 0, c_bytes = 0;
  static GemmScratch layout(std::int64_t M, std::int64_t K, std::int64_t N) {
    GemmScratch s{M, K, N};
    auto up = [](std::size_t b) { return (b + 63) / 64 * 64; };
    s.a_bytes = up(std::max({static_cast<std::size_t>(((M + MR - 1) / MR) * MR * K) * 4,                 // packed f32 strips
                             static_cast<std::size_t>(((M + 31) / 32 * 32) * ((K + 31) / 32 * 32)) * 2,  // padded bf16 rows (AMX)
                             static_cast<std::size_t>(((M + 11) / 12 * 12) * ((K + 1) / 2)) * 4}));       // bf16 k-pair tiles (dpbf16)
    s.b_bytes = up(static_cast<std::size_t>(KC * 2 * NR) * 4);
    s.cb_bytes = up(static_cast<std::size_t>(MC * 2 * NR) * 4);
    s.c_bytes = M <= 4 ? up(static_cast<std::size_t>(M * ((N + NR - 1) / NR) * NR) * 4) : 0;
    return s;
  }
  std::size_t bytes() const { return a_bytes + c_bytes + static_cast<std::size_t>(max_threads()) * (b_bytes + cb_bytes); }
  // Pointers into `base` (64-byte aligned).
  float* a(std::byte* base) const { return reinterpret_cast<float*>(base); }
  float* c(std::byte* base) const { return reinterpret_cast<float*>(base + a_bytes); }
  float* bblk(std::byte* base, int t) const { return reinterpret_cast<float*>(base + a_bytes + c_bytes + static_cast<std::size_t>(t) * (b_bytes + cb_bytes)); }
  float* cblk(std::byte* base, int t) const { return bblk(base, t) + b_bytes / 4; }
};

// Column panels p = 2q and p + 1 of a bf16 k-pair B (the second repeats the first when p is the
// last panel): the unit of work of the bf16 tile kernels, and the C columns it covers.
struct PanelPair {
  const std::uint16_t *b0, *b1;
  std::int64_t n0, cols;
  PanelPair(const PackedB& b, std::int64_t q) {
    const std::int64_t p = 2 * q;
    const bool two = p + 1 < b.panels;
    b0 = static_cast<const std::uint16_t*>(b.panel(p));
    b1 = two ? static_cast<const std::uint16_t*>(b.panel(p + 1)) : b0;
    n0 = p * NR, cols = std::min(b.N, (p + (two ? 2 : 1)) * NR) - n0;
  }
};

// Writes f32 results (rows x cols at src, row stride lds) into C with bias/relu and conversion.
inline void write_c(const float* src, std::int64_t lds, std::int64_t m0, std::int64_t rows, std::int64_t n0, std::int64_t cols, const CView& c,
                    const Epilogue& ep) {
  thread_local std::vector<float> tmp;
  tmp.resize(static_cast<std::size_t>(std::max(cols, rows)));
  const std::size_t es = dtype_size(c.dtype);
  if (!c.transposed) {
    constexpr auto V = static_cast<std::int64_t>(W);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* s = src + r * lds;
      std::int64_t j = 0;
      for (; j + V <= cols; j += V) {
        fbatch v = fbatch::load_unaligned(s + j);
        if (ep.bias) v += fbatch::load_unaligned(ep.bias + n0 + j);
        if (ep.relu) v = xsimd::select(v < fbatch(0.0f), fbatch(0.0f), v);
        v.store_unaligned(tmp.data() + j);
      }
      for (; j < cols; ++j) {
        const float v = s[j] + (ep.bias ? ep.bias[n0 + j] : 0.0f);
        tmp[static_cast<std::size_t>(j)] = ep.relu && v < 0.0f ? 0.0f : v;
      }
      store_row(c.dtype, tmp.data(), static_cast<std::byte*>(c.data) + static_cast<std::size_t>((m0 + r) * c.ld + n0) * es, cols);
    }
  } else {
    // NCHW: column j of the tile is `rows` consecutive pixels of channel n0 + j.
    for (std::int64_t j = 0; j < cols; ++j) {
      const float b = ep.bias ? ep.bias[n0 + j] : 0.0f;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float v = src[r * lds + j] + b;
        tmp[static_cast<std::size_t>(r)] = ep.relu && v < 0.0f ? 0.0f : v;
      }
      store_row(c.dtype, tmp.data(), static_cast<std::byte*>(c.data) + static_cast<std::size_t>((n0 + j) * c.ld + m0) * es, rows);
    }
  }
}

// What decides a GEMM's candidate (gemm_candidates): rows, the activations' and weights' types.
struct GemmProblem {
  std::int64_t M = 0;
  DType a = DType::f32, w = DType::f32;
  bool pairs = false;    // weights packed as bf16 pairs (bf16 weights)
  bool k_major = false;  // A read down its columns (a transposed operand)
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
