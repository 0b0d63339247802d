// The reference target: executes any registered op node by node on the CPU in float32 (integers in
// int64), optionally rounding every value the IR stores as f16/bf16 to that type. It is the
// correctness oracle and the fallback of every other target, so it favours clarity over speed,
// but matrix work goes through Eigen so that a 1.5B-parameter model runs in seconds.
// Its kernels (kernels/*.hpp) are included by impl/reference_target_inl.hpp only.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/fusion/fuse.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/npusim_fwd.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/const_fold.hpp"

namespace npusim::inline NPUSIM_ABI {

struct ReferenceTarget {
  static constexpr std::string_view name = target_name<ReferenceTarget>::value;  // "reference" (npusim_fwd.hpp)
  using op_list = ops::all_ops;
  // Runs any pattern (a fused kernel is the composition of its members), and lists the default
  // ones: the launch patterns (fusion::launch_patterns) stay with the targets whose kernels they are.
  using pattern_list = fusion::default_patterns;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // The reference is everyone's fallback; naming itself lets tests force plans onto two parts.
  using fallback = ReferenceTarget;
  // Quantized linear weights: the format's meaning, dequantized weights in f32 (docs/quantization.md).
  static constexpr std::string_view weight_formats[] = {"q8_0", "q4_0"};
  // Constant folding at compile time evaluates nodes with this target's kernels.
  static passes::Evaluator evaluator();
};
namespace ref {

struct Args;  // kernels/common.hpp: a node's inputs, outputs and their specs
using NodeFn = std::function<void(Args&)>;

// Parses the node's attrs once (schema defaults, supported values) and returns its kernel call.
NodeFn make_node_fn(std::size_t op_index, const ir::Node& n);

// Evaluates one node on the reference target (constant folding at compile time uses this).
std::vector<Tensor> evaluate_node(const ir::Graph& g, const ir::Node& n, std::span<const Tensor> inputs);

}  // namespace ref

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/reference/impl/reference_target_inl.hpp"
#endif
