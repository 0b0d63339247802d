// Definitions for npusim/target/cpu/cpu_target.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/cpu_target.hpp"

namespace npusim::inline NPUSIM_ABI {

NPUSIM_FUNC std::optional<std::string> CpuTarget::refuse(const ir::Graph& g, const ir::Node& n) {
  auto is_weight = [&](std::size_t i) {
    auto k = g.tensor(n.inputs.at(i)).kind;
    return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
  };
  const auto op = ops::require_op(n);
  if ((op == ops::op_index_v<ops::Linear> || op == ops::op_index_v<ops::Conv2d>) && !is_weight(1))
    return "the CPU target packs " + n.op_type + " weights at load time; this one is computed at run time";
  // A linear reads a bias computed at run time (swin v2 zeroes a slice of its qkv bias) before each
  // product; the convolutions fold theirs into packed weights and BatchNorm at load time.
  if (op == ops::op_index_v<ops::Conv2d> && n.inputs.size() > 2 && n.inputs[2] != ir::no_tensor && !is_weight(2))
    return "the CPU target packs " + n.op_type + " biases at load time; this one is computed at run time";
  if (op == ops::op_index_v<ops::Addmm>) {
    auto a = ops::read_attrs<ops::Addmm::Attrs>(n.attrs, n.op_type);
    if (!is_weight(2) || !is_weight(0) || a.alpha.value != 1 || a.beta.value != 1 || g.tensor(n.inputs[0]).shape.size() != 1)
      return "the CPU target runs addmm as bias + x @ W with load-time weights and alpha = beta = 1";
  }
  // slice_scatter copies bytes: a source of another dtype than self (torch casts it) is the reference's.
  if (op == ops::op_index_v<ops::SliceScatter> && g.tensor(n.inputs.at(1)).dtype != g.tensor(n.inputs.at(0)).dtype)
    return "the CPU slice_scatter copies bytes; this source is " + std::string(dtype_name(g.tensor(n.inputs.at(1)).dtype)) + ", self " +
           std::string(dtype_name(g.tensor(n.inputs.at(0)).dtype));
  if (op == ops::op_index_v<ops::BatchNorm> || op == ops::op_index_v<ops::LayerNorm>)
    for (std::size_t i = 1; i < n.inputs.size(); ++i)
      if (!is_weight(i)) return "the CPU target needs " + n.op_type + " parameters as weights";
  return std::nullopt;
}

}  // namespace npusim::inline NPUSIM_ABI
