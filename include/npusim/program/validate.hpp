// Structural checks of a CompiledProgram read from bytes. The reader has already checked that
// every index lies in range; this checks what the runtime relies on beyond that, so a damaged or
// hostile .npubin is an error here rather than a crash (or a silent wrong answer) later:
//   graph     unique tensor names, tensor kinds agreeing with the input/weight lists, every
//             intermediate produced by exactly the node its producer link names, every node input
//             produced earlier (so no cycles), graph outputs produced;
//   kernels   member nodes cover every node exactly once, in an order that respects dependencies
//             (the reference runs nodes in kernel order);
//   plan      stored sizes agree with shape and storage dtype, arena placements lie inside an
//             arena no larger than the tensor cap, views rooted at a real buffer;
//   program   each partition's inputs come from the caller or an earlier partition, and every
//             program output is produced;
//   recipes   known kinds with the inputs, outputs and params they need; each derived weight
//             produced once and read only by later recipes (no cycles).
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

namespace validate_detail {

[[noreturn]] inline void fail(const std::string& what, ErrorContext ctx = {}) {
  throw Error(ErrorCode::parse, what, std::move(ctx));
}

inline void check_graph_structure(const ir::Graph& g) {
  const std::size_t T = g.tensors.size();
  std::unordered_set<std::string> names;
  for (const auto& t : g.tensors)
    if (!names.insert(t.name).second) fail("duplicate tensor name", {.tensor = t.name});
  auto expect_kind = [&](ir::TensorId id, bool ok, const char* list) {
    if (!ok) fail(std::string("tensor listed in ") + list + " has kind '" + ir::tensor_kind_name(g.tensor(id).kind) + "'",
                  {.tensor = g.tensor(id).name});
  };
  for (auto id : g.inputs) expect_kind(id, g.tensor(id).kind == ir::TensorKind::input, "inputs");
  for (auto id : g.weights)
    expect_kind(id, g.tensor(id).kind == ir::TensorKind::weight || g.tensor(id).kind == ir::TensorKind::constant, "weights");
  std::vector<bool> defined(T, false);
  for (std::size_t i = 0; i < T; ++i) {
    const auto& t = g.tensors[i];
    if (t.kind != ir::TensorKind::intermediate) {
      if (t.producer != -1) fail("a non-intermediate tensor names a producer node", {.tensor = t.name});
      defined[i] = true;
    }
  }
  std::vector<bool> produced(T, false);
  for (std::size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ir::Node& n = g.nodes[ni];
    for (auto t : n.inputs)
      if (!defined[static_cast<std::size_t>(t)])
        fail("node reads a tensor before it is produced (a cycle, or nodes out of topological order)",
             {.node = n.name, .tensor = g.tensor(t).name});
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const auto o = static_cast<std::size_t>(n.outputs[k]);
      const auto& t = g.tensors[o];
      if (t.kind != ir::TensorKind::intermediate || produced[o] || t.producer != static_cast<std::int32_t>(ni) ||
          t.producer_output != static_cast<std::int32_t>(k))
        fail("node output disagrees with the tensor's producer link (or is produced twice)", {.node = n.name, .tensor = t.name,
             .expected = "producer " + std::to_string(ni) + " output " + std::to_string(k),
             .found = "producer " + std::to_string(t.producer) + " output " + std::to_string(t.producer_output)});
      produced[o] = defined[o] = true;
    }
  }
  // An intermediate no node produces may stay in the table (passes leave them) if nothing reads it.
  for (std::size_t i = 0; i < T; ++i)
    if (g.tensors[i].kind == ir::TensorKind::intermediate && !produced[i] && g.tensors[i].producer != -1)
      fail("intermediate tensor is not an output of its producer node", {.tensor = g.tensors[i].name});
  for (auto t : g.outputs)
    if (!defined[static_cast<std::size_t>(t)]) fail("graph output is produced by no node", {.tensor = g.tensor(t).name});
}

inline void check_schedule(const Partition& p) {
  const ir::Graph& g = p.graph;
  std::vector<bool> scheduled(g.nodes.size(), false), ready(g.tensors.size(), false);
  for (std::size_t i = 0; i < g.tensors.size(); ++i) ready[i] = g.tensors[i].kind != ir::TensorKind::intermediate;
  std::size_t count = 0;
  for (const Kernel& k : p.kernels)
    for (auto ni : k.nodes) {
      const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
      if (scheduled[static_cast<std::size_t>(ni)]) fail("a node belongs to two kernels", {.node = n.name});
      scheduled[static_cast<std::size_t>(ni)] = true, ++count;
      for (auto t : n.inputs)
        if (!ready[static_cast<std::size_t>(t)])
          fail("kernel schedule runs a node before one of its inputs is produced", {.node = n.name, .tensor = g.tensor(t).name});
      for (auto t : n.outputs) ready[static_cast<std::size_t>(t)] = true;
    }
  if (count != g.nodes.size())
    fail("kernels do not cover every node", {.expected = std::to_string(g.nodes.size()) + " nodes", .found = std::to_string(count)});
}

