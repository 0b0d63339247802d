// Definitions for npusim/passes/broadcast_fold.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/broadcast_fold.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC int fold_broadcasts(ir::Graph& g) {
  const auto uses = consumers(g);
  const auto outs = graph_output_mask(g);
  Edit e(g);
  int folded = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (ops::require_op(n) != ops::op_index_v<ops::Expand>) continue;
    const TensorId out = n.outputs[0], src = n.inputs[0];
    if (outs[static_cast<std::size_t>(out)] || uses[static_cast<std::size_t>(out)].empty()) continue;
    bool ok = true;
    for (auto c : uses[static_cast<std::size_t>(out)]) {
      const ir::Node& cn = g.nodes[static_cast<std::size_t>(c)];
      const auto& info = ops::op_info(ops::require_op(cn));
      if (info.op_class != ops::OpClass::elementwise || cn.inputs.size() < 2) {
        ok = false;
        break;
      }
      Shape b;
      for (TensorId t : cn.inputs) b = broadcast_shapes(b, g.tensor(t == out ? src : t).shape);
      ok = b == g.tensor(cn.outputs[0]).shape;
      if (!ok) break;
    }
    if (!ok) continue;
    e.replace(out, src);
    e.remove(i);
    ++folded;
  }
  e.apply(g);
  return folded;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
