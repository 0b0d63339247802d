// Definitions for npusim/partition/stages.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/partition/stages.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

NPUSIM_FUNC std::int64_t layer_of_key(std::string_view key) {
  // Dot-separated items; a layer container's name followed by a number.
  std::vector<std::string_view> items;
  for (std::size_t b = 0; b <= key.size();) {
    std::size_t e = key.find('.', b);
    if (e == std::string_view::npos) e = key.size();
    items.push_back(key.substr(b, e - b));
    b = e + 1;
  }
  for (std::size_t i = 0; i + 2 < items.size(); ++i) {  // a layer's weight has a name after its index
    const auto c = items[i];
    if (c != "layers" && c != "layer" && c != "h" && c != "blocks") continue;
    const auto d = items[i + 1];
    if (d.empty() || d.size() > 9 || !std::all_of(d.begin(), d.end(), [](char x) { return x >= '0' && x <= '9'; })) continue;
    return std::stoll(std::string(d));
  }
  return -1;
}

NPUSIM_FUNC double node_flops(const ir::Graph& g, const ir::Node& n) {
  double out = 0;
  for (auto t : n.outputs) out += static_cast<double>(numel(g.tensor(t).shape));
  const auto idx = ops::find_op(n.op_type);
  if (!idx) return out;
  const std::string_view id = ops::op_info(*idx).id;
  auto in_shape = [&](std::size_t i) -> const Shape& {
    static const Shape none;
    return i < n.inputs.size() ? g.tensor(n.inputs[i]).shape : none;
  };
  auto last = [](const Shape& s) { return s.empty() ? 1.0 : static_cast<double>(s.back()); };
  if (id == "linear" || id == "matmul" || id == "qlinear") return 2.0 * out * last(in_shape(0));
  if (id == "addmm") return 2.0 * out * last(in_shape(1));
  if (id == "conv2d" || id == "qconv2d") {
    const Shape& w = in_shape(1);
    const double per_out = w.empty() || w[0] == 0 ? 1.0 : static_cast<double>(numel(w)) / static_cast<double>(w[0]);
    return 2.0 * out * per_out;
  }
  if (id == "sdpa") {  // q [.., Sq, D], k [.., Sk, D]: two products of Sq x Sk x D
    const Shape& k = in_shape(1);
    const double sk = k.size() >= 2 ? static_cast<double>(k[k.size() - 2]) : 1.0;
    return 4.0 * out * sk;
  }
  return out;
}

