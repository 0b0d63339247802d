// What the CPU target's candidates for a linear over q8_0/q4_0 weights (kernels/qlinear/*.hpp)
// decide on and bind from: the problem (rows, block format) and the binding (the packed rows of
// blocks, x, y, the bias row and relu).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "npusim/core/quant.hpp"
#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/gemm_core.hpp"
#include "npusim/target/cpu/context.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// What decides a quantized linear's candidate (qlinear_candidates): x's rows and the weights' format.
struct QLinearProblem {
  std::int64_t M = 0;
  quant::BlockFormat format = quant::BlockFormat::q8_0;
};

// A linear's bias as the f32 row the epilogue adds: a weight's values copied once at bind; a bias
// computed at run time (swin v2's qkv bias, a slice of it zeroed) widened from its stored values
// into the same row before each product, so both add the values the reference adds.
struct BiasRow {
  std::shared_ptr<std::vector<float>> row;  // null: no bias
  const std::byte* src = nullptr;           // the computed bias's storage; null: a weight's copy
  DType dt = DType::f32;
  void refresh() const {
    if (src) load_row(dt, src, row->data(), static_cast<std::int64_t>(row->size()));
  }
  const float* data() const { return row ? row->data() : nullptr; }
};

// What a candidate's kernel reads when it runs (captured by value): y[M, N] = x[M, K] W^T (+ bias,
// relu), W [N, K] as rows of blocks (core/quant.hpp) owned by the context.
struct QLinearOperands {
  quant::BlockFormat format = quant::BlockFormat::q8_0;
  std::int64_t M = 0, N = 0, K = 0;
  std::shared_ptr<const std::byte> blocks;
  const std::byte* px = nullptr;
  DType dx = DType::f32;
  CView cv;
  BiasRow b;
  Epilogue ep;  // b's row and relu
  std::string node;

  QLinearProblem problem() const { return {M, format}; }
  const std::byte* x_row(std::int64_t m) const { return px + static_cast<std::size_t>(m * K) * dtype_size(dx); }
  // Runs f (quantizing x), naming the node in what it throws (a value that is not finite).
  template <class F>
  void naming_node(F&& f) const {
    try {
      f();
    } catch (Error& e) {
      e.with_node(node);
      throw;
    }
  }
};

// A quantized linear to bind: its operands and the context that owns scratch and state.
struct QLinearBinding {
  Ctx& c;
  QLinearOperands op;
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
