// What a target can run, as plain data (derived from its type lists at the boundary), and the
// per-node verdict the partitioner and `npusim explain` use: on the target, or on the fallback
// with the reason. A debug switch forces op types or named nodes to the fallback.
#pragma once

#include <functional>
#include <set>
#include <sstream>

#include "npusim/fusion/fuse.hpp"
#include "npusim/partition/boundary.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

struct TargetInfo {
  std::string name;
  std::vector<bool> ops;  // by op index: has a kernel
  // A refusal below the op level (an attribute value or shape the kernel does not handle).
  std::function<std::optional<std::string>(const ir::Graph&, const ir::Node&)> refuse;
  std::vector<fusion::PatternInfo> patterns;  // priority order
  std::vector<DType> dtypes;                  // compute dtypes it supports
  TargetLimits limits;
  std::string fallback = "reference";         // empty: no fallback
};

// Forced fallbacks: "aten.max_pool2d.default", an op id ("max_pool2d") or "node:NAME", comma-separated.
struct ForceFallback {
  std::set<std::string, std::less<>> ops, nodes;
  static ForceFallback parse(std::string_view spec) {
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
  bool empty() const { return ops.empty() && nodes.empty(); }
  bool forces(const ir::Node& n, std::string_view op_id) const {
    return nodes.count(n.name) || ops.count(n.op_type) || ops.count(op_id);
  }
};

struct NodeSupport {
  bool on_target = true;
  std::string reason;  // why not, when not
};

inline std::vector<NodeSupport> node_support(const ir::Graph& g, const TargetInfo& t, const ForceFallback& force = {}) {
  std::vector<NodeSupport> r(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    std::size_t idx = ops::require_op(n);
    std::string_view id = ops::op_info(idx).id;
    if (force.forces(n, id)) {
      r[i] = {false, "forced to the fallback (debug switch)"};
    } else if (idx >= t.ops.size() || !t.ops[idx]) {
      r[i] = {false, "target '" + t.name + "' has no kernel for " + std::string(id) + " (" + n.op_type + ")"};
    } else if (t.refuse) {
      if (auto why = t.refuse(g, n)) r[i] = {false, *why};
    }
  }
  return r;
}

}  // namespace npusim::inline NPUSIM_ABI::partition
