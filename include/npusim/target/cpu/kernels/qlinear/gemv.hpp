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
    const std::int64_t M = B.p.M, N = B.N, K = B.K;
    const quant::BlockFormat f = B.p.format;
    struct State {
      qgemv::QActivation act;
      std::vector<float> xrow, yrow;
    };
    auto st = B.c.own(State{});
    st->xrow.resize(static_cast<std::size_t>(K));
    st->yrow.resize(static_cast<std::size_t>(N));
    return [=, blocks = B.blocks, px = B.px, dx = B.dx, cv = B.cv, b = B.b, ep = Epilogue{B.b.data(), B.relu}, node = B.node] {
      b.refresh();
      for (std::int64_t m = 0; m < M; ++m) {
        load_row(dx, px + static_cast<std::size_t>(m * K) * dtype_size(dx), st->xrow.data(), K);
        try {
          qgemv::quantize_activation(f, st->xrow.data(), K, st->act);
        } catch (Error& e) {
          e.with_node(node);
          throw;
        }
        const std::byte* pw = blocks.get();
        float* yr = st->yrow.data();
        parallel_for(N, 64, [&](std::int64_t lo, std::int64_t hi) { qgemv::gemv(f, pw, st->act, lo, hi, yr); });
        write_c(yr, N, m, 1, 0, N, cv, ep);  // bias, relu, y's storage type: as the GEMM writes
      }
    };
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
