// Matrix products for the CPU target. C[M, N] = A[M, K] . B[K, N] (+ bias, relu), f32 accumulation.
//
// B is a weight, packed once at load into panels of NR = 16 columns: panel p holds B[k][16p..16p+15]
// for every k, contiguous, in the weight's storage type (f32, f16 or bf16 — widened in registers,
// never stored wider). A (activations, any float storage, row-major or K-major) is packed per call
// into 6-row f32 strips. Each thread owns a range of column panels, so a weight byte is read by one
// thread exactly once per call: for M = 1 (decode) the kernel streams the weights at memory speed.
// The micro-kernel is 6 x 32 (12 accumulator vectors), K blocked by 256. bf16 x bf16 products of
// more than 4 rows use the bf16 hardware instead: AMX tiles where the CPU and OS allow them
// (amx_gemm), else AVX-512 BF16 dot products where the CPU has them (dpbf16_gemm, 12 x 32 tiles).
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/target/cpu/candidates.hpp"
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

#if defined(NPUSIM_CPU_AMX)
// bf16 x bf16 -> f32 on AMX tiles: per thread a range of panel pairs; 32x32 output blocks from
// 2x2 tiles, K in chunks of 32. A is read in place when its rows are already 32-aligned in M
// and K, otherwise from a zero-padded copy.
inline void amx_gemm(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
  const std::int64_t K = b.K, Kp = b.Kp, Mp = (M + 31) / 32 * 32;
  const std::uint16_t* A = static_cast<const std::uint16_t*>(a.data);
  std::int64_t lda = a.ld;
  if (M % 32 || K % 32) {
    auto* pad = reinterpret_cast<std::uint16_t*>(s.a(scratch));
    std::memset(pad, 0, static_cast<std::size_t>(Mp * Kp) * 2);
    for (std::int64_t m = 0; m < M; ++m) std::memcpy(pad + m * Kp, A + m * a.ld, static_cast<std::size_t>(K) * 2);
    A = pad, lda = Kp;
  }
  const std::int64_t pairs = (b.panels + 1) / 2;
  parallel_for_t(pairs, 1, [&](int tid, std::int64_t q0, std::int64_t q1) {
    const int t = tid;
    float* ct = s.cblk(scratch, t);  // 32 x 32 f32
    TileConfig cfg;
    _tile_loadconfig(&cfg);
    for (std::int64_t q = q0; q < q1; ++q) {
      const PanelPair pp(b, q);
      for (std::int64_t m0 = 0; m0 < Mp; m0 += 32) {
        amx_block_32x32(A + m0 * lda, lda, pp.b0, pp.b1, 2 * NR * 2, Kp, ct);
        write_c(ct, 32, m0, std::min<std::int64_t>(32, M - m0), pp.n0, pp.cols, c, ep);
      }
    }
    _tile_release();
  });
}
#endif

#if defined(NPUSIM_CPU_AVX512_BF16)
namespace gemm_detail {

inline constexpr std::int64_t DP_MR = 12;  // rows per micro-tile: 12 x 2 accumulators + 2 weight vectors

// A (bf16 rows) into 12-row tiles of k pairs: tile t holds, for every pair kk, the 32-bit values
// (a[m][2kk], a[m][2kk + 1]) of its rows m = 12t.. (an odd K's last pair has a zero partner; rows
// past M are zero). A micro-tile then reads A as one sequential stream.
inline void pack_a_pairs(const AView& a, std::int64_t M, std::int64_t K, std::uint32_t* dst) {
  const std::int64_t KP = (K + 1) / 2, tiles = (M + DP_MR - 1) / DP_MR;
  const auto* A = static_cast<const std::uint16_t*>(a.data);
  parallel_for(tiles, 1, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      std::uint32_t* out = dst + t * KP * DP_MR;
      for (std::int64_t r = 0; r < DP_MR; ++r) {
        const std::int64_t m = t * DP_MR + r;
        if (m >= M) {
          for (std::int64_t kk = 0; kk < KP; ++kk) out[kk * DP_MR + r] = 0;
          continue;
        }
        const std::uint16_t* row = A + m * a.ld;
        for (std::int64_t kk = 0; kk < K / 2; ++kk) std::memcpy(out + kk * DP_MR + r, row + 2 * kk, 4);
        if (K % 2) out[(K / 2) * DP_MR + r] = row[K - 1];
      }
    }
  });
}

