// Definitions for npusim/program/inspect.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <map>
#include <sstream>

#include "npusim/config.hpp"
#include "npusim/core/printable.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/program/inspect.hpp"

namespace npusim::inline NPUSIM_ABI::program {

NPUSIM_FUNC std::string stage_note(const CompiledProgram& p, const partition::Transfer& t) {
  auto stage = [&](std::int32_t k) { return p.partitions[static_cast<std::size_t>(k)].stage; };
  if (t.from < 0 || t.to < 0 || stage(t.from) == stage(t.to)) return {};
  return "  (stage " + std::to_string(stage(t.from)) + " -> " + std::to_string(stage(t.to)) + ")";
}

NPUSIM_FUNC std::vector<StageSummary> stage_summaries(const CompiledProgram& p) {
  std::vector<StageSummary> v(static_cast<std::size_t>(stage_count(p)));
  for (std::size_t k = 0; k < p.partitions.size(); ++k) {
    const Partition& part = p.partitions[k];
    StageSummary& s = v[static_cast<std::size_t>(part.stage)];
    s.partitions.push_back(static_cast<std::int32_t>(k));
    std::vector<bool> used(part.graph.tensors.size(), false);
    for (const auto& n : part.graph.nodes)
      for (auto t : n.inputs) used[static_cast<std::size_t>(t)] = true;
    for (auto w : part.graph.weights)
      if (used[static_cast<std::size_t>(w)]) ++s.weights, s.weight_bytes += part.plan.tensors[static_cast<std::size_t>(w)].bytes;
  }
  auto stage = [&](std::int32_t k) { return p.partitions[static_cast<std::size_t>(k)].stage; };
  for (const auto& t : p.transfers) {
    if (t.to >= 0 && (t.from < 0 || stage(t.from) != stage(t.to))) {
      auto& s = v[static_cast<std::size_t>(stage(t.to))];
      (t.from < 0 ? s.bytes_from_caller : s.bytes_in) += t.bytes;
    }
    if (t.to < 0 && t.from >= 0) v[static_cast<std::size_t>(stage(t.from))].bytes_to_caller += t.bytes;
  }
  return v;
}

NPUSIM_FUNC std::string describe_stages(const CompiledProgram& p) {
  std::ostringstream s;
  s << "stages (" << stage_count(p) << "; bytes per run):\n";
  const auto v = stage_summaries(p);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const StageSummary& st = v[i];
    s << "  stage " << i << ": partition" << (st.partitions.size() > 1 ? "s " : " ") << st.partitions.front();
    if (st.partitions.size() > 1) s << "-" << st.partitions.back();
    s << ", weights " << st.weights << " (" << human_bytes(st.weight_bytes) << "), in from earlier stages " << human_bytes(st.bytes_in)
      << ", from the caller " << human_bytes(st.bytes_from_caller) << ", out to the caller " << human_bytes(st.bytes_to_caller) << "\n";
  }
  return s.str();
}

