// Quantized-linear candidate qlinear_gemm: more than 4 rows (prefill). The rows of x quantized per
// block, then the block GEMM over the packed rows (compute/gemm_q.hpp: AVX-512 VNNI panels of 16
// rows where the build has VNNI, else its portable loop, the same sums bit for bit).
#pragma once

#include <string>

#include "npusim/target/cpu/compute/gemm_q.hpp"
#include "npusim/target/cpu/kernels/qlinear/binding.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct QLinearGemm {
  static constexpr std::string_view name = "qlinear_gemm",
                                    what = "q8_0/q4_0 weights, more than 4 rows: x quantized per block, then the block GEMM (VNNI panels of 16 rows)";
  static constexpr bool generic = false;
  static bool applies(const QLinearProblem& p, std::string* why) {
    return p.M > 4 || decline(why, [&] { return std::to_string(p.M) + " rows: at most 4 (the GEMV reads each block once per row)"; });
  }
  static Fn bind(const QLinearBinding& B) {
    auto pool = B.c.need_scratch(qgemm::QRows::bytes(B.op.M, B.op.K));
    return [pool, o = B.op] {
      o.b.refresh();
      const auto rows = qgemm::QRows::in(o.format, o.M, o.K, pool->get());
      o.naming_node([&] {
        parallel_for(o.M, 4, [&](std::int64_t lo, std::int64_t hi) {
          qgemm::quantize_rows(rows, lo, hi, [&](std::int64_t m, float* dst) { load_row(o.dx, o.x_row(m), dst, o.K); });
        });
      });
      parallel_for(qgemm::panels(o.N), 4, [&](std::int64_t g0, std::int64_t g1) {
        qgemm::gemm(o.blocks.get(), o.N, rows, g0, g1, [&](std::int64_t m0, int r, std::int64_t n0, std::int64_t cols, const float* out, std::int64_t ld) {
          write_c(out, ld, m0, r, n0, cols, o.cv, o.ep);
        });
      });
    };
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