// Rows [0, R) of a packed A tile times the 32 columns of panels b0, b1 (bf16 k-pair layout) over
// KP pairs, into ct (f32, row stride 32). One vdpbf16ps multiplies a k pair of 16 columns by the
// row's pair, broadcast as one 32-bit value, and adds both products into f32.
template <int R>
inline void dp_rows(const std::uint32_t* at, std::int64_t KP, const std::uint16_t* b0, const std::uint16_t* b1, float* ct) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (std::int64_t kk = 0; kk < KP; ++kk, at += DP_MR) {
    const auto w0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b0 + kk * 2 * NR)), w1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b1 + kk * 2 * NR));
    for (int r = 0; r < R; ++r) {
      const auto a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(at[r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, w1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_store_ps(ct + r * 2 * NR, acc[r][0]);
    _mm512_store_ps(ct + r * 2 * NR + NR, acc[r][1]);
  }
}

template <int... R>
constexpr auto dp_rows_table(std::integer_sequence<int, R...>) {
  using Fn = void (*)(const std::uint32_t*, std::int64_t, const std::uint16_t*, const std::uint16_t*, float*);
  return std::array<Fn, sizeof...(R)>{&dp_rows<R + 1>...};
}

}  // namespace gemm_detail

// bf16 x bf16 -> f32 with AVX-512 BF16 dot products (CPUs without AMX, e.g. AMD Zen 4). A is
// packed once into 12-row tiles of k pairs (shared); then per thread a range of panel pairs (each
// weight byte read by one thread), and for each pair the A tiles down M over the whole K, the
// pair's weights staying in L2 meanwhile. vdpbf16ps flushes denormal inputs and outputs to zero
// and rounds to nearest even.
inline void dpbf16_gemm(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
  static constexpr auto rows = gemm_detail::dp_rows_table(std::make_integer_sequence<int, static_cast<int>(gemm_detail::DP_MR)>{});
  const std::int64_t K = b.K, KP = (K + 1) / 2;
  auto* ap = reinterpret_cast<std::uint32_t*>(s.a(scratch));
  gemm_detail::pack_a_pairs(a, M, K, ap);
  const std::int64_t pairs = (b.panels + 1) / 2;
  parallel_for_t(pairs, 1, [&](int tid, std::int64_t q0, std::int64_t q1) {
    float* ct = s.cblk(scratch, tid);  // DP_MR x 32 f32
    for (std::int64_t q = q0; q < q1; ++q) {
      const PanelPair pp(b, q);
      for (std::int64_t m0 = 0; m0 < M; m0 += gemm_detail::DP_MR) {
        const std::int64_t r = std::min(gemm_detail::DP_MR, M - m0);
        rows[static_cast<std::size_t>(r - 1)](ap + (m0 / gemm_detail::DP_MR) * KP * gemm_detail::DP_MR, KP, pp.b0, pp.b1, ct);
        write_c(ct, 2 * NR, m0, r, pp.n0, pp.cols, c, ep);
      }
    }
  });
}
#endif

// What decides a GEMM's candidate (gemm_candidates): rows, the activations' and weights' types.
struct GemmProblem {
  std::int64_t M = 0;
  DType a = DType::f32, w = DType::f32;
  bool pairs = false;    // weights packed as bf16 pairs (bf16 weights)
  bool k_major = false;  // A read down its columns (a transposed operand)
};