NPUSIM_FUNC std::string human_bytes(std::int64_t b) {
  char buf[32];
  if (b >= (std::int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= (1 << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

NPUSIM_FUNC std::string embedded_text(const EmbeddedWeightsInfo& w) {
  if (!w.present) return "weights not embedded (run with --weights)\n";
  std::string notes;
  for (const auto& n : w.notes) notes += "; " + n;
  return "weights embedded: " + std::to_string(w.tensors) + " tensors" + (w.aliases ? " + " + std::to_string(w.aliases) + " aliases" : "") +
         ", " + human_bytes(static_cast<std::int64_t>(w.bytes)) + " (section " + human_bytes(static_cast<std::int64_t>(w.section_bytes)) +
         ", XXH64 per " + human_bytes(static_cast<std::int64_t>(w.block_bytes)) + " block)" + notes + "\n";
}

NPUSIM_FUNC std::string inspect_text(const CompiledProgram& p, const InspectOptions& o) {
  std::ostringstream s;
  s << "npubin  model " << printable(p.model_name) << "  target " << printable(p.target) << "  compute " << dtype_name(p.compute);
  if (const ir::AttrValue* q = p.stats.pass_counts.find("quantize_int8"); q && q->is_int() && q->as_int() > 0)
    s << " (int8: " << q->as_int() << " integer ops, the others in " << dtype_name(p.compute) << ")";
  s << "  npusim " << printable(p.npusim_version) << "\n";
  s << "source  " << printable(p.source) << "\n";
  if (o.embedded) s << embedded_text(*o.embedded);
  s << "inputs ";
  for (const auto& io : p.inputs) s << " " << printable(io.name) << " " << dtype_name(io.dtype) << to_string(io.shape);
  s << "\noutputs";
  for (const auto& io : p.outputs) s << " " << printable(io.name) << " " << dtype_name(io.dtype) << to_string(io.shape);
  s << "\nnodes   " << p.stats.nodes_in << " in the IR, " << p.stats.nodes_after_passes << " after passes (";
  for (std::size_t i = 0; i < p.stats.pass_counts.items.size(); ++i)
    s << (i ? ", " : "") << printable(p.stats.pass_counts.items[i].first) << " " << printable(ir::to_string(p.stats.pass_counts.items[i].second));
  s << ")\n";
  s << "kernels " << p.stats.kernels_unfused << " before fusion -> " << (p.stats.kernels - p.stats.view_kernels) << " after ("
    << p.stats.fused_kernels << " fused) + " << p.stats.view_kernels << " zero-copy views\n";
  std::map<std::string, int> by_kind;
  for (const auto& part : p.partitions)
    for (const auto& k : part.kernels) ++by_kind[k.kind];
  s << "by kind";
  for (const auto& [k, n] : by_kind) s << "  " << printable(k) << " " << n;
  s << "\n";
  for (std::size_t pi = 0; pi < p.partitions.size(); ++pi) {
    const Partition& part = p.partitions[pi];
    const auto& b = part.plan;
    s << "\npartition " << pi << ": " << printable(part.target) << (part.fallback ? " (fallback)" : "")
      << (stage_count(p) > 1 ? ", stage " + std::to_string(part.stage) : std::string()) << ", " << part.kernels.size()
      << " kernels, arena " << human_bytes(b.arena_bytes) << " (liveness bound " << human_bytes(b.lower_bound_bytes) << ", "
      << (b.lower_bound_bytes ? static_cast<double>(b.arena_bytes) / static_cast<double>(b.lower_bound_bytes) : 1.0)
      << "x; one buffer per tensor would be " << human_bytes(b.naive_bytes) << "), " << b.in_place << " in place\n";
    const ir::Graph& g = part.graph;
    auto tname = [&](ir::TensorId t) {
      const auto& i = g.tensor(t);
      return printable(i.name) + ":" + std::string(dtype_short_name(b.tensors[static_cast<std::size_t>(t)].storage)) + to_string(i.shape);
    };
    if (o.kernels) {
      for (std::size_t ki = 0; ki < part.kernels.size(); ++ki) {
        const Kernel& k = part.kernels[ki];
        s << "  k" << ki << "  " << printable(k.kind);
        if (k.fused()) {
          s << " [";
          for (std::size_t m = 0; m < k.nodes.size(); ++m) s << (m ? " " : "") << printable(g.nodes[static_cast<std::size_t>(k.nodes[m])].name);
          s << "]";
        } else {
          s << " " << printable(g.nodes[static_cast<std::size_t>(k.nodes[0])].name);
        }
        for (const auto& [pk, pv] : k.params.items) s << " " << printable(pk) << "=" << printable(ir::to_string(pv));
        s << "  (";
        for (std::size_t i = 0; i < k.inputs.size(); ++i) s << (i ? ", " : "") << tname(k.inputs[i]);
        s << ") -> (";
        for (std::size_t i = 0; i < k.outputs.size(); ++i) s << (i ? ", " : "") << tname(k.outputs[i]);
        s << ")\n";
        if (o.kernel_note)
          if (const std::string note = o.kernel_note(pi, ki); !note.empty()) s << "        " << note << "\n";
      }
    }
    if (o.buffers) {
      s << "  buffers (tensor, place, storage, bytes, offset, live kernels):\n";
      for (std::size_t t = 0; t < b.tensors.size(); ++t) {
        const auto& tp = b.tensors[t];
        if (tp.place != plan::Place::arena && tp.place != plan::Place::view) continue;
        s << "    " << printable(g.tensors[t].name) << "  " << plan::place_name(tp.place) << "  " << dtype_short_name(tp.storage) << "  " << tp.bytes
          << "  @" << tp.offset << "  [" << tp.first << ", " << tp.last << "]";
        if (tp.place == plan::Place::view) s << "  of " << printable(g.tensor(tp.root).name);
        s << "\n";
      }
    }
    std::int64_t wbytes = 0, wcount = 0;
    std::vector<bool> used(g.tensors.size(), false);
    for (const auto& n : g.nodes)
      for (auto t : n.inputs) used[static_cast<std::size_t>(t)] = true;
    for (auto w : g.weights)
      if (used[static_cast<std::size_t>(w)]) ++wcount, wbytes += b.tensors[static_cast<std::size_t>(w)].bytes;
    s << "  weights: " << wcount << " bound, " << human_bytes(wbytes) << " as stored\n";
  }
  if (!p.recipes.empty()) {
    s << "\nrecipes (" << p.recipes.size() << "):\n";
    for (const auto& r : p.recipes) {
      s << "  " << printable(r.kind) << " ->";
      for (const auto& out : r.outputs) s << " " << printable(out);
      s << "  from";
      for (const auto& in : r.inputs) s << " " << (in.empty() ? std::string("-") : printable(in));
      for (const auto& [k, v] : r.params.items) s << "  " << printable(k) << "=" << printable(ir::to_string(v));
      s << "\n";
    }
  }
  if (p.partitions.size() > 1) {
    s << "\ntransfers:\n";
    for (const auto& t : p.transfers)
      if (t.from >= 0 && t.to >= 0) s << "  " << printable(t.tensor) << "  partition " << t.from << " -> " << t.to << "  " << human_bytes(t.bytes) << stage_note(p, t) << "\n";
  }
  if (stage_count(p) > 1) s << "\n" << describe_stages(p);
  return s.str();
}

NPUSIM_FUNC std::string inspect_json(const CompiledProgram& p, const std::optional<EmbeddedWeightsInfo>& embedded) {
  using ir::json;
  auto attrs = [](const ir::AttrMap& m) {
    json j = json::object();
    for (const auto& [k, v] : m.items) j[k] = ir::to_string(v);
    return j;
  };
  json j;
  j["model_name"] = p.model_name, j["target"] = p.target, j["compute"] = dtype_name(p.compute), j["npusim_version"] = p.npusim_version;
  j["source"] = p.source;
  if (embedded)
    j["embedded_weights"] = {{"present", embedded->present}, {"tensors", embedded->tensors}, {"aliases", embedded->aliases},
                             {"bytes", embedded->bytes}, {"section_bytes", embedded->section_bytes}, {"block_bytes", embedded->block_bytes}};
  j["stats"] = {{"nodes_in", p.stats.nodes_in}, {"nodes_after_passes", p.stats.nodes_after_passes}, {"kernels_unfused", p.stats.kernels_unfused},
                {"kernels", p.stats.kernels}, {"view_kernels", p.stats.view_kernels}, {"fused_kernels", p.stats.fused_kernels},
                {"pass_counts", attrs(p.stats.pass_counts)}};
  for (const auto& io : p.inputs) j["inputs"].push_back({{"name", io.name}, {"shape", io.shape}, {"dtype", dtype_name(io.dtype)}});
  for (const auto& io : p.outputs) j["outputs"].push_back({{"name", io.name}, {"shape", io.shape}, {"dtype", dtype_name(io.dtype)}});
  for (const auto& part : p.partitions) {
    json jp;
    jp["target"] = part.target, jp["fallback"] = part.fallback, jp["stage"] = part.stage;
    jp["arena_bytes"] = part.plan.arena_bytes, jp["naive_bytes"] = part.plan.naive_bytes;
    jp["lower_bound_bytes"] = part.plan.lower_bound_bytes, jp["in_place"] = part.plan.in_place;
    const ir::Graph& g = part.graph;
    for (const auto& k : part.kernels) {
      json jk;
      jk["kind"] = k.kind;
      for (auto n : k.nodes) jk["nodes"].push_back({{"name", g.nodes[static_cast<std::size_t>(n)].name}, {"op", g.nodes[static_cast<std::size_t>(n)].op_type}});
      for (auto t : k.inputs) jk["inputs"].push_back(g.tensor(t).name);
      for (auto t : k.outputs) jk["outputs"].push_back(g.tensor(t).name);
      jk["params"] = attrs(k.params);
      jp["kernels"].push_back(jk);
    }
    for (std::size_t t = 0; t < part.plan.tensors.size(); ++t) {
      const auto& tp = part.plan.tensors[t];
      if (tp.place == plan::Place::none) continue;
      jp["buffers"].push_back({{"tensor", g.tensors[t].name}, {"place", plan::place_name(tp.place)}, {"storage", dtype_name(tp.storage)},
                               {"bytes", tp.bytes}, {"offset", tp.offset}, {"first", tp.first}, {"last", tp.last},
                               {"root", tp.root >= 0 ? g.tensor(tp.root).name : ""}});
    }
    for (auto w : g.weights) jp["weights"].push_back({{"placeholder", g.tensor(w).name}, {"key", g.tensor(w).weight_key}});
    j["partitions"].push_back(jp);
  }
  for (const auto& t : p.transfers) j["transfers"].push_back({{"tensor", t.tensor}, {"from", t.from}, {"to", t.to}, {"bytes", t.bytes}});
  for (const auto& r : p.recipes) j["recipes"].push_back({{"kind", r.kind}, {"inputs", r.inputs}, {"outputs", r.outputs}, {"params", attrs(r.params)}});
  return j.dump(1);
}

}  // namespace npusim::inline NPUSIM_ABI::program
