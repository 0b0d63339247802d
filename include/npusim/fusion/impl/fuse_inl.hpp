// Definitions for npusim/fusion/fuse.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/fusion/fuse.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

NPUSIM_FUNC bool is_view_node(const GraphView& v, std::int32_t n, const passes::DTypePolicy& pol) {
  const ir::Node& node = v.node(n);
  if (v.is<ops::ToDtype>(n)) return pol.storage(v.tensor(node.inputs[0]).dtype) == pol.storage(v.tensor(node.outputs[0]).dtype);
  return moves_no_data(v, n);
}

NPUSIM_FUNC std::vector<Kernel> fuse(const ir::Graph& g, std::span<const PatternInfo> patterns, const passes::DTypePolicy& pol,
                                     const FuseOptions& opt) {
  GraphView v(g);
  std::vector<Kernel> ks;
  for (const PatternInfo& p : patterns) {
    if (opt.disabled.count(p.name)) continue;
    for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
      if (v.taken(i)) continue;
      auto m = p.match(v, i);
      if (!m) continue;
      auto k = finalize(v, std::move(*m), p.name, p.early);
      if (!k) continue;
      v.take(k->nodes);
      ks.push_back(std::move(*k));
    }
  }
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
    if (v.taken(i)) continue;
    Kernel k;
    k.kind = is_view_node(v, i, pol) ? "view" : std::string(ops::op_info(v.op(i)).id);
    k.nodes = {i};
    for (TensorId t : v.node(i).inputs)
      if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
    k.outputs = v.node(i).outputs;
    ks.push_back(std::move(k));
  }
  // Each kernel at its last member, unless a kernel it reads is not done yet (a may_run_early
  // kernel's readers): a topological order, ready kernels by last member. Where sorting by last
  // member is topological already (every pattern but may_run_early ones), this is that order.
  std::vector<std::int32_t> kernel_of(g.nodes.size(), -1);
  for (std::size_t k = 0; k < ks.size(); ++k)
    for (auto n : ks[k].nodes) kernel_of[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(k);
  std::vector<std::vector<std::size_t>> readers(ks.size());
  std::vector<int> waiting(ks.size(), 0);
  for (std::size_t k = 0; k < ks.size(); ++k) {
    std::vector<std::int32_t> from;
    for (auto t : ks[k].inputs)
      if (std::int32_t p = v.producer(t); p >= 0 && kernel_of[static_cast<std::size_t>(p)] != static_cast<std::int32_t>(k)) from.push_back(kernel_of[static_cast<std::size_t>(p)]);
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    for (auto f : from) readers[static_cast<std::size_t>(f)].push_back(k), ++waiting[k];
  }
  auto later = [&](std::size_t a, std::size_t b) { return ks[a].nodes.back() > ks[b].nodes.back(); };
  std::vector<std::size_t> ready, order;
  for (std::size_t k = 0; k < ks.size(); ++k)
    if (!waiting[k]) ready.push_back(k);
  std::make_heap(ready.begin(), ready.end(), later);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    const std::size_t k = ready.back();
    ready.pop_back();
    order.push_back(k);
    for (auto r : readers[k])
      if (!--waiting[r]) ready.push_back(r), std::push_heap(ready.begin(), ready.end(), later);
  }
  if (order.size() != ks.size()) throw Error(ErrorCode::graph, "fusion left a cycle between kernels (npusim bug)", {.file = g.source});
  std::vector<Kernel> sorted;
  sorted.reserve(ks.size());
  for (auto k : order) sorted.push_back(std::move(ks[k]));
  return sorted;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
