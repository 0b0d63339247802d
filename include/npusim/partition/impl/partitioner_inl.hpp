// Definitions for npusim/partition/partitioner.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/passes/graph_edit.hpp"
#include <deque>
#include "npusim/partition/partitioner.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

NPUSIM_FUNC std::vector<Part> split(const ir::Graph& g, const std::vector<NodeSupport>& sup, const std::vector<std::int32_t>* stage_of) {
  const std::size_t N = g.nodes.size();
  std::vector<Part> parts;
  if (N == 0) return parts;
  // Dependencies between nodes.
  std::vector<int> pending(N, 0);
  std::vector<std::vector<std::int32_t>> users(N);
  for (std::size_t i = 0; i < N; ++i) {
    std::set<std::int32_t> deps;
    for (auto t : g.nodes[i].inputs)
      if (auto p = g.tensor(t).producer; p >= 0 && g.tensor(t).kind == ir::TensorKind::intermediate) deps.insert(p);
    pending[i] = static_cast<int>(deps.size());
    for (auto p : deps) users[static_cast<std::size_t>(p)].push_back(static_cast<std::int32_t>(i));
  }
  // Two ready queues (target / fallback), each in original order; drain the current side first.
  std::deque<std::int32_t> ready[2];
  for (std::size_t i = 0; i < N; ++i)
    if (!pending[i]) ready[sup[i].on_target ? 0 : 1].push_back(static_cast<std::int32_t>(i));
  int side = ready[0].empty() ? 1 : 0;
  // The current stage's nodes first: a ready node of a later stage waits until this one is done.
  std::int32_t stage = 0;
  const std::int32_t last_stage = stage_of && N ? *std::max_element(stage_of->begin(), stage_of->end()) : 0;
  auto of = [&](std::int32_t n) { return stage_of ? (*stage_of)[static_cast<std::size_t>(n)] : 0; };
  auto earliest = [&](int s) {
    auto best = ready[s].end();
    for (auto it = ready[s].begin(); it != ready[s].end(); ++it)
      if (of(*it) == stage && (best == ready[s].end() || *it < *best)) best = it;
    return best;
  };
  std::size_t done = 0;
  while (done < N) {
    auto it = earliest(side);
    if (it == ready[side].end()) side = 1 - side, it = earliest(side);
    if (it == ready[side].end()) {
      if (++stage > last_stage)
        throw Error(ErrorCode::graph, "a node depends on a later pipeline stage (npusim bug)", {.file = g.source});
      continue;
    }
    if (parts.empty() || parts.back().fallback != (side == 1) || parts.back().stage != stage) parts.push_back({side == 1, {}, stage});
    // Take the earliest ready node of this side.
    std::int32_t n = *it;
    ready[side].erase(it);
    parts.back().nodes.push_back(n);
    ++done;
    for (auto u : users[static_cast<std::size_t>(n)])
      if (--pending[static_cast<std::size_t>(u)] == 0) ready[sup[static_cast<std::size_t>(u)].on_target ? 0 : 1].push_back(u);
  }
  return parts;
}

