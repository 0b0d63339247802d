// Definitions for npusim/passes/const_fold.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/const_fold.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC int fold_constants(ir::Graph& g, const Evaluator& eval, std::int64_t max_bytes) {
  if (!eval) return 0;
  std::vector<Tensor> known(g.tensors.size());
  for (TensorId w : g.weights)
    if (auto it = g.constants.find(g.tensor(w).weight_key); it != g.constants.end()) known[static_cast<std::size_t>(w)] = it->second;
  const auto outs = graph_output_mask(g);
  std::vector<std::size_t> folded_nodes;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.outputs.empty()) continue;
    bool all = true, keeps_output = false;
    std::vector<Tensor> in;
    for (TensorId t : n.inputs) {
      all = all && known[static_cast<std::size_t>(t)].defined();
      if (all) in.push_back(known[static_cast<std::size_t>(t)]);
    }
    std::int64_t bytes = 0;
    for (TensorId t : n.outputs) {
      bytes += numel(g.tensor(t).shape) * static_cast<std::int64_t>(dtype_size(g.tensor(t).dtype));
      keeps_output = keeps_output || outs[static_cast<std::size_t>(t)];
    }
    if (!all || keeps_output || bytes > max_bytes) continue;
    std::vector<Tensor> vals = eval(g, n, in);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) known[static_cast<std::size_t>(n.outputs[k])] = vals.at(k);
    folded_nodes.push_back(i);
  }
  if (folded_nodes.empty()) return 0;
  // Every output of a folded node becomes a constant tensor; readers are rewired to it.
  std::vector<std::pair<TensorId, TensorId>> repl;
  for (std::size_t i : folded_nodes) {
    for (TensorId t : g.nodes[i].outputs) {
      const ir::TensorInfo info = g.tensor(t);
      std::string key = "npusim.const." + info.name;
      g.constants[key] = known[static_cast<std::size_t>(t)].to(info.dtype);
      TensorId c = g.add_tensor({fresh_name(g, "c_npusim_" + info.name), info.shape, info.dtype, ir::TensorKind::constant, -1, 0, key});
      g.weights.push_back(c);
      repl.emplace_back(t, c);
    }
  }
  Edit e(g);
  for (auto [from, to] : repl) e.replace(from, to);
  for (std::size_t i : folded_nodes) e.remove(i);
  e.apply(g);
  // Constants that no node reads any more (inputs of folded nodes) are dropped from the program.
  std::vector<bool> used(g.tensors.size(), false);
  for (const ir::Node& n : g.nodes)
    for (TensorId t : n.inputs) used[static_cast<std::size_t>(t)] = true;
  for (auto it = g.constants.begin(); it != g.constants.end();) {
    bool any = false;
    for (TensorId w : g.weights)
      if (g.tensor(w).weight_key == it->first && used[static_cast<std::size_t>(w)]) any = true;
    it = any ? std::next(it) : g.constants.erase(it);
  }
  return static_cast<int>(folded_nodes.size());
}

}  // namespace npusim::inline NPUSIM_ABI::passes
