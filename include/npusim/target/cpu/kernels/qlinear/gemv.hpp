// Quantized-linear candidate qlinear_gemv, the generic one: row by row (decode). Each row of x
// quantized per block, then int8 dot products against the blocks (compute/gemv_q.hpp: AVX-512 VNNI
// where the build has it, else its portable loop), the weights streamed once per row.
#pragma once

#include <string>
#include <vector>

#include "npusim/target/cpu/compute/gemv_q.hpp"
#include "npusim/target/cpu/kernels/qlinear/binding.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct QLinearGemv {
  static constexpr std::string_view name = "qlinear_gemv",
                                    what = "q8_0/q4_0 weights, row by row: each row quantized per block, int8 dot products against the blocks (VNNI)";
  static constexpr bool generic = true;
  static bool applies(const QLinearProblem&, std::string*) { return true; }
  static Fn bind(const QLinearBinding& B) {
    struct State {
      qgemv::QActivation act;
      std::vector<float> xrow, yrow;
    };
    auto st = B.c.own(State{});
    st->xrow.resize(static_cast<std::size_t>(B.op.K));
    st->yrow.resize(static_cast<std::size_t>(B.op.N));
    return [st, o = B.op] {
      o.b.refresh();
      for (std::int64_t m = 0; m < o.M; ++m) {
        load_row(o.dx, o.x_row(m), st->xrow.data(), o.K);
        o.naming_node([&] { qgemv::quantize_activation(o.format, st->xrow.data(), o.K, st->act); });
        float* yr = st->yrow.data();
        parallel_for(o.N, 64, [&](std::int64_t lo, std::int64_t hi) { qgemv::gemv(o.format, o.blocks.get(), st->act, lo, hi, yr); });
        write_c(yr, o.N, m, 1, 0, o.N, o.cv, o.ep);  // bias, relu, y's storage type: as the GEMM writes
      }
    };
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
