// Definitions for npusim/passes/quantize_int8.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <cmath>
#include <set>

#include "npusim/core/quant.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/quantize_int8.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

namespace int8_detail {

inline bool is_param(const ir::Graph& g, TensorId t) {
  const auto k = g.tensor(t).kind;
  return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
}
inline bool is_activation(const ir::Graph& g, TensorId t) { return !is_param(g, t) && is_floating(g.tensor(t).dtype); }

// The clamp an activation node applies, if it is ReLU or ReLU6 (relu, hardtanh(0, 6), clamp(0[, 6])).
inline std::optional<std::pair<double, double>> activation_clamp(const ir::Node& n, std::size_t op) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (op == ops::op_index_v<ops::Relu>) return std::pair{0.0, inf};
  if (op == ops::op_index_v<ops::Hardtanh>) {
    const auto a = ops::read_attrs<ops::Hardtanh::Attrs>(n.attrs, n.op_type);
    if (a.min_val == 0.0 && a.max_val > 0.0) return std::pair{0.0, a.max_val};
  }
  if (op == ops::op_index_v<ops::Clamp>) {
    const auto a = ops::read_attrs<ops::Clamp::Attrs>(n.attrs, n.op_type);
    if (a.min && a.min->value == 0.0 && (!a.max || a.max->value > 0.0)) return std::pair{0.0, a.max ? a.max->value : inf};
  }
  return std::nullopt;
}

inline bool kept_float(const Int8Options& opt, const ir::Node& n, std::vector<bool>& used) {
  bool keep = false;
  for (std::size_t i = 0; i < opt.keep_float.size(); ++i)
    if (opt.keep_float[i] == n.name) keep = true, used[i] = true;
  return keep;
}

}  // namespace int8_detail

NPUSIM_FUNC std::vector<Int8Site> int8_sites(const ir::Graph& g, const Int8Options& opt) {
  using namespace int8_detail;
  const auto ops_of = op_indices(g);
  const auto uses = consumers(g);
  const auto outs = graph_output_mask(g);
  std::vector<bool> used(opt.keep_float.size(), false);
  std::vector<Int8Site> sites;
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const std::size_t op = ops_of[i];
    Int8Site s;
    s.node = static_cast<std::int32_t>(i);
    if (op == ops::op_index_v<ops::Conv2d> || op == ops::op_index_v<ops::Linear>) {
      const bool conv = op == ops::op_index_v<ops::Conv2d>;
      if (!is_activation(g, n.inputs[0]) || !is_param(g, n.inputs[1]) || !is_floating(g.tensor(n.inputs[1]).dtype)) continue;
      if (n.inputs.size() == 3 && !is_param(g, n.inputs[2])) continue;
      if (!conv && !ops::read_attrs<ops::Linear::Attrs>(n.attrs, n.op_type).weight_format.empty()) continue;
      s.inputs = {n.inputs[0]};
    } else if (op == ops::op_index_v<ops::Add>) {
      if (n.inputs.size() != 2 || !is_activation(g, n.inputs[0]) || !is_activation(g, n.inputs[1])) continue;
      if (!(g.tensor(n.inputs[0]).shape == g.tensor(n.inputs[1]).shape) || !(g.tensor(n.inputs[0]).shape == g.tensor(n.outputs[0]).shape)) continue;
      if (ops::read_attrs<ops::Add::Attrs>(n.attrs, n.op_type).alpha.value != 1.0) continue;
      s.inputs = {n.inputs[0], n.inputs[1]};
    } else if (op == ops::op_index_v<ops::Cat>) {
      bool ok = !n.inputs.empty() && is_floating(g.tensor(n.outputs.at(0)).dtype);
      for (TensorId t : n.inputs) ok = ok && is_activation(g, t);
      if (!ok) continue;
      s.inputs = n.inputs;
    } else {
      continue;
    }
    if (kept_float(opt, n, used)) continue;
    s.output = n.outputs.at(0);
    const auto& readers = uses[static_cast<std::size_t>(s.output)];
    if (op != ops::op_index_v<ops::Cat> && readers.size() == 1 && !outs[static_cast<std::size_t>(s.output)]) {  // qcat has no clamp
      const auto r = static_cast<std::size_t>(readers[0]);
      if (!absorbed[r] && activation_clamp(g.nodes[r], ops_of[r])) {
        s.act = readers[0];
        absorbed[r] = true;
        s.output = g.nodes[r].outputs.at(0);
      }
    }
    sites.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      throw Error(ErrorCode::unsupported, "--keep-float '" + opt.keep_float[i] + "' names no convolution, linear, add or cat that int8 would compute",
                  {.found = opt.keep_float[i]});
  for (const auto& [name, bits] : opt.weight_bits) {
    bool found = false;
    for (const Int8Site& s : sites)
      found = found || (g.nodes[static_cast<std::size_t>(s.node)].name == name && ops_of[static_cast<std::size_t>(s.node)] != ops::op_index_v<ops::Add> &&
                        ops_of[static_cast<std::size_t>(s.node)] != ops::op_index_v<ops::Cat>);
    if (!found) throw Error(ErrorCode::unsupported, "--weight-bits '" + name + "' names no convolution or linear that int8 computes", {.found = name});
  }
  return sites;
}