// Whether gemm_candidates[i] takes p (why: the reason it declines, when asked).
inline bool gemm_applies(std::size_t i, const GemmProblem& p, std::string* why) {
  const auto name = gemm_candidates[i].name;
  [[maybe_unused]] auto bf16_rows = [&] {
    if (p.a != DType::bf16 || !p.pairs)
      return decline(why, [&] {
        return "needs bf16 activations and weights (found " + std::string(dtype_name(p.a)) + " activations, " + std::string(dtype_name(p.w)) + " weights)";
      });
    if (p.k_major) return decline(why, "needs A read along its rows (this operand is transposed)");
    if (p.M <= 4) return decline(why, [&] { return std::to_string(p.M) + " row(s): at most 4 rows stream the weights once (gemm_gemv)"; });
    return true;
  };
  if (name == "gemm_amx") {
#if defined(NPUSIM_CPU_AMX)
    if (!amx_enabled()) return decline(why, "the OS did not grant the AMX tile state");
    return bf16_rows();
#else
    return decline(why, "not built with AMX-BF16 (the compiler's target has no -mamx-bf16)");
#endif
  }
  if (name == "gemm_dpbf16") {
#if defined(NPUSIM_CPU_AVX512_BF16)
    return bf16_rows();
#else
    return decline(why, "not built with AVX-512 BF16 (the compiler's target has no -mavx512bf16)");
#endif
  }
  if (name == "gemm_gemv") return p.M <= 4 || decline(why, [&] { return std::to_string(p.M) + " rows: more than 4"; });
  return true;
}

// C = A . B (+ epilogue). M rows of A; B packed (K x N). The path is the first of gemm_candidates
// that applies.
inline void gemm(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
  const std::int64_t K = b.K, N = b.N;
  float* ap = s.a(scratch);
  const GemmProblem problem{M, a.dtype, b.dtype, b.pairs, a.k_major};
  const std::string_view path = gemm_candidates[choose(gemm_candidates, [&](std::size_t i, std::string* why) { return gemm_applies(i, problem, why); })].name;
#if defined(NPUSIM_CPU_AMX)
  if (path == "gemm_amx") {
    amx_gemm(a, M, b, c, ep, s, scratch);
    return;
  }
#endif
#if defined(NPUSIM_CPU_AVX512_BF16)
  if (path == "gemm_dpbf16") {
    dpbf16_gemm(a, M, b, c, ep, s, scratch);
    return;
  }
#endif
  if (path == "gemm_gemv") {
    // Few rows (decode): A as plain f32 rows; every thread streams its own panels.
    for (std::int64_t m = 0; m < M; ++m) {
      if (a.k_major) {
        visit_float_storage(a.dtype, [&](auto tag) {
          const auto* p = static_cast<const typename decltype(tag)::T*>(a.data);
          for (std::int64_t k = 0; k < K; ++k) ap[m * K + k] = to_f32(tag, p[k * a.ld + m]);
        });
      } else {
        load_row(a.dtype, static_cast<const std::byte*>(a.data) + static_cast<std::size_t>(m * a.ld) * dtype_size(a.dtype), ap + m * K, K);
      }
    }
    const std::int64_t ldc = b.panels * NR;
    float* cf = s.c(scratch);
    // At least 64 KiB of weights per thread before a second thread is worth waking.
    const std::int64_t min_panels = std::max<std::int64_t>(4, (64 << 10) / std::max<std::int64_t>(1, K * NR * static_cast<std::int64_t>(dtype_size(b.dtype))));
    parallel_for(b.panels, min_panels, [&](std::int64_t p0, std::int64_t p1) {
      if (b.pairs) gemm_detail::gemv_pairs(ap, M, K, b, p0, p1, cf, ldc);
      else visit_float_storage(b.dtype, [&](auto tag) { gemm_detail::gemv_panels<decltype(tag)>(ap, M, K, b, p0, p1, cf, ldc); });
      const std::int64_t n0 = p0 * NR, n1 = std::min(N, p1 * NR);
      write_c(cf + n0, ldc, 0, M, n0, n1 - n0, c, ep);
    });
    return;
  }
  gemm_detail::pack_a(a, M, K, ap);
  const std::int64_t pairs = (b.panels + 1) / 2;
  parallel_for_t(pairs, 1, [&](int tid, std::int64_t q0, std::int64_t q1) {
    const int t = tid;
    float* bb = s.bblk(scratch, t);
    float* cb = s.cblk(scratch, t);
    for (std::int64_t q = q0; q < q1; ++q) {
      const std::int64_t p = 2 * q;
      const bool two = p + 1 < b.panels;
      const std::int64_t n0 = p * NR, cols = std::min(N, (p + (two ? 2 : 1)) * NR) - n0;
      for (std::int64_t m0 = 0; m0 < M; m0 += MC) {
        const std::int64_t mc = std::min(MC, M - m0);
        for (std::int64_t k0 = 0; k0 < K; k0 += KC) {
          const std::int64_t kc = std::min(KC, K - k0);
          if (b.pairs) {
            gemm_detail::widen_pairs(static_cast<const std::uint16_t*>(b.panel(p)) + k0 * NR, kc, bb);
            if (two) gemm_detail::widen_pairs(static_cast<const std::uint16_t*>(b.panel(p + 1)) + k0 * NR, kc, bb + KC * NR);
          } else {
            visit_float_storage(b.dtype, [&](auto tag) {
              using S = decltype(tag);
              const auto* p0 = static_cast<const typename S::T*>(b.panel(p)) + k0 * NR;
              gemm_detail::widen_panel<S>(p0, kc, bb);
              if (two) gemm_detail::widen_panel<S>(static_cast<const typename S::T*>(b.panel(p + 1)) + k0 * NR, kc, bb + KC * NR);
            });
          }
          for (std::int64_t mi = 0; mi < mc; mi += MR) {
            const std::int64_t m = m0 + mi;  // m is a multiple of MR (MC is)
            const float* as = ap + (m / MR) * K * MR + k0 * MR;
            if (two) gemm_detail::micro<2>(as, bb, kc, cb + mi * 2 * NR, 2 * NR, std::min(MR, mc - mi), k0 > 0);
            else gemm_detail::micro<1>(as, bb, kc, cb + mi * 2 * NR, 2 * NR, std::min(MR, mc - mi), k0 > 0);
          }
        }
        write_c(cb, 2 * NR, m0, mc, n0, cols, c, ep);
      }
    }
  });
}

}  // namespace npusim::inline NPUSIM_ABI::cpu

