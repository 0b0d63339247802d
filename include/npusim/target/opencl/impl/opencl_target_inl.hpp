// Definitions for npusim/target/opencl/opencl_target.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>

#include "npusim/config.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

namespace npusim::inline NPUSIM_ABI {

NPUSIM_FUNC std::optional<std::string> OpenCLTarget::refuse(const ir::Graph& g, const ir::Node& n) {
  const auto op = ops::require_op(n);
  const auto& info = ops::op_info(op);
  auto any = [&](auto pred) {
    for (auto t : n.inputs)
      if (pred(g.tensor(t).dtype)) return true;
    for (auto t : n.outputs)
      if (pred(g.tensor(t).dtype)) return true;
    return false;
  };
  if (any([](DType t) { return t == DType::f64; })) return "the OpenCL target does not compute in float64";
  // The affine int8 ops (ops/quantized.hpp) have integer kernels of their own (cl/quant.cl).
  if (info.op_class == ops::OpClass::quantization || op == ops::op_index_v<ops::QConv2d> || op == ops::op_index_v<ops::QLinear> ||
      op == ops::op_index_v<ops::QMaxPool2d>)
    return std::nullopt;
  const bool int_in = std::any_of(n.inputs.begin(), n.inputs.end(), [&](auto t) { return is_integral(g.tensor(t).dtype); });
  if (info.op_class == ops::OpClass::elementwise && info.id != "to_dtype" && any([](DType t) { return is_integral(t); })) {
    if (!integer_pointwise(g, n))
      return "the OpenCL target runs integer pointwise arithmetic only for relu, neg, abs and clamp (other integer arithmetic falls back)";
    // Its integer program holds no float values: a float pointwise neighbour (to_dtype included)
    // that eltwise_chain could fuse it with sends it to the fallback instead.
    auto float_pointwise = [&](std::int32_t m) {
      return m >= 0 && ops::op_info(ops::require_op(g.nodes[static_cast<std::size_t>(m)])).op_class == ops::OpClass::elementwise &&
             !integer_pointwise(g, g.nodes[static_cast<std::size_t>(m)]);
    };
    for (auto t : n.inputs)
      if (float_pointwise(g.tensor(t).producer))
        return "the OpenCL target runs integer pointwise ops apart from float ones, and this one's input comes from " +
               g.nodes[static_cast<std::size_t>(g.tensor(t).producer)].name;
    for (const ir::Node& m : g.nodes)
      if (std::find(m.inputs.begin(), m.inputs.end(), n.outputs[0]) != m.inputs.end() &&
          float_pointwise(static_cast<std::int32_t>(&m - g.nodes.data())))
        return "the OpenCL target runs integer pointwise ops apart from float ones, and this one's output goes to " + m.name;
  }
  if ((info.op_class == ops::OpClass::reduction || info.op_class == ops::OpClass::matmul || info.op_class == ops::OpClass::conv ||
       info.op_class == ops::OpClass::pool || info.op_class == ops::OpClass::normalization) &&
      int_in)
    return "the OpenCL target reduces and multiplies floats only";
  if (op == ops::op_index_v<ops::IndexTensor> && n.inputs.size() > 5) return "the OpenCL index kernel takes at most 4 index tensors";
  if (op == ops::op_index_v<ops::IndexAdd> && !is_floating(g.tensor(n.outputs[0]).dtype)) return "the OpenCL index_add sums floats only";
  if (op == ops::op_index_v<ops::Addmm>) {
    auto a = ops::read_attrs<ops::Addmm::Attrs>(n.attrs, n.op_type);
    if (a.alpha.value != 1 || a.beta.value != 1 || g.tensor(n.inputs[0]).shape.size() != 1)
      return "the OpenCL target runs addmm as x @ W + bias with alpha = beta = 1 and a 1-D bias";
  }
  if (op == ops::op_index_v<ops::ScaledDotProductAttention>) {
    const Shape& q = g.tensor(n.inputs[0]).shape;
    if (q.size() < 3 || q.size() > 4 || q.back() > 256) return "the OpenCL attention kernel takes rank 3-4 inputs with head dim <= 256";
  }
  return std::nullopt;
}

NPUSIM_FUNC bool OpenCLTarget::integer_pointwise(const ir::Graph& g, const ir::Node& n) {
  const auto op = ops::require_op(n);
  if (op != ops::op_index_v<ops::Relu> && op != ops::op_index_v<ops::Neg> && op != ops::op_index_v<ops::Abs> && op != ops::op_index_v<ops::Clamp> &&
      op != ops::op_index_v<ops::ClampMin>)
    return false;
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  return is_integral(g.tensor(n.inputs[0]).dtype) && is_integral(g.tensor(n.outputs[0]).dtype);
}

}  // namespace npusim::inline NPUSIM_ABI
