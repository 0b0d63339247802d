// Definitions for npusim/partition/support.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/partition/support.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

NPUSIM_FUNC ForceFallback ForceFallback::parse(std::string_view spec, std::string_view from) {
  ForceFallback f;
  f.from = from;
  if (spec.find_first_not_of(' ') == std::string_view::npos) return f;
  const std::string what(from), quoted = "'" + std::string(spec) + "'";
  for (std::size_t a = 0; a <= spec.size();) {
    const std::size_t b = std::min(spec.find(',', a), spec.size());
    std::string item(spec.substr(a, b - a));
    a = b + 1;
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty())
      throw Error(ErrorCode::attr, what + ": an empty item in the list", {.expected = "op types, op ids or node:NAME, comma-separated", .found = quoted});
    if (item.starts_with("node:")) {
      if (item.size() == 5) throw Error(ErrorCode::attr, what + ": node: without a node name", {.expected = "node:NAME", .found = quoted});
      f.nodes.insert(item.substr(5));
      continue;
    }
    bool known = ops::find_op(item).has_value();
    for (std::size_t i = 0; i < ops::op_count && !known; ++i) known = ops::op_info(i).id == item;
    if (!known)
      throw Error(ErrorCode::attr, what + ": '" + item + "' names no op",
                  {.expected = "an ATen op type (aten.max_pool2d.default), an op id (max_pool2d; see npusim ops) or node:NAME", .found = quoted});
    f.ops.insert(item);
  }
  return f;
}

NPUSIM_FUNC void ForceFallback::merge(const ForceFallback& o) {
  if (o.empty()) return;
  from = empty() ? o.from : from + " and " + o.from;
  ops.insert(o.ops.begin(), o.ops.end());
  nodes.insert(o.nodes.begin(), o.nodes.end());
}

NPUSIM_FUNC void ForceFallback::check_nodes(const ir::Graph& g) const {
  for (const std::string& name : nodes)
    if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return n.name == name; }))
      throw Error(ErrorCode::graph, from + " names a node the model does not have", {.file = g.source, .expected = "node:NAME of one of the graph's " +
                  std::to_string(g.nodes.size()) + " nodes", .found = "node:" + name});
}

NPUSIM_FUNC bool ForceFallback::forces(const ir::Node& n, std::string_view op_id) const {
  return nodes.count(n.name) || ops.count(n.op_type) || ops.count(op_id);
}

NPUSIM_FUNC std::vector<NodeSupport> node_support(const ir::Graph& g, const TargetInfo& t, const ForceFallback& force) {
  std::vector<NodeSupport> r(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    std::size_t idx = ops::require_op(n);
    std::string_view id = ops::op_info(idx).id;
    if (force.forces(n, id)) {
      r[i] = {false, "forced to the fallback (debug switch)"};
    } else if (idx >= t.ops.size() || !t.ops[idx]) {
      r[i] = {false, "target '" + t.name + "' has no kernel for " + std::string(id) + " (" + n.op_type + ")"};
    } else if (auto wf = n.attrs.find("weight_format"); wf && wf->is_string() && !wf->as_string().empty() && !t.reads_weight_format(wf->as_string())) {
      r[i] = {false, "target '" + t.name + "' has no linear kernel for " + wf->as_string() + " weights"};
    } else if (t.refuse) {
      if (auto why = t.refuse(g, n)) r[i] = {false, *why};
    }
  }
  return r;
}

}  // namespace npusim::inline NPUSIM_ABI::partition
