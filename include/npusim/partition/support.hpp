// What a target can run, as plain data (derived from its type lists at the boundary), and the
// per-node verdict the partitioner and `npusim explain` use: on the target, or on the fallback
// with the reason. A debug switch forces op types or named nodes to the fallback.
#pragma once

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>

#include "npusim/config.hpp"
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
  std::string fallback;                       // the fallback target's name (describe_target); empty: none
  // Block formats (core/quant.hpp names) its linear kernels read: a linear node with a
  // weight_format outside this list is not run here.
  std::vector<std::string> weight_formats;
  bool reads_weight_format(std::string_view f) const {
    return std::find(weight_formats.begin(), weight_formats.end(), f) != weight_formats.end();
  }
};

// Forced fallbacks: "aten.max_pool2d.default", an op id ("max_pool2d") or "node:NAME", comma-separated.
// `parse` refuses an empty item and a name that is no op; `check_nodes` a node the graph lacks.
// `from` names the switch in errors (--force-fallback, NPUSIM_FORCE_FALLBACK).
struct ForceFallback {
  std::set<std::string, std::less<>> ops, nodes;
  std::string from = "forced fallback";
  static ForceFallback parse(std::string_view spec, std::string_view from = "--force-fallback");
  bool empty() const { return ops.empty() && nodes.empty(); }
  bool forces(const ir::Node& n, std::string_view op_id) const;
  void merge(const ForceFallback& o);
  void check_nodes(const ir::Graph& g) const;
};

struct NodeSupport {
  bool on_target = true;
  std::string reason;  // why not, when not
};

std::vector<NodeSupport> node_support(const ir::Graph& g, const TargetInfo& t, const ForceFallback& force = {});

}  // namespace npusim::inline NPUSIM_ABI::partition

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/partition/impl/support_inl.hpp"
#endif
