// Definitions for npusim/program/compiler.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/ops/registry.hpp"
#include <algorithm>

#include "npusim/partition/partitioner.hpp"
#include "npusim/passes/basic.hpp"
#include "npusim/passes/bn_fold.hpp"
#include "npusim/passes/broadcast_fold.hpp"
#include "npusim/passes/functionalize.hpp"
#include "npusim/passes/lower_einsum.hpp"
#include "npusim/passes/pad_channels.hpp"
#include "npusim/passes/quantize_weights.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/plan/buffer_plan.hpp"
#include "npusim/version.hpp"
#include "npusim/program/compiler.hpp"

namespace npusim::inline NPUSIM_ABI::program {

NPUSIM_FUNC passes::DTypePolicy run_passes(ir::Graph& g, const partition::TargetInfo& target, const CompileOptions& opt,
                                           CompiledProgram& p) {
  auto count = [&](const char* pass, std::int64_t n) {
    p.stats.pass_counts.set(pass, ir::AttrValue(n));
    if (opt.verify) passes::verify(g, pass);
  };
  count("functionalize_writes", passes::functionalize_writes(g));
  count("canonicalize_aliases", passes::canonicalize_aliases(g));
  count("lower_einsum", passes::lower_einsum(g));
  count("normalize_inplace", passes::normalize_inplace(g));
  count("remove_noops", passes::remove_noops(g));
  if (opt.fold_batch_norm) {
    auto r = passes::fold_batch_norms(g, p.recipes);
    count("fold_batch_norm", r.folded);
    p.stats.pass_counts.set("batch_norm_kept", ir::AttrValue(static_cast<std::int64_t>(r.kept)));
  }
  count("fold_constants", passes::fold_constants(g, opt.evaluator));
  count("fold_broadcasts", passes::fold_broadcasts(g));
  passes::DTypePolicy pol = passes::make_dtype_policy(g, opt.compute);
  if (target.limits.channel_alignment_bytes > 0) {
    const auto elems = target.limits.channel_alignment_bytes / static_cast<std::int64_t>(dtype_size(opt.compute));
    count("pad_channels", passes::pad_channels(g, elems, p.recipes));
  }
  count("eliminate_dead_code", passes::eliminate_dead_code(g));
  if (opt.int8.enabled()) {
    const auto r = passes::quantize_int8(g, p.recipes, opt.int8);
    count("quantize_int8", r.integer_ops);
    p.stats.pass_counts.set("int8_quantize_nodes", ir::AttrValue(r.quantize_nodes));
    p.stats.pass_counts.set("int8_dequantize_nodes", ir::AttrValue(r.dequantize_nodes));
    p.stats.pass_counts.set("int8_folded_activations", ir::AttrValue(r.folded_activations));
    p.stats.pass_counts.set("int8_max_pools", ir::AttrValue(r.int8_pools));
  }
  if (!opt.weight_quant.format.empty() || !opt.weight_quant.keep.empty())
    count("quantize_weights", passes::quantize_linear_weights(g, opt.weight_quant));
  return pol;
}

NPUSIM_FUNC CompiledProgram compile(ir::Graph g, const partition::TargetInfo& target, const CompileOptions& opt) {
  CompiledProgram p;
  p.model_name = g.model_name;
  p.source = g.source;
  p.npusim_version = version_string;
  p.target = target.name;
  p.compute = opt.compute;
  p.limits = target.limits;
  if (!target.dtypes.empty() && std::find(target.dtypes.begin(), target.dtypes.end(), opt.compute) == target.dtypes.end())
    throw Error(ErrorCode::unsupported, "target '" + target.name + "' does not compute in " + std::string(dtype_name(opt.compute)));
  for (auto t : g.inputs) p.inputs.push_back({g.tensor(t).name, g.tensor(t).shape, g.tensor(t).dtype});
  for (auto t : g.outputs) p.outputs.push_back({g.tensor(t).name, g.tensor(t).shape, g.tensor(t).dtype});
  p.stats.nodes_in = static_cast<std::int64_t>(g.nodes.size());
  if (const auto f = quant::parse_block_format(opt.weight_quant.format)) {
    const std::string name(quant::to_string(*f));
    if (!target.reads_weight_format(name))
      throw Error(ErrorCode::unsupported, "target '" + target.name + "' has no linear kernel for " + name + " weights yet",
                  {.file = g.source, .expected = "a target with " + name + " linear kernels (see docs/quantization.md)"});
  }

  ops::check_graph(g);
  opt.force.check_nodes(g);  // names the user gave, checked before passes rename or remove nodes
  const passes::DTypePolicy pol = run_passes(g, target, opt, p);
  p.stats.nodes_after_passes = static_cast<std::int64_t>(g.nodes.size());
  for (const std::string& name : opt.observe) {
    const auto t = g.find(name);
    if (!t || (g.tensor(*t).producer < 0 && g.tensor(*t).kind == ir::TensorKind::intermediate))
      throw Error(ErrorCode::graph, "a tensor to observe is not computed by the compiled graph", {.file = g.source, .tensor = name});
    if (std::find(g.outputs.begin(), g.outputs.end(), *t) != g.outputs.end() || std::find(g.inputs.begin(), g.inputs.end(), *t) != g.inputs.end()) continue;
    g.outputs.push_back(*t);
    p.outputs.push_back({g.tensor(*t).name, g.tensor(*t).shape, g.tensor(*t).dtype});
  }

  auto sup = partition::node_support(g, target, opt.force);
  bool need_fallback = std::any_of(sup.begin(), sup.end(), [](const auto& s) { return !s.on_target; });
  if (need_fallback && target.fallback.empty()) {
    for (std::size_t i = 0; i < sup.size(); ++i)
      if (!sup[i].on_target)
        throw Error(ErrorCode::unsupported, sup[i].reason + ", and the target has no fallback", {.file = g.source, .node = g.nodes[i].name});
  }
  std::optional<partition::StagePlan> stages;
  if (opt.stages != 1) stages = partition::assign_stages(g, opt.stages, pol);
  partition::Plan plan = partition::make_plan(g, sup, pol, stages ? &stages->stage_of : nullptr);
  p.transfers = plan.transfers;
  static const std::vector<fusion::PatternInfo> no_patterns;
  for (std::size_t k = 0; k < plan.parts.size(); ++k) {
    Partition part;
    part.fallback = plan.parts[k].fallback;
    part.stage = plan.parts[k].stage;
    part.target = part.fallback ? target.fallback : target.name;
    part.graph = std::move(plan.graphs[k]);
    part.kernels = fusion::fuse(part.graph, part.fallback ? no_patterns : target.patterns, pol, opt.fuse);
    for (const Kernel& kr : fusion::fuse(part.graph, no_patterns, pol)) p.stats.kernels_unfused += kr.kind != "view";
    part.plan = plan::plan_buffers(part.graph, part.kernels, pol);
    for (const Kernel& kr : part.kernels) {
      ++p.stats.kernels;
      p.stats.view_kernels += kr.kind == "view";
      p.stats.fused_kernels += kr.fused();
    }
    p.partitions.push_back(std::move(part));
  }
  return p;
}

}  // namespace npusim::inline NPUSIM_ABI::program
