// Definitions for npusim/passes/pad_channels.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/pad_channels.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC int pad_channels(ir::Graph& g, std::int64_t align_elems, std::vector<weights::Recipe>& recipes) {
  if (align_elems <= 1) return 0;
  auto up = [&](std::int64_t c) { return (c + align_elems - 1) / align_elems * align_elems; };
  const std::size_t T0 = g.tensors.size();
  std::vector<TensorId> padded(T0, ir::no_tensor);  // original tensor -> its padded version
  std::vector<ir::Node> out_nodes;
  out_nodes.reserve(g.nodes.size() * 2);
  int count = 0;
  auto is4d = [&](TensorId t) { return g.tensor(t).shape.size() == 4; };
  auto cur = [&](TensorId t) { return static_cast<std::size_t>(t) < T0 && padded[static_cast<std::size_t>(t)] != ir::no_tensor ? padded[static_cast<std::size_t>(t)] : t; };
  auto add_weight = [&](TensorId w, const Shape& shape) {
    const ir::TensorInfo info = g.tensor(w);
    std::string key = "npusim.pad." + info.weight_key;
    recipes.push_back(weights::pad_recipe(info.weight_key, key, shape));
    TensorId id = g.add_tensor({fresh_name(g, info.name + "_cpad"), shape, info.dtype, ir::TensorKind::weight, -1, 0, key});
    g.weights.push_back(id);
    return id;
  };
  for (ir::Node n : g.nodes) {  // a copy: the loop appends to g.tensors
    const std::size_t op = ops::require_op(n);
    const auto& info = ops::op_info(op);
    bool any_padded_in = false;
    for (TensorId t : n.inputs) any_padded_in = any_padded_in || cur(t) != t;
    std::optional<std::int64_t> out_c;  // padded channel count of output 0, if this node is in the domain
    if (op == ops::op_index_v<ops::Conv2d> && ops::read_attrs<ops::Conv2d::Attrs>(n.attrs, n.op_type).groups == 1) {
      const Shape ws = g.tensor(n.inputs[1]).shape;  // a copy: add_weight grows g.tensors
      const std::int64_t cin = g.tensor(cur(n.inputs[0])).shape[1], cout_p = up(ws[0]);
      if (cout_p != ws[0] || cin != ws[1]) {
        n.inputs[0] = cur(n.inputs[0]);
        n.inputs[1] = add_weight(n.inputs[1], {cout_p, cin, ws[2], ws[3]});
        if (n.inputs.size() == 3) n.inputs[2] = add_weight(n.inputs[2], {cout_p});
      }
      if (cout_p != ws[0]) out_c = cout_p;
    } else if (any_padded_in && n.outputs.size() == 1 && is4d(n.outputs[0]) &&
               (op == ops::op_index_v<ops::MaxPool2d> || op == ops::op_index_v<ops::AvgPool2d> || op == ops::op_index_v<ops::AdaptiveAvgPool2d> ||
                (info.op_class == ops::OpClass::elementwise && op != ops::op_index_v<ops::ToDtype>))) {
      // Every tensor input must be padded alike and of the output's shape (no broadcasting).
      bool ok = true;
      std::int64_t c = -1;
      for (TensorId t : n.inputs) {
        if (cur(t) == t || g.tensor(t).shape != (info.op_class == ops::OpClass::elementwise ? g.tensor(n.outputs[0]).shape : g.tensor(t).shape)) ok = false;
        else if (c >= 0 && g.tensor(cur(t)).shape[1] != c) ok = false;
        else c = g.tensor(cur(t)).shape[1];
      }
      if (ok) {
        for (TensorId& t : n.inputs) t = cur(t);
        out_c = c;
      }
    }
    if (!out_c) {
      // Outside the domain: read originals (produced by the un-pad slices).
      out_nodes.push_back(std::move(n));
      continue;
    }
    // The node writes a padded tensor; an un-pad slice recreates the original right after it.
    const TensorId orig = n.outputs[0];
    const ir::TensorInfo oi = g.tensor(orig);
    Shape ps = oi.shape;
    ps[1] = *out_c;
    TensorId p = g.add_tensor({fresh_name(g, oi.name + "_cpad"), ps, oi.dtype, ir::TensorKind::intermediate, -1, 0, {}});
    padded[static_cast<std::size_t>(orig)] = p;
    n.outputs[0] = p;
    ir::Node slice{fresh_name(g, oi.name + "_unpad"), "aten.slice.Tensor", {p}, {orig}, {}};
    slice.attrs.set("dim", ir::AttrValue(std::int64_t{1}));
    slice.attrs.set("start", ir::AttrValue(std::int64_t{0}));
    slice.attrs.set("end", ir::AttrValue(oi.shape[1]));
    out_nodes.push_back(std::move(n));
    out_nodes.push_back(std::move(slice));
    ++count;
  }
  g.nodes = std::move(out_nodes);
  renumber_producers(g);
  return count;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
