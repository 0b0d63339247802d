// GEMM candidate gemm_dpbf16: bf16 x bf16 on AVX-512 BF16 dot products (vdpbf16ps), 12 x 32 tiles.
#pragma once

#include <array>
#include <string>
#include <utility>

#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/gemm/amx.hpp"  // gemm_bf16_rows
#include "npusim/target/cpu/compute/gemm_core.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

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

struct GemmDpbf16 {
  static constexpr std::string_view name = "gemm_dpbf16", what = "bf16 on AVX-512 BF16 dot products";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const GemmProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AVX512_BF16)
    return gemm_bf16_rows(p, why);
#else
    return decline(why, "not built with AVX-512 BF16 (the compiler's target has no -mavx512bf16)");
#endif
  }
#if defined(NPUSIM_CPU_AVX512_BF16)
  static void run(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) { dpbf16_gemm(a, M, b, c, ep, s, scratch); }
#else
  // Never chosen in this build (applies declines); the chooser's table still names it.
  static void run(const AView&, std::int64_t, const PackedB&, const CView&, const Epilogue&, const GemmScratch&, std::byte*) {
    throw Error(ErrorCode::unsupported, "gemm_dpbf16 chosen in a build without it (npusim bug)");
  }
#endif
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
