// Definitions for npusim/passes/bn_fold.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/bn_fold.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC BnFoldResult fold_batch_norms(ir::Graph& g, std::vector<weights::Recipe>& recipes) {
  BnFoldResult res;
  const auto uses = consumers(g);
  const auto outs = graph_output_mask(g);
  auto is_param = [&](TensorId t) {
    auto k = g.tensor(t).kind;
    return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
  };
  Edit e(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& bn = g.nodes[i];
    if (ops::require_op(bn) != ops::op_index_v<ops::BatchNorm>) continue;
    const TensorId x = bn.inputs.at(0);
    const std::int32_t p = g.tensor(x).producer;
    bool ok = p >= 0 && ops::require_op(g.nodes[static_cast<std::size_t>(p)]) == ops::op_index_v<ops::Conv2d> &&
              uses[static_cast<std::size_t>(x)].size() == 1 && !outs[static_cast<std::size_t>(x)];
    for (std::size_t k = 1; ok && k < bn.inputs.size(); ++k) ok = is_param(bn.inputs[k]);
    ir::Node* conv = ok ? &g.nodes[static_cast<std::size_t>(p)] : nullptr;
    if (ok) ok = is_param(conv->inputs.at(1)) && (conv->inputs.size() < 3 || is_param(conv->inputs[2]));
    if (ok) ok = is_floating(g.tensor(conv->inputs[1]).dtype);
    if (!ok) {
      ++res.kept;
      continue;
    }
    auto attrs = ops::read_attrs<ops::BatchNorm::Attrs>(bn.attrs, bn.op_type);
    const bool affine = bn.inputs.size() == 5;
    auto key = [&](TensorId t) { return g.tensor(t).weight_key; };
    const ir::TensorInfo w = g.tensor(conv->inputs[1]);
    std::vector<std::string> in{key(conv->inputs[1]), conv->inputs.size() == 3 ? key(conv->inputs[2]) : "",
                                affine ? key(bn.inputs[1]) : "", affine ? key(bn.inputs[2]) : "",
                                key(bn.inputs[affine ? 3 : 1]), key(bn.inputs[affine ? 4 : 2])};
    const std::string base = "npusim.bn_fold." + conv->name;
    ir::TensorInfo nw{fresh_name(g, "npusim_fold_" + conv->name + "_weight"), w.shape, w.dtype, ir::TensorKind::weight, -1, 0, base + ".weight"};
    ir::TensorInfo nb{fresh_name(g, "npusim_fold_" + conv->name + "_bias"), {w.shape[0]}, w.dtype, ir::TensorKind::weight, -1, 0, base + ".bias"};
    recipes.push_back(weights::bn_fold_recipe(in, {nw.weight_key, nb.weight_key}, attrs.eps));
    TensorId wid = g.add_tensor(nw);
    TensorId bid = g.add_tensor(nb);
    g.weights.push_back(wid), g.weights.push_back(bid);
    conv = &g.nodes[static_cast<std::size_t>(p)];  // add_tensor does not touch nodes, but be explicit
    conv->inputs = {conv->inputs[0], wid, bid};
    // The conv now produces the BatchNorm's output tensor (keeps graph-output names intact).
    conv->outputs = {bn.outputs.at(0)};
    e.remove(i);
    ++res.folded;
  }
  e.apply(g);
  return res;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
