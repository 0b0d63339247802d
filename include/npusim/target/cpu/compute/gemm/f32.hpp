// GEMM candidate gemm_f32, the generic one: A packed into 6-row f32 strips, the weights' panels
// widened per K block, the 6 x 32 f32 micro-kernel (any dtype, any CPU).
#pragma once

#include <algorithm>
#include <string>

#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/gemm_core.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct GemmF32 {
  static constexpr std::string_view name = "gemm_f32", what = "f32 micro-kernel on widened panels (any dtype, any CPU)";
  static constexpr bool generic = true;
  static bool applies(const GemmProblem&, std::string*) { return true; }
  static void run(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
    const std::int64_t K = b.K, N = b.N;
    float* ap = s.a(scratch);
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
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
