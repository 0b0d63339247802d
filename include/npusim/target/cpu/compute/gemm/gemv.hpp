// GEMM candidate gemm_gemv: at most 4 rows (decode). A as plain f32 rows; every thread streams its
// own weight panels, so each weight byte is read once per call at memory speed.
#pragma once

#include <algorithm>
#include <string>

#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/gemm_core.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct GemmGemv {
  static constexpr std::string_view name = "gemm_gemv", what = "at most 4 rows (decode): weight streaming, every thread its own panels";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    return p.M <= 4 || decline(why, [&] { return std::to_string(p.M) + " rows: more than 4"; });
  }
  static void run(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
    const std::int64_t K = b.K, N = b.N;
    float* ap = s.a(scratch);
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
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