NPUSIM_FUNC StagePlan assign_stages(const ir::Graph& g, int stages, const passes::DTypePolicy& pol) {
  const std::size_t N = g.nodes.size();
  if (stages < 1)
    throw Error(ErrorCode::attr, "a graph is cut into one stage or more", {.file = g.source, .expected = ">= 1 stages", .found = std::to_string(stages)});
  StagePlan sp;
  sp.stage_of.assign(N, 0);
  // Per node: weight bytes, FLOPs, the layer it belongs to (the highest layer of the weights it reads).
  std::vector<double> wbytes(N, 0), flops(N, 0);
  std::vector<std::int64_t> layer(N, -1);
  for (std::size_t i = 0; i < N; ++i) {
    const ir::Node& n = g.nodes[i];
    flops[i] = node_flops(g, n);
    for (auto t : n.inputs) {
      const auto& info = g.tensor(t);
      if (info.kind != ir::TensorKind::weight && info.kind != ir::TensorKind::constant) continue;
      wbytes[i] += static_cast<double>(numel(info.shape)) * static_cast<double>(dtype_size(pol.storage(info.dtype)));
      layer[i] = std::max(layer[i], layer_of_key(info.weight_key));
    }
  }
  double W = 0, F = 0;
  for (std::size_t i = 0; i < N; ++i) W += wbytes[i], F += flops[i];
  // cum[p]: the cost of nodes [0, p).
  std::vector<double> cum(N + 1, 0);
  for (std::size_t i = 0; i < N; ++i) cum[i + 1] = cum[i] + (W > 0 ? wbytes[i] / W : 0) + (F > 0 ? flops[i] / F : 0);
  // live[p]: bytes of intermediates made before node p and read at p or later (what a cut at p moves).
  std::vector<double> live(N + 2, 0);
  {
    std::vector<std::int64_t> last_use(g.tensors.size(), -1);
    for (std::size_t i = 0; i < N; ++i)
      for (auto t : g.nodes[i].inputs) last_use[static_cast<std::size_t>(t)] = static_cast<std::int64_t>(i);
    for (std::size_t t = 0; t < g.tensors.size(); ++t) {
      const auto& info = g.tensors[t];
      if (info.kind != ir::TensorKind::intermediate || info.producer < 0 || last_use[t] <= info.producer) continue;
      const double b = static_cast<double>(numel(info.shape)) * static_cast<double>(dtype_size(pol.storage(info.dtype)));
      live[static_cast<std::size_t>(info.producer) + 1] += b;
      live[static_cast<std::size_t>(last_use[t]) + 1] -= b;
    }
    for (std::size_t p = 1; p <= N; ++p) live[p] += live[p - 1];
  }
  // Where a stage may begin. An LLM: one place between each two layers, the one moving the fewest bytes.
  std::map<std::int64_t, std::pair<std::size_t, std::size_t>> span;  // layer -> first, last node
  for (std::size_t i = 0; i < N; ++i)
    if (layer[i] >= 0) {
      auto [it, fresh] = span.try_emplace(layer[i], i, i);
      if (!fresh) it->second.second = i;
    }
  std::vector<std::size_t> cand;
  sp.by_layers = span.size() >= 2;
  if (sp.by_layers) {
    sp.layers = static_cast<std::int64_t>(span.size());
    for (auto it = span.begin(), nx = std::next(it); nx != span.end(); ++it, ++nx) {
      const std::size_t lo = it->second.second + 1, hi = nx->second.first;  // node `hi` may begin a stage
      if (lo > hi) continue;  // interleaved layers: no clean place between them
      std::size_t best = lo;
      for (std::size_t p = lo; p <= hi; ++p)
        if (live[p] < live[best]) best = p;
      cand.push_back(best);
    }
  } else {
    for (std::size_t p = 1; p < N; ++p) cand.push_back(p);
  }
  const std::size_t cuts = static_cast<std::size_t>(stages) - 1;
  if (cand.size() < cuts)
    throw Error(ErrorCode::attr, sp.by_layers ? "more stages than the graph has layers to give them" : "more stages than the graph has nodes",
                {.file = g.source, .expected = sp.by_layers ? "--stages <= " + std::to_string(cand.size() + 1) + " (" + std::to_string(sp.layers) + " layers)"
                                                            : "--stages <= " + std::to_string(cand.size() + 1),
                 .found = "--stages " + std::to_string(stages)});
  // Cut k at the candidate nearest k/stages of the cost, keeping room for the cuts after it; a graph
  // cut anywhere takes, within an eighth of a stage of that point, the place moving the fewest bytes.
  std::vector<std::size_t> at;
  std::size_t from = 0;
  for (std::size_t k = 1; k <= cuts; ++k) {
    const double target = cum[N] * static_cast<double>(k) / stages;
    const std::size_t to = cand.size() - (cuts - k);  // candidates [from, to)
    std::size_t best = from;
    for (std::size_t c = from; c < to; ++c)
      if (std::abs(cum[cand[c]] - target) < std::abs(cum[cand[best]] - target)) best = c;
    if (!sp.by_layers) {
      const double tol = std::abs(cum[cand[best]] - target) + cum[N] / (8.0 * stages);
      for (std::size_t c = from; c < to; ++c)
        if (std::abs(cum[cand[c]] - target) <= tol && live[cand[c]] < live[cand[best]]) best = c;
    }
    at.push_back(cand[best]);
    from = best + 1;
  }
  sp.weight_bytes.assign(static_cast<std::size_t>(stages), 0);
  sp.flops.assign(static_cast<std::size_t>(stages), 0);
  std::size_t s = 0;
  for (std::size_t i = 0; i < N; ++i) {
    while (s < at.size() && i >= at[s]) ++s;
    sp.stage_of[i] = static_cast<std::int32_t>(s);
    sp.weight_bytes[s] += static_cast<std::int64_t>(wbytes[i]);
    sp.flops[s] += flops[i];
  }
  return sp;
}

}  // namespace npusim::inline NPUSIM_ABI::partition
