// A kernel of a compiled program: the nodes it covers (one for a plain op, several for a fused
// pattern), its boundary tensors, and parameters its pattern extracted (eps, scale, ...).
#pragma once

#include <string>
#include <vector>

#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI {

struct Kernel {
  std::string kind;                   // pattern name ("rmsnorm") or op id ("linear"); "view" = zero-copy
  std::vector<std::int32_t> nodes;    // member node indices, in topological order
  std::vector<ir::TensorId> inputs;   // tensors read from outside the kernel, in the pattern's order
  std::vector<ir::TensorId> outputs;  // tensors the kernel produces for others
  ir::AttrMap params;
  friend bool operator==(const Kernel&, const Kernel&) = default;

  bool fused() const { return nodes.size() > 1; }
  double param(std::string_view name, double fallback = 0.0) const {
    const ir::AttrValue* v = params.find(name);
    return v && v->is_number() ? v->as_double() : fallback;
  }
  std::int64_t int_param(std::string_view name, std::int64_t fallback = 0) const {
    const ir::AttrValue* v = params.find(name);
    return v && v->is_int() ? v->as_int() : fallback;
  }
  bool bool_param(std::string_view name, bool fallback = false) const {
    const ir::AttrValue* v = params.find(name);
    return v && v->is_bool() ? v->as_bool() : fallback;
  }
};

}  // namespace npusim::inline NPUSIM_ABI