NPUSIM_FUNC ir::Graph extract(const ir::Graph& g, const std::vector<std::int32_t>& nodes, const std::vector<bool>& needed_outside) {
  ir::Graph s;
  s.model_name = g.model_name;
  s.pytorch_version = g.pytorch_version;
  s.source = g.source;
  std::map<ir::TensorId, ir::TensorId> map;
  std::set<ir::TensorId> produced;
  for (auto n : nodes)
    for (auto t : g.nodes[static_cast<std::size_t>(n)].outputs) produced.insert(t);
  auto get = [&](ir::TensorId t) {
    auto it = map.find(t);
    if (it != map.end()) return it->second;
    ir::TensorInfo info = g.tensor(t);
    if (info.kind == ir::TensorKind::intermediate && !produced.count(t)) info.kind = ir::TensorKind::input;
    info.producer = -1;
    ir::TensorId id = s.add_tensor(info);
    map[t] = id;
    if (info.kind == ir::TensorKind::input) s.inputs.push_back(id);
    if (info.kind == ir::TensorKind::weight || info.kind == ir::TensorKind::constant) {
      s.weights.push_back(id);
      if (auto c = g.constants.find(info.weight_key); c != g.constants.end()) s.constants[c->first] = c->second;
    }
    return id;
  };
  for (auto n : nodes) {
    const ir::Node& src = g.nodes[static_cast<std::size_t>(n)];
    ir::Node d{src.name, src.op_type, {}, {}, src.attrs};
    for (auto t : src.inputs) d.inputs.push_back(get(t));
    for (auto t : src.outputs) d.outputs.push_back(get(t));
    s.nodes.push_back(std::move(d));
  }
  // Graph inputs keep the original order where they are original graph inputs.
  std::vector<ir::TensorId> ordered;
  for (auto t : g.inputs)
    if (auto it = map.find(t); it != map.end()) ordered.push_back(it->second);
  for (auto t : s.inputs)
    if (std::find(ordered.begin(), ordered.end(), t) == ordered.end()) ordered.push_back(t);
  s.inputs = ordered;
  for (auto t : g.outputs)
    if (auto it = map.find(t); it != map.end() && produced.count(t)) s.outputs.push_back(it->second);
  for (auto t : produced)
    if (needed_outside[static_cast<std::size_t>(t)] && std::find(g.outputs.begin(), g.outputs.end(), t) == g.outputs.end())
      s.outputs.push_back(map.at(t));
  passes::renumber_producers(s);
  return s;
}

NPUSIM_FUNC Plan make_plan(const ir::Graph& g, const std::vector<NodeSupport>& sup, const passes::DTypePolicy& pol,
                           const std::vector<std::int32_t>* stage_of) {
  Plan p;
  p.parts = split(g, sup, stage_of);
  std::vector<std::int32_t> part_of(g.nodes.size(), -1);
  for (std::size_t k = 0; k < p.parts.size(); ++k)
    for (auto n : p.parts[k].nodes) part_of[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(k);
  // A tensor is needed outside its part when another part reads it (or it is a graph output).
  std::vector<bool> outside(g.tensors.size(), false);
  std::map<std::pair<ir::TensorId, std::int32_t>, bool> seen;
  auto bytes = [&](ir::TensorId t) { return numel(g.tensor(t).shape) * static_cast<std::int64_t>(dtype_size(pol.storage(g.tensor(t).dtype))); };
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    for (auto t : g.nodes[i].inputs) {
      const auto& info = g.tensor(t);
      std::int32_t to = part_of[i];
      std::int32_t from = info.kind == ir::TensorKind::intermediate ? part_of[static_cast<std::size_t>(info.producer)]
                          : info.kind == ir::TensorKind::input    ? -1
                                                                   : -2;  // weights are bound per part
      if (from == to || from == -2) continue;
      if (from >= 0) outside[static_cast<std::size_t>(t)] = true;
      if (seen.emplace(std::make_pair(t, to), true).second) p.transfers.push_back({info.name, from, to, bytes(t)});
    }
  for (auto t : g.outputs) {
    const auto& info = g.tensor(t);
    std::int32_t from = info.kind == ir::TensorKind::intermediate ? part_of[static_cast<std::size_t>(info.producer)] : -1;
    p.transfers.push_back({info.name, from, -1, bytes(t)});
  }
  std::sort(p.transfers.begin(), p.transfers.end(), [](const Transfer& a, const Transfer& b) {
    return a.to == b.to ? a.from < b.from : (a.to < 0 ? false : b.to < 0 ? true : a.to < b.to);
  });
  for (const Part& part : p.parts) p.graphs.push_back(extract(g, part.nodes, outside));
  return p;
}

}  // namespace npusim::inline NPUSIM_ABI::partition
