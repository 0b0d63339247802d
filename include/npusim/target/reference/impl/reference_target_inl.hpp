// Definitions for npusim/target/reference/reference_target.hpp (NPUSIM_FUNC: npusim/config.hpp): the
// reference kernels, the proof that every op has one, and the per-node dispatch.
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/reference/kernels/einsum.hpp"
#include "npusim/target/reference/kernels/elementwise.hpp"
#include "npusim/target/reference/kernels/linalg.hpp"
#include "npusim/target/reference/kernels/misc.hpp"
#include "npusim/target/reference/kernels/moe.hpp"
#include "npusim/target/reference/kernels/nn.hpp"
#include "npusim/target/reference/kernels/quantized.hpp"
#include "npusim/target/reference/kernels/shape.hpp"
#include "npusim/target/reference/kernels/window.hpp"
#include "npusim/target/reference/reference_target.hpp"

namespace npusim::inline NPUSIM_ABI {

static_assert(check_target<ReferenceTarget>(ReferenceTarget::op_list{}));

namespace ref {

// The pointwise ops come first in ops::all_ops; their kernels are compiled apart
// (kernels/impl/elementwise_inl.hpp), the others here.
using pointwise_ops = meta::concat_t<ops::unary_ops, ops::binary_ops>;
using other_ops = meta::concat_t<ops::view_ops, ops::movement_ops, ops::other_ops, ops::zoo_ops>;
static_assert(std::is_same_v<ops::all_ops, meta::concat_t<pointwise_ops, other_ops>>,
              "NPUSIM: ops::all_ops must list the pointwise ops first (make_node_fn splits the dispatch there)");

NPUSIM_FUNC NodeFn make_node_fn(std::size_t op_index, const ir::Node& n) {
  if (op_index < pointwise_ops::size) return make_pointwise_node_fn(op_index, n);
  return meta::dispatch<NodeFn>(other_ops{}, op_index - pointwise_ops::size, [&]<class Op>() -> NodeFn {
    auto attrs = ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type);
    // A kernel that keeps state per node (what it derives from a weight) makes its own function.
    if constexpr (requires { kernel<Op, ReferenceTarget>::make(attrs); }) return kernel<Op, ReferenceTarget>::make(attrs);
    else return [attrs](Args& a) { kernel<Op, ReferenceTarget>::run(attrs, a); };
  });
}

NPUSIM_FUNC std::vector<Tensor> evaluate_node(const ir::Graph& g, const ir::Node& n, std::span<const Tensor> inputs) {
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

NPUSIM_FUNC passes::Evaluator ReferenceTarget::evaluator() { return &ref::evaluate_node; }

}  // namespace npusim::inline NPUSIM_ABI
