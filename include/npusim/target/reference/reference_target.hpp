// The reference target: executes any registered op node by node on the CPU in float32 (integers in
// int64), optionally rounding every value the IR stores as f16/bf16 to that type. It is the
// correctness oracle and the fallback of every other target, so it favours clarity over speed,
// but matrix work goes through Eigen so that a 1.5B-parameter model runs in seconds.
#pragma once

#include <functional>
#include <unordered_map>

#include "npusim/fusion/fuse.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/elementwise.hpp"
#include "npusim/target/reference/kernels/linalg.hpp"
#include "npusim/target/reference/kernels/misc.hpp"
#include "npusim/target/reference/kernels/nn.hpp"
#include "npusim/target/reference/kernels/shape.hpp"

namespace npusim::inline NPUSIM_ABI {

struct ReferenceTarget {
  static constexpr std::string_view name = "reference";
  using op_list = ops::all_ops;
  // Accepts every pattern: a fused kernel runs as the composition of its members.
  using pattern_list = fusion::all_patterns;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // The reference is everyone's fallback; naming itself lets tests force plans onto two parts.
  static constexpr std::string_view fallback_name = "reference";
  // Constant folding at compile time evaluates nodes with this target's kernels.
  static auto evaluator();
};
static_assert(check_target<ReferenceTarget>(ReferenceTarget::op_list{}));

namespace ref {

using NodeFn = std::function<void(Args&)>;

// Parses the node's attrs once (schema defaults, supported values) and returns its kernel call.
inline NodeFn make_node_fn(std::size_t op_index, const ir::Node& n) {
  return ops::dispatch_op<NodeFn>(op_index, [&]<class Op>() -> NodeFn {
    auto attrs = ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type);
    return [attrs](Args& a) { kernel<Op, ReferenceTarget>::run(attrs, a); };
  });
}

// Evaluates one node on the reference target (constant folding at compile time uses this).
inline std::vector<Tensor> evaluate_node(const ir::Graph& g, const ir::Node& n, std::span<const Tensor> inputs) {
  NodeFn fn = make_node_fn(ops::require_op(n), n);
  std::vector<Tensor> ins, outs(n.outputs.size());
  std::vector<ops::TensorSpec> in_specs, out_specs;
  std::vector<bool> aliased(n.outputs.size(), false);
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    in_specs.push_back({g.tensor(n.inputs[i]).shape, g.tensor(n.inputs[i]).dtype});
    ins.push_back(inputs[i].to(runtime_dtype(in_specs.back().dtype)));
  }
  for (auto t : n.outputs) out_specs.push_back({g.tensor(t).shape, g.tensor(t).dtype});
  Args args{ins, in_specs, out_specs, outs, aliased};
  fn(args);
  return outs;
}

}  // namespace ref

inline auto ReferenceTarget::evaluator() { return &ref::evaluate_node; }

}  // namespace npusim::inline NPUSIM_ABI