namespace npusim::inline NPUSIM_ABI::cpu {

// ---- convolution GEMM: C[Cout][P] = W[Cout][K] . B[K][P] ----------------------------------------
// The weights are the left operand, packed once at load into 6-row f32 strips (a compute-bound
// path, so widening them once beats widening in every inner loop); B is the im2col matrix (or,
// for 1x1 convolutions, the input itself) read in place, row k holding all P output pixels; C is
// the NCHW output, written row by row with bias and relu. No per-call packing. (The blocked f32
// convolution, conv_f32.hpp, packs its weights the same way in strips of 12 rows.)
struct PackedStrips {
  std::int64_t rows = 0, K = 0, strips = 0, mr = MR;
  AlignedBuf data;  // [strip][K][mr] f32
  const float* strip(std::int64_t s) const { return data.as<float>() + s * K * mr; }
};

inline PackedStrips pack_strips(const void* w, DType dtype, std::int64_t rows, std::int64_t K, std::int64_t mr = MR) {
  PackedStrips p;
  p.rows = rows, p.K = K, p.mr = mr, p.strips = (rows + mr - 1) / mr;
  p.data = AlignedBuf::make(static_cast<std::size_t>(p.strips * K * mr) * 4);
  float* d = p.data.as<float>();
  std::vector<float> row(static_cast<std::size_t>(K));
  for (std::int64_t r = 0; r < p.strips * mr; ++r) {
    if (r < rows) load_row(dtype, static_cast<const std::byte*>(w) + static_cast<std::size_t>(r * K) * dtype_size(dtype), row.data(), K);
    else std::fill(row.begin(), row.end(), 0.0f);
    for (std::int64_t k = 0; k < K; ++k) d[(r / mr) * K * mr + k * mr + r % mr] = row[static_cast<std::size_t>(k)];
  }
  return p;
}

namespace gemm_detail {
// acc[6 rows][NP*16 columns] over all K; B rows at b + k*ldb (storage S, unaligned).
template <int NP, class S>
inline void conv_micro(const float* a, const typename S::T* b, std::int64_t ldb, std::int64_t K, fbatch (&acc)[MR][NP * (NR / W)]) {
  constexpr int V = static_cast<int>(W), NV = NP * static_cast<int>(NR) / V;
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = fbatch(0.0f);
  for (std::int64_t k = 0; k < K; ++k) {
    fbatch bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load(S{}, b + k * ldb + v * V);
    for (int r = 0; r < MR; ++r) {
      const fbatch av(a[k * MR + r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(av, bv[v], acc[r][v]);
    }
  }
}
}  // namespace gemm_detail

// B for conv_gemm, in tiles: tile t holds B[k][32t .. 32t+31] for every k, contiguous f32
// (columns past P are zero). Produced by the im2col/transform pass, so the GEMM reads only
// contiguous memory.
inline constexpr std::int64_t CONV_CB = 2 * NR;
inline std::size_t conv_tiles_bytes(std::int64_t K, std::int64_t P) {
  return static_cast<std::size_t>(((P + CONV_CB - 1) / CONV_CB) * K * CONV_CB) * 4;
}
inline std::size_t conv_gemm_scratch_bytes() { return static_cast<std::size_t>(max_threads()) * (MR * CONV_CB * 4 + 128); }

// One block of 32 output pixels (columns n0 .. n0+cols-1, tile = its B) for strips s0..s1 of
// the weights: C rows written with bias and relu. `tailc` (MR x 32 floats) takes a partial block.
template <class SC>
inline void conv_block(const PackedStrips& a, const float* tile, std::int64_t n0, std::int64_t cols, std::int64_t s0, std::int64_t s1,
                       typename SC::T* C, std::int64_t ldc, const float* bias, bool relu, float* tailc) {
  constexpr int NV = static_cast<int>(CONV_CB / static_cast<std::int64_t>(W));
  for (std::int64_t s = s0; s < s1; ++s) {
    const std::int64_t r0 = s * MR, rows = std::min(MR, a.rows - r0);
    fbatch acc[MR][NV];
    gemm_detail::conv_micro<2, SF32>(a.strip(s), tile, CONV_CB, a.K, acc);
    for (std::int64_t r = 0; r < rows; ++r) {
      const fbatch bb(bias ? bias[r0 + r] : 0.0f);
      for (int v = 0; v < NV; ++v) {
        fbatch x = acc[r][v] + bb;
        if (relu) x = xsimd::max(x, fbatch(0.0f));
        if (cols == CONV_CB) store(SC{}, C + (r0 + r) * ldc + n0 + v * static_cast<std::int64_t>(W), x);
        else x.store_unaligned(tailc + r * CONV_CB + v * static_cast<std::int64_t>(W));
      }
      if (cols != CONV_CB)
        for (std::int64_t j = 0; j < cols; ++j) C[(r0 + r) * ldc + n0 + j] = from_f32(SC{}, tailc[r * CONV_CB + j]);
    }
  }
}

inline void conv_gemm(const PackedStrips& a, const float* tiles, std::int64_t P, void* c, DType cdt, std::int64_t ldc, const float* bias, bool relu,
                      std::byte* scratch) {
  const std::int64_t K = a.K, blocks = (P + CONV_CB - 1) / CONV_CB;
  const std::size_t per_thread = MR * CONV_CB * 4 + 128;
  // Work items: (column block, strip group); small images split the strips instead of the columns.
  const std::int64_t groups = blocks >= 2 * max_threads() ? 1 : std::min<std::int64_t>(a.strips, 2 * max_threads());
  const std::int64_t flops_per_item = 2 * K * CONV_CB * MR * std::max<std::int64_t>(1, a.strips / groups);
  parallel_for_t(blocks * groups, std::max<std::int64_t>(1, (1 << 20) / flops_per_item), [&](int tid, std::int64_t i0, std::int64_t i1) {
    const std::size_t t = static_cast<std::size_t>(tid);
    float* tailc = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(scratch + t * per_thread) + 63) & ~std::uintptr_t{63});
    visit_float_storage(cdt, [&](auto ctag) {
      using SC = decltype(ctag);
      auto* C = static_cast<typename SC::T*>(c);
      for (std::int64_t it = i0; it < i1; ++it) {
        const std::int64_t blk = it / groups, grp = it % groups, n0 = blk * CONV_CB, cols = std::min(CONV_CB, P - n0);
        conv_block<SC>(a, tiles + blk * K * CONV_CB, n0, cols, a.strips * grp / groups, a.strips * (grp + 1) / groups, C, ldc, bias, relu, tailc);
      }
    });
  });
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
