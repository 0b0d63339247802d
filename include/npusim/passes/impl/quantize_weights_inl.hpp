// Definitions for npusim/passes/quantize_weights.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/passes/quantize_weights.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC std::int64_t quantize_linear_weights(ir::Graph& g, const WeightQuantOptions& o) {
  if (o.format.empty()) {
    if (!o.keep.empty()) throw Error(ErrorCode::unsupported, "weights to keep were named, but no weight format was asked for", {.expected = "--weights-dtype q8 or q4 with --keep"});
    return 0;
  }
  const auto f = quant::parse_block_format(o.format);
  if (!f) throw Error(ErrorCode::unsupported, "unknown weight format '" + o.format + "'", {.expected = "q8 (q8_0) or q4 (q4_0)", .found = o.format});
  const std::string name(quant::to_string(*f));
  std::vector<bool> kept(o.keep.size(), false);
  std::int64_t marked = 0;
  for (ir::Node& n : g.nodes) {
    if (n.op_type != "aten.linear.default" || n.inputs.size() < 2) continue;
    const ir::TensorInfo& w = g.tensor(n.inputs[1]);
    if (w.kind != ir::TensorKind::weight || w.shape.size() != 2) continue;
    bool keep = false;
    for (std::size_t i = 0; i < o.keep.size(); ++i)
      if (!o.keep[i].empty() && (w.weight_key.find(o.keep[i]) != std::string::npos || w.name.find(o.keep[i]) != std::string::npos))
        keep = true, kept[i] = true;
    if (keep) continue;
    n.attrs.set("weight_format", ir::AttrValue(name));
    ++marked;
  }
  for (std::size_t i = 0; i < o.keep.size(); ++i)
    if (!kept[i]) throw Error(ErrorCode::unsupported, "--keep '" + o.keep[i] + "' names no linear layer's weight", {.found = o.keep[i]});
  return marked;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
