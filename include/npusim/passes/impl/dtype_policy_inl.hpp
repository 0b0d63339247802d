// Definitions for npusim/passes/dtype_policy.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC DType DTypePolicy::storage(DType ir) const {
  if (!is_floating(ir)) return ir;
  if (compute == DType::f32) return DType::f32;
  if (ir == model_float) return compute;
  if ((ir == DType::f32 || ir == DType::f64) && is_half(model_float)) return DType::f32;  // an island
  return compute;
}

NPUSIM_FUNC DTypePolicy make_dtype_policy(const ir::Graph& g, DType compute) {
  if (compute != DType::f32 && !is_half(compute))
    throw Error(ErrorCode::unsupported, "compute dtype must be f32, f16 or bf16", {.found = std::string(dtype_name(compute))});
  std::map<DType, std::int64_t> count;
  for (ir::TensorId w : g.weights)
    if (is_floating(g.tensor(w).dtype)) count[g.tensor(w).dtype] += numel(g.tensor(w).shape);
  if (count.empty())
    for (ir::TensorId t : g.inputs)
      if (is_floating(g.tensor(t).dtype)) count[g.tensor(t).dtype] += numel(g.tensor(t).shape);
  DTypePolicy p;
  p.compute = compute;
  std::int64_t best = -1;
  for (auto [d, n] : count)
    if (n > best) best = n, p.model_float = d;
  return p;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
