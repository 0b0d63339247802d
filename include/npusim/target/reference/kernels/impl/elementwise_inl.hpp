// Definitions for npusim/target/reference/kernels/elementwise.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/elementwise.hpp"

namespace npusim::inline NPUSIM_ABI::ref {

NPUSIM_FUNC NodeFn make_pointwise_node_fn(std::size_t i, const ir::Node& n) {
  return meta::dispatch<NodeFn>(meta::concat_t<ops::unary_ops, ops::binary_ops>{}, i, [&]<class Op>() -> NodeFn {
    auto attrs = ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type);
    return [attrs](Args& a) { kernel<Op, ReferenceTarget>::run(attrs, a); };
  });
}

}  // namespace npusim::inline NPUSIM_ABI::ref
