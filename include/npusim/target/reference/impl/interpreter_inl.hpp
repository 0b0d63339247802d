// Definitions for npusim/target/reference/interpreter.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/passes/functionalize.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/interpreter.hpp"

namespace npusim::inline NPUSIM_ABI {
namespace ref {

NPUSIM_FUNC void round_in_place(Tensor& t, DType to) {
  if (t.dtype() != DType::f32 || !is_half(to)) return;
  float* p = t.data<float>();
  const std::int64_t n = t.numel();
  if (to == DType::bf16)
    for (std::int64_t i = 0; i < n; ++i) p[i] = bf16_bits_to_f32(f32_to_bf16_bits(p[i]));
  else
    for (std::int64_t i = 0; i < n; ++i) p[i] = f16_bits_to_f32(f32_to_f16_bits(p[i]));
}

namespace detail {
// In-place writes (copy_, zero_, fill_) through views: the graph rewritten so that later readers
// see them (passes::functionalize_writes, as the compiler does); null when it has none.
inline std::shared_ptr<const ir::Graph> functionalized(const ir::Graph& g) {
  if (!passes::has_writes(g)) return nullptr;
  ops::check_known_ops(g);
  for (const ir::Node& n : g.nodes) {
    try {
      ops::check_node(g, n);
    } catch (Error& e) {
      throw e.with_node(n.name).with_file(g.source);
    }
  }
  auto w = std::make_shared<ir::Graph>(g);
  passes::functionalize_writes(*w);
  return w;
}
}  // namespace detail

NPUSIM_FUNC Interpreter::Interpreter(const ir::Graph& graph, Options opt)
    : written_(detail::functionalized(graph)), g_(written_ ? *written_ : graph), opt_(std::move(opt)) {
  const ir::Graph& g = g_;
  fns_.reserve(g.nodes.size());
  ops::check_known_ops(g);  // every unknown op type in one error
  for (const ir::Node& n : g.nodes) {
    try {
      ops::check_node(g, n);
      fns_.push_back(make_node_fn(ops::require_op(n), n));
    } catch (Error& e) {
      throw e.with_node(n.name).with_file(g.source);
    }
  }
  if (opt_.order.empty())
    for (std::size_t i = 0; i < g.nodes.size(); ++i) opt_.order.push_back(static_cast<std::int32_t>(i));
  if (opt_.order.size() != g.nodes.size())
    throw Error(ErrorCode::runtime, "execution order does not cover every node (npusim bug)", {.file = g.source});
  if (opt_.round_to.empty() && opt_.round_half)
    for (const auto& t : g.tensors) opt_.round_to.push_back(t.dtype);
  // Last step reading each tensor, so intermediates are freed as soon as possible.
  last_use_.assign(g.tensors.size(), -1);
  for (std::size_t s = 0; s < opt_.order.size(); ++s)
    for (auto t : g.nodes[ref::uidx(opt_.order[s])].inputs) last_use_[ref::uidx(t)] = static_cast<std::int64_t>(s);
  for (auto t : g.outputs) last_use_[ref::uidx(t)] = static_cast<std::int64_t>(g.nodes.size());
}

NPUSIM_FUNC void Interpreter::bind_weights(const std::unordered_map<ir::TensorId, Tensor>& weights) {
  std::unordered_map<const void*, Tensor> converted;
  weights_.clear();
  for (const auto& [id, t] : weights) {
    const ir::TensorInfo& info = g_.tensor(id);
    // A weight bound as rows of blocks (u8, a q8_0/q4_0 linear's; weights::BoundWeights) stays
    // as it is: the linear kernel reads the blocks.
    if (quant::is_packed(t, info.dtype)) {
      weights_[id] = t;
      continue;
    }
    if (t.shape() != info.shape)
      throw Error(ErrorCode::shape, "bound weight has the wrong shape", {.file = g_.source, .tensor = info.name,
                  .expected = to_string(info.shape), .found = to_string(t.shape())});
    auto it = converted.find(t.raw());
    if (it == converted.end()) it = converted.emplace(t.raw(), t.to(runtime_dtype(info.dtype))).first;
    weights_[id] = it->second.reshaped(info.shape);
  }
}

NPUSIM_FUNC std::vector<Tensor> Interpreter::run(std::span<const Tensor> inputs, const NodeCallback& on_node) const {
  if (inputs.size() != g_.inputs.size())
    throw Error(ErrorCode::graph, "wrong number of graph inputs", {.file = g_.source, .expected = std::to_string(g_.inputs.size()),
                                                                   .found = std::to_string(inputs.size())});
  std::vector<Tensor> vals(g_.tensors.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorInfo& info = g_.tensor(g_.inputs[i]);
    check_input(info, inputs[i]);
    Tensor v = inputs[i].to(runtime_dtype(info.dtype));
    if (!opt_.round_to.empty() && is_half(opt_.round_to[ref::uidx(g_.inputs[i])])) {
      if (v.raw() == inputs[i].raw()) v = v.clone();
      round_in_place(v, opt_.round_to[ref::uidx(g_.inputs[i])]);
    }
    vals[ref::uidx(g_.inputs[i])] = v;
  }
  for (ir::TensorId w : g_.weights) {
    auto it = weights_.find(w);
    if (it != weights_.end()) vals[ref::uidx(w)] = it->second;
  }
  std::vector<Tensor> ins, outs;
  std::vector<ops::TensorSpec> in_specs, out_specs;
  std::vector<bool> aliased;
  for (std::size_t step = 0; step < opt_.order.size(); ++step) {
    const std::size_t ni = ref::uidx(opt_.order[step]);
    const ir::Node& n = g_.nodes[ni];
    ins.clear(), in_specs.clear(), out_specs.clear();
    for (auto t : n.inputs) {
      if (!vals[ref::uidx(t)].defined())
        throw Error(ErrorCode::weights, "no value bound for this tensor (a weight that was not loaded?)",
                    {.file = g_.source, .node = n.name, .tensor = g_.tensor(t).name});
      ins.push_back(vals[ref::uidx(t)]);
      in_specs.push_back({g_.tensor(t).shape, g_.tensor(t).dtype});
    }
    for (auto t : n.outputs) out_specs.push_back({g_.tensor(t).shape, g_.tensor(t).dtype});
    outs.assign(n.outputs.size(), Tensor());
    aliased.assign(n.outputs.size(), false);
    Args args{ins, in_specs, out_specs, outs, aliased};
    try {
      fns_[ni](args);
    } catch (Error& e) {
      throw e.with_node(n.name).with_file(g_.source);
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (!outs[k].defined() || outs[k].shape() != out_specs[k].shape)
        throw Error(ErrorCode::runtime, "kernel produced no value or a wrong shape (npusim bug)",
                    {.node = n.name, .tensor = g_.tensor(n.outputs[k]).name, .expected = to_string(out_specs[k].shape)});
      if (!opt_.round_to.empty() && !aliased[k]) round_in_place(outs[k], opt_.round_to[ref::uidx(n.outputs[k])]);
      vals[ref::uidx(n.outputs[k])] = std::move(outs[k]);
    }
    for (auto t : n.inputs)
      if (last_use_[ref::uidx(t)] == static_cast<std::int64_t>(step) && g_.tensor(t).kind == ir::TensorKind::intermediate)
        vals[ref::uidx(t)] = Tensor();
    if (on_node) on_node(step, n);
  }
  std::vector<Tensor> result;
  for (auto t : g_.outputs) result.push_back(vals[ref::uidx(t)]);
  return result;
}

NPUSIM_FUNC void Interpreter::check_input(const ir::TensorInfo& info, const Tensor& t) const {
  if (t.shape() != info.shape)
    throw Error(ErrorCode::shape, "graph input has the wrong shape", {.file = g_.source, .tensor = info.name,
                                                                     .expected = to_string(info.shape), .found = to_string(t.shape())});
  if (is_floating(info.dtype) != is_floating(t.dtype()) || (info.dtype == DType::boolean) != (t.dtype() == DType::boolean))
    throw Error(ErrorCode::dtype, "graph input has the wrong kind of dtype", {.file = g_.source, .tensor = info.name,
                .expected = std::string(dtype_name(info.dtype)), .found = std::string(dtype_name(t.dtype()))});
}

}  // namespace ref
}  // namespace npusim::inline NPUSIM_ABI