NPUSIM_FUNC std::vector<std::string> int8_observed_tensors(const ir::Graph& g, const Int8Options& opt) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](TensorId t) {
    if (seen.insert(g.tensor(t).name).second) names.push_back(g.tensor(t).name);
  };
  for (const Int8Site& s : int8_sites(g, opt)) {
    for (TensorId t : s.inputs) add(t);
    add(s.output);
  }
  return names;
}

NPUSIM_FUNC Int8Result quantize_int8(ir::Graph& g, std::vector<weights::Recipe>& recipes, const Int8Options& opt) {
  using namespace int8_detail;
  Int8Result res;
  if (!opt.enabled()) return res;
  const std::vector<Int8Site> sites = int8_sites(g, opt);
  const auto ops_of = op_indices(g);
  std::vector<std::int32_t> site_of(g.nodes.size(), -1);
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (std::size_t k = 0; k < sites.size(); ++k) {
    site_of[static_cast<std::size_t>(sites[k].node)] = static_cast<std::int32_t>(k);
    if (sites[k].act >= 0) absorbed[static_cast<std::size_t>(sites[k].act)] = true;
  }
  auto affine_of = [&](TensorId t) {
    const std::string& name = g.tensor(t).name;
    auto it = opt.ranges.find(name);
    if (it == opt.ranges.end())
      throw Error(ErrorCode::check, "no calibration range for a tensor that int8 needs", {.tensor = name, .expected = "a range for every tensor int8_observed_tensors names"});
    if (!std::isfinite(it->second.lo) || !std::isfinite(it->second.hi))
      throw Error(ErrorCode::check, "the calibration range of a tensor is not finite (NaN or Inf in the calibration inputs' activations)",
                  {.tensor = name, .found = "[" + std::to_string(it->second.lo) + ", " + std::to_string(it->second.hi) + "]"});
    return quant::choose_affine(it->second.lo, it->second.hi);
  };
  auto set_affine = [](ir::AttrMap& m, const std::string& prefix, const quant::Affine& a) {
    m.set(prefix + "scale", ir::AttrValue(static_cast<double>(a.scale)));
    m.set(prefix + "zero_point", ir::AttrValue(static_cast<std::int64_t>(a.zero_point)));
  };

  std::vector<ir::Node> nodes;
  std::map<TensorId, TensorId> twin;                // float tensor -> its int8 twin
  std::map<TensorId, quant::Affine> params;         // int8 twin -> its parameters
  std::set<TensorId> float_missing;                 // float tensors only their twin holds so far
  auto new_tensor = [&](const std::string& base, const Shape& shape, DType dt, ir::TensorKind kind, const std::string& key = {}) {
    return g.add_tensor({fresh_name(g, base), shape, dt, kind, -1, 0, key});
  };
  auto need_float = [&](TensorId t) {
    if (!float_missing.erase(t)) return;
    const TensorId q = twin.at(t);
    const quant::Affine& a = params.at(q);
    ir::Node d{g.tensor(t).name + ".dequantize", "quantized_decomposed.dequantize_per_tensor.default", {q}, {t}, {}};
    set_affine(d.attrs, "", a);
    d.attrs.set("dtype", ir::AttrValue(std::string("torch.int8")));
    if (g.tensor(t).dtype != DType::f32) d.attrs.set("out_dtype", ir::AttrValue("torch." + std::string(dtype_name(g.tensor(t).dtype))));
    nodes.push_back(std::move(d));
    ++res.dequantize_nodes;
  };
  auto need_int8 = [&](TensorId t) -> std::pair<TensorId, quant::Affine> {
    if (auto it = twin.find(t); it != twin.end()) return {it->second, params.at(it->second)};
    const quant::Affine a = affine_of(t);
    const TensorId q = new_tensor(int8_name(g.tensor(t).name), g.tensor(t).shape, DType::i8, ir::TensorKind::intermediate);
    ir::Node n{g.tensor(t).name + ".quantize", "quantized_decomposed.quantize_per_tensor.default", {t}, {q}, {}};
    set_affine(n.attrs, "", a);
    n.attrs.set("dtype", ir::AttrValue(std::string("torch.int8")));
    nodes.push_back(std::move(n));
    twin[t] = q, params[q] = a;
    ++res.quantize_nodes;
    return {q, a};
  };

  const std::vector<ir::Node> old = g.nodes;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (absorbed[i]) continue;
    const ir::Node& n = old[i];
    if (site_of[i] < 0 && ops_of[i] == ops::op_index_v<ops::MaxPool2d> && twin.count(n.inputs.at(0))) {
      // Max pooling of an int8 result: the codes' maximum, with the input's parameters.
      const TensorId in = twin.at(n.inputs[0]), out = n.outputs.at(0);
      const TensorId q = new_tensor(int8_name(g.tensor(out).name), g.tensor(out).shape, DType::i8, ir::TensorKind::intermediate);
      nodes.push_back({n.name, "npusim.qmax_pool2d", {in}, {q}, n.attrs});
      twin[out] = q, params[q] = params.at(in);
      float_missing.insert(out);
      ++res.int8_pools;
      continue;
    }
    if (site_of[i] < 0) {
      for (TensorId t : n.inputs) need_float(t);
      nodes.push_back(n);
      continue;
    }
    const Int8Site& s = sites[static_cast<std::size_t>(site_of[i])];
    const std::size_t op = ops_of[i];
    // The output's parameters and clamp: the folded activation's range in codes.
    quant::Affine out = affine_of(s.output);
    if (s.act >= 0) {
      const auto c = *activation_clamp(old[static_cast<std::size_t>(s.act)], ops_of[static_cast<std::size_t>(s.act)]);
      out.qmin = std::max(out.qmin, out.zero_point);
      if (std::isfinite(c.second))
        out.qmax = static_cast<std::int32_t>(std::min<double>(out.qmax, out.zero_point + std::nearbyint(c.second / out.scale)));
      ++res.folded_activations;
    }
    const TensorId q = new_tensor(int8_name(g.tensor(s.output).name), g.tensor(s.output).shape, DType::i8, ir::TensorKind::intermediate);
    ir::Node qn{n.name, "", {}, {q}, {}};
    if (op == ops::op_index_v<ops::Cat>) {
      // Each input rescaled to the output's parameters (TFLite requires them equal; npusim rescales).
      qn.op_type = "npusim.qcat";
      ir::AttrList scales, zps;
      for (TensorId t : s.inputs) {
        const auto [q8, pq] = need_int8(t);
        qn.inputs.push_back(q8);
        scales.push_back(ir::AttrValue(static_cast<double>(pq.scale)));
        zps.push_back(ir::AttrValue(static_cast<std::int64_t>(pq.zero_point)));
      }
      qn.attrs.set("dim", ir::AttrValue(ops::read_attrs<ops::Cat::Attrs>(n.attrs, n.op_type).dim));
      qn.attrs.set("scales", ir::AttrValue(std::move(scales)));
      qn.attrs.set("zero_points", ir::AttrValue(std::move(zps)));
      qn.attrs.set("out_scale", ir::AttrValue(static_cast<double>(out.scale)));
      qn.attrs.set("out_zero_point", ir::AttrValue(static_cast<std::int64_t>(out.zero_point)));
      nodes.push_back(std::move(qn));
      twin[s.output] = q, params[q] = out;
      float_missing.insert(s.output);
      ++res.integer_ops;
      continue;
    }
    if (op == ops::op_index_v<ops::Add>) {
      const auto [a, pa] = need_int8(s.inputs[0]);
      const auto [b, pb] = need_int8(s.inputs[1]);
      qn.op_type = "npusim.qadd";
      qn.inputs = {a, b};
      set_affine(qn.attrs, "a_", pa), set_affine(qn.attrs, "b_", pb);
    } else {
      const bool conv = op == ops::op_index_v<ops::Conv2d>;
      const auto [x, px] = need_int8(s.inputs[0]);
      qn.op_type = conv ? "npusim.qconv2d" : "npusim.qlinear";
      if (conv) qn.attrs = n.attrs;  // stride, padding, dilation, groups
      set_affine(qn.attrs, "x_", px);
      const ir::TensorInfo w = g.tensor(n.inputs[1]);
      const std::int64_t cout = w.shape[0];
      int bits = 8;
      if (auto it = opt.weight_bits.find(n.name); it != opt.weight_bits.end()) bits = it->second;
      if (bits < 2 || bits > 8) throw Error(ErrorCode::unsupported, "weight bits of a layer must be 2..8", {.node = n.name, .found = std::to_string(bits)});
      const std::string base = "npusim.int8." + n.name;
      weights::Recipe r{"quantize_per_channel",
                        {w.weight_key, n.inputs.size() == 3 ? g.tensor(n.inputs[2]).weight_key : std::string()},
                        {base + ".weight", base + ".weight_scale", base + ".bias"},
                        {}};
      r.params.set("input_scale", ir::AttrValue(static_cast<double>(px.scale)));
      r.params.set("bits", ir::AttrValue(static_cast<std::int64_t>(bits)));
      recipes.push_back(r);
      const TensorId wq = new_tensor(n.name + "_weight_int8", w.shape, DType::i8, ir::TensorKind::weight, r.outputs[0]);
      const TensorId ws = new_tensor(n.name + "_weight_scale", {cout}, DType::f32, ir::TensorKind::weight, r.outputs[1]);
      const TensorId bq = new_tensor(n.name + "_bias_int32", {cout}, DType::i32, ir::TensorKind::weight, r.outputs[2]);
      g.weights.push_back(wq), g.weights.push_back(ws), g.weights.push_back(bq);
      qn.inputs = {x, wq, ws, bq};
    }
    set_affine(qn.attrs, "out_", out);
    qn.attrs.set("out_min", ir::AttrValue(static_cast<std::int64_t>(out.qmin)));
    qn.attrs.set("out_max", ir::AttrValue(static_cast<std::int64_t>(out.qmax)));
    nodes.push_back(std::move(qn));
    twin[s.output] = q, params[q] = out;
    float_missing.insert(s.output);
    ++res.integer_ops;
  }
  for (TensorId t : g.outputs) need_float(t);
  g.nodes = std::move(nodes);
  renumber_producers(g);  // float tensors that only their twins hold now have no producer and no reader
  return res;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