inline void check_plan(const Partition& p) {
  const ir::Graph& g = p.graph;
  const plan::BufferPlan& b = p.plan;
  constexpr std::int64_t max_arena = std::int64_t{1} << 46;  // the tensor cap (64 TiB)
  if (b.arena_bytes < 0 || b.arena_bytes > max_arena)
    throw Error(ErrorCode::resource, "the program's arena size is implausible",
                {.expected = "0.." + std::to_string(max_arena) + " bytes", .found = std::to_string(b.arena_bytes) + " bytes"});
  for (std::size_t i = 0; i < b.tensors.size(); ++i) {
    const plan::TensorPlan& t = b.tensors[i];
    const ir::TensorInfo& info = g.tensors[i];
    if (t.place != plan::Place::arena && t.place != plan::Place::view) continue;
    const std::int64_t want = numel(info.shape) * static_cast<std::int64_t>(dtype_size(t.storage));  // shapes are checked
    if (t.bytes != want)
      fail("buffer plan size disagrees with the tensor's shape and storage type",
           {.tensor = info.name, .expected = std::to_string(want) + " bytes", .found = std::to_string(t.bytes) + " bytes"});
    if (t.place == plan::Place::arena && (t.offset > b.arena_bytes || t.bytes > b.arena_bytes - t.offset))
      fail("tensor placed outside the arena", {.tensor = info.name, .expected = "end <= " + std::to_string(b.arena_bytes),
                                                .found = "offset " + std::to_string(t.offset) + " + " + std::to_string(t.bytes) + " bytes"});
    if (t.place == plan::Place::view) {
      if (t.root < 0 || b.tensors[static_cast<std::size_t>(t.root)].place == plan::Place::view ||
          b.tensors[static_cast<std::size_t>(t.root)].bytes < t.bytes)
        fail("view is not rooted at a buffer at least as large as itself", {.tensor = info.name});
    }
  }
}

}  // namespace validate_detail

inline void validate(const CompiledProgram& p) {
  using namespace validate_detail;
  std::set<std::string, std::less<>> available;  // tensors the caller or earlier partitions provide
  for (const auto& io : p.inputs) available.insert(io.name);
  for (std::size_t k = 0; k < p.partitions.size(); ++k) {
    const Partition& part = p.partitions[k];
    try {
      check_graph_structure(part.graph);
      check_schedule(part);
      check_plan(part);
      for (auto t : part.graph.inputs)
        if (!available.count(part.graph.tensor(t).name))
          fail("partition input is neither a program input nor an earlier partition's output", {.tensor = part.graph.tensor(t).name});
    } catch (const Error& e) {
      const std::string prefix = e.code() == ErrorCode::parse ? "malformed .npubin: partition " : "partition ";
      throw Error(e.code(), prefix + std::to_string(k) + ": " + e.message(), e.context());
    }
    for (auto t : part.graph.outputs) available.insert(part.graph.tensor(t).name);
  }
  for (const auto& io : p.outputs)
    if (!available.count(io.name)) fail("malformed .npubin: program output is produced by no partition", {.tensor = io.name});
  // Recipes: what each kind needs, and derived keys produced once, read only by later recipes
  // (the loader resolves them recursively: a cycle would never end).
  std::map<std::string, const weights::Recipe*, std::less<>> derived;
  for (const auto& r : p.recipes) {
    weights::check_recipe(r);
    for (const auto& in : r.inputs)
      if (!in.empty() && std::find(r.outputs.begin(), r.outputs.end(), in) != r.outputs.end())
        fail("malformed .npubin: a " + r.kind + " recipe reads its own output", {.tensor = in});
    for (const auto& out : r.outputs)
      if (auto [it, fresh] = derived.emplace(out, &r); !fresh && !(*it->second == r))
        fail("malformed .npubin: two different recipes produce the same weight", {.tensor = out});
  }
  for (std::size_t i = 0; i < p.recipes.size(); ++i)
    for (const auto& in : p.recipes[i].inputs)
      for (std::size_t j = i + 1; j < p.recipes.size(); ++j)
        if (std::find(p.recipes[j].outputs.begin(), p.recipes[j].outputs.end(), in) != p.recipes[j].outputs.end())
          fail("malformed .npubin: a " + p.recipes[i].kind + " recipe reads a weight a later recipe derives", {.tensor = in});
}

}  // namespace npusim::inline NPUSIM_ABI::program
