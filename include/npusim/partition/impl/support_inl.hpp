// Definitions for npusim/partition/support.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include <sstream>
#include "npusim/partition/support.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

NPUSIM_FUNC ForceFallback ForceFallback::parse(std::string_view spec) {
  ForceFallback f;
  std::string item;
  std::stringstream ss{std::string(spec)};
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    if (item.starts_with("node:")) f.nodes.insert(item.substr(5));
    else f.ops.insert(item);
  }
  return f;
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
