// The compute-dtype policy: which dtype the target stores each tensor in. Integer and bool tensors
// keep their type. With f32 compute every float is float32. With f16/bf16 compute, tensors in the
// model's own float type are stored in the compute type, while float32 islands that a half model
// asks for explicitly (RMSNorm interiors, softmax in float32) stay float32.
#pragma once

#include <map>

#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

struct DTypePolicy {
  DType compute = DType::f32;
  DType model_float = DType::f32;  // the dtype most float weights (else inputs) have

  DType storage(DType ir) const;
};

DTypePolicy make_dtype_policy(const ir::Graph& g, DType compute);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/dtype_policy_inl.hpp"
#endif
