// Definitions for npusim/runtime/program_runner.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/runtime/program_runner.hpp"

#include <set>

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC ProgramRunner::ProgramRunner(program::CompiledProgram program, const weights::WeightSource* source,
                                         const ExecutorFactories& factories,
                                         weights::BindOptions bind, StagePlacement placement)
    : prog_(std::move(program)), recipes_(source, prog_.recipes), place_(placement) {
  if (place_.link && program::stage_count(prog_) != place_.link->ranks())
    throw Error(ErrorCode::unsupported, "one stage per process: the program's stages and the processes differ (mpirun -np N with --stages N)",
                {.file = prog_.source, .expected = std::to_string(program::stage_count(prog_)) + " processes (mpirun -np " +
                                                    std::to_string(program::stage_count(prog_)) + ")",
                 .found = std::to_string(place_.link->ranks()) + " processes"});
  // The arenas are the program's working memory on whatever target runs it: refuse a program
  // that cannot fit before any executor allocates (the .npubin reader caps each at 64 TiB).
  if (!place_.stage_factories.empty() && place_.stage_factories.size() != static_cast<std::size_t>(program::stage_count(prog_)))
    throw Error(ErrorCode::unsupported, "one set of executors (one device) per stage: the program's stages and the devices differ",
                {.file = prog_.source, .expected = std::to_string(program::stage_count(prog_)) + " devices (or --stages " +
                                                    std::to_string(place_.stage_factories.size()) + ")",
                 .found = std::to_string(place_.stage_factories.size()) + " devices"});
  std::uint64_t arena = 0;
  for (const auto& part : prog_.partitions)
    arena += std::min(static_cast<std::uint64_t>(std::max<std::int64_t>(part.plan.arena_bytes, 0)), UINT64_MAX / 2 - arena);
  try {
    check_allocation(arena, [&] { return "the program's arena of " + std::to_string(arena) + " bytes"; });
  } catch (Error& e) {
    throw e.with_file(prog_.source);
  }
  for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
    const auto& part = prog_.partitions[k];
    if (rank_of(k) != me()) {  // another process runs it: no executor, no weights here
      execs_.push_back(nullptr);
      continue;
    }
    const ExecutorFactories& fs = place_.stage_factories.empty() ? factories : place_.stage_factories[static_cast<std::size_t>(part.stage)];
    auto f = fs.find(part.target);
    if (f == fs.end())
      throw Error(ErrorCode::unsupported, "no executor for target '" + part.target + "' in this build", {.file = prog_.source});
    weights::BindOptions b = bind;
    if (!b.cache) b.cache = &caches_[part.target];  // weights once per target (host tensors: every device's executor uploads its own)
    execs_.push_back(f->second(PartitionContext{prog_, part, k, &recipes_, b}));
  }
  caches_.clear();  // executors hold what they bound
  if (place_.link) {
    for (const auto& io : prog_.inputs) tags_.emplace(io.name, 0);
    for (const auto& part : prog_.partitions) {
      for (auto t : part.graph.inputs) tags_.emplace(part.graph.tensor(t).name, 0);
      for (auto t : part.graph.outputs) tags_.emplace(part.graph.tensor(t).name, 0);
    }
    int n = 0;
    for (auto& [_, v] : tags_) v = n++;
    if (2 * n + 1 > 32767)  // the tag range every MPI guarantees
      throw Error(ErrorCode::unsupported, "too many tensors cross between partitions for the stage link's tags", {.file = prog_.source,
                  .expected = "<= 16383", .found = std::to_string(n)});
  }
  iface_.source = prog_.source;
  for (const auto& io : prog_.inputs) iface_.inputs.push_back(iface_.add_tensor({io.name, io.shape, io.dtype, ir::TensorKind::input, -1, 0, {}}));
  for (const auto& io : prog_.outputs) {
    auto id = iface_.find(io.name);
    iface_.outputs.push_back(id ? *id : iface_.add_tensor({io.name, io.shape, io.dtype, ir::TensorKind::intermediate, -1, 0, {}}));
  }
}

NPUSIM_FUNC std::string ProgramRunner::describe() const {
  std::string s = prog_.target + " (" + std::string(dtype_name(prog_.compute)) + ")";
  if (prog_.partitions.size() > 1) {
    int fb = 0;
    for (const auto& p : prog_.partitions) fb += p.fallback;
    s += ", " + std::to_string(prog_.partitions.size()) + " partitions (" + std::to_string(fb) + " on the fallback)";
  }
  if (const auto n = program::stage_count(prog_); n > 1)
    s += ", " + std::to_string(n) + " stages" + (place_.link ? " in " + std::to_string(place_.link->ranks()) + " processes" : std::string(" in this process"));
  return s;
}

NPUSIM_FUNC void ProgramRunner::set_profiler(Profiler* p) {
  profiler_ = p;
  for (std::size_t k = 0; k < execs_.size(); ++k)
    if (execs_[k]) execs_[k]->set_profiler(p, static_cast<int>(k));
}

NPUSIM_FUNC int ProgramRunner::tag(const std::string& name) const {
  auto it = tags_.find(name);
  if (it == tags_.end()) throw Error(ErrorCode::runtime, "a tensor crossing between stages has no tag (npusim bug)", {.file = prog_.source, .tensor = name});
  return it->second;
}

NPUSIM_FUNC bool ProgramRunner::carry(std::span<const std::pair<std::string, std::string>> pairs) {
  for (const auto& [out, in] : pairs) {
    int producer = -1, readers = 0, reader = -1, out_readers = 0;
    for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
      const ir::Graph& g = prog_.partitions[k].graph;
      for (auto t : g.outputs)
        if (g.tensor(t).name == out) producer = static_cast<int>(k);
      for (auto t : g.inputs) {
        if (g.tensor(t).name == in) ++readers, reader = static_cast<int>(k);
        if (g.tensor(t).name == out) ++out_readers;
      }
    }
    // Kept where its stage runs when one stage makes and reads it; through the caller otherwise.
    const int holder = producer >= 0 && readers == 1 && rank_of(static_cast<std::size_t>(producer)) == rank_of(static_cast<std::size_t>(reader))
                           ? rank_of(static_cast<std::size_t>(producer)) : 0;
    const bool on_device = producer >= 0 && readers == 1 && reader == producer && out_readers == 0 && holder == me() &&
                           execs_[static_cast<std::size_t>(producer)]->carry(out, in);
    carried_[in] = {out, on_device, holder};
  }
  return true;
}

NPUSIM_FUNC bool ProgramRunner::seed_carried(const std::string& input, const Tensor& prefix) {
  auto c = carried_.find(input);
  if (c == carried_.end() || !c->second.on_device) return false;
  for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
    const ir::Graph& g = prog_.partitions[k].graph;
    for (auto t : g.inputs)
      if (g.tensor(t).name == input) return execs_[k] && execs_[k]->seed_carried(input, prefix);
  }
  return false;
}

NPUSIM_FUNC std::vector<Tensor> ProgramRunner::run(std::span<const Tensor> inputs) {
  if (place_.link) {
    if (me() != 0) throw Error(ErrorCode::runtime, "run() belongs to rank 0; rank " + std::to_string(me()) + " serves", {.file = prog_.source});
    place_.link->command(place_.program_id);
  }
  return run_stages(inputs);
}

NPUSIM_FUNC void ProgramRunner::serve() {
  if (!place_.link || me() == 0) throw Error(ErrorCode::runtime, "serve() is for the ranks other than 0 of a staged program", {.file = prog_.source});
  run_stages({});
}

NPUSIM_FUNC std::vector<Tensor> ProgramRunner::run_stages(std::span<const Tensor> inputs) {
  StageLink* link = place_.link;
  const int rank = me();
  std::map<std::string, Tensor, std::less<>> vals;
  if (rank == 0) {
    if (inputs.size() != prog_.inputs.size())
      throw Error(ErrorCode::graph, "wrong number of inputs", {.file = prog_.source, .expected = std::to_string(prog_.inputs.size()),
                                                               .found = std::to_string(inputs.size())});
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& io = prog_.inputs[i];
      if (inputs[i].defined() && inputs[i].shape() != io.shape)
        throw Error(ErrorCode::shape, "input has the wrong shape", {.file = prog_.source, .tensor = io.name, .expected = to_string(io.shape),
                                                                    .found = to_string(inputs[i].shape())});
      // The reference target's rule, for every target: a float input takes any float type, an
      // integer input any integer type, a bool input bool only (no silent float -> int casts).
      if (inputs[i].defined() && (is_floating(io.dtype) != is_floating(inputs[i].dtype()) ||
                                  (io.dtype == DType::boolean) != (inputs[i].dtype() == DType::boolean)))
        throw Error(ErrorCode::dtype, "graph input has the wrong kind of dtype", {.file = prog_.source, .tensor = io.name,
                    .expected = std::string(dtype_name(io.dtype)), .found = std::string(dtype_name(inputs[i].dtype()))});
      auto c = carried_.find(io.name);
      if (!inputs[i].defined()) {
        if (c == carried_.end())
          throw Error(ErrorCode::graph, "input has no value (it is not carried)", {.file = prog_.source, .tensor = io.name});
        if (!c->second.on_device && c->second.holder == 0) {
          auto h = held_.find(io.name);
          if (h == held_.end()) throw Error(ErrorCode::runtime, "carried input has no value yet", {.file = prog_.source, .tensor = io.name});
          vals[io.name] = h->second;
          continue;
        }
      }
      if (c != carried_.end() && c->second.holder != 0) {
        link->send(c->second.holder, tag(io.name), inputs[i]);  // a new value, or none: keep yours
        continue;
      }
      vals[io.name] = inputs[i];
    }
    if (link) {  // graph inputs other ranks' stages read, once to each rank
      for (const auto& io : prog_.inputs) {
        if (!vals.count(io.name)) continue;
        std::set<int> to;
        for (std::size_t k = 0; k < prog_.partitions.size(); ++k)
          if (rank_of(k) != 0)
            for (auto t : prog_.partitions[k].graph.inputs)
              if (prog_.partitions[k].graph.tensor(t).name == io.name) to.insert(rank_of(k));
        for (int r : to) link->send(r, tag(io.name), vals[io.name]);
      }
    }
  }
  // Where each partition output comes from (by name).
  auto producer = [&](const std::string& name) -> int {
    for (std::size_t k = 0; k < prog_.partitions.size(); ++k)
      for (auto t : prog_.partitions[k].graph.outputs)
        if (prog_.partitions[k].graph.tensor(t).name == name) return static_cast<int>(k);
    return -1;
  };
  for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
    if (rank_of(k) != rank) continue;
    const ir::Graph& g = prog_.partitions[k].graph;
    std::vector<Tensor> in;
    in.reserve(g.inputs.size());
    for (auto t : g.inputs) {
      const std::string& name = g.tensor(t).name;
      auto it = vals.find(name);
      if (it == vals.end() && link && rank != 0) {
        auto c = carried_.find(name);
        if (c != carried_.end() && c->second.holder == rank) {
          Tensor v = link->receive(0, tag(name));  // a new value from the caller, or none
          if (!v.defined() && !c->second.on_device) {
            auto h = held_.find(name);
            if (h == held_.end()) throw Error(ErrorCode::runtime, "carried input has no value yet", {.file = prog_.source, .tensor = name});
            v = h->second;
          }
          it = vals.emplace(name, std::move(v)).first;
        } else {
          const int p = producer(name);
          it = vals.emplace(name, link->receive(p >= 0 ? rank_of(static_cast<std::size_t>(p)) : 0, tag(name))).first;
        }
      }
      if (it == vals.end())
        throw Error(ErrorCode::runtime, "partition input was not produced by an earlier partition (npusim bug)", {.tensor = name});
      in.push_back(it->second);
    }
    std::vector<Tensor> out;
    try {
      out = execs_[k]->run(in);
    } catch (Error& e) {  // executors name the node and tensor; the program's file is known here
      throw e.with_file(prog_.source);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::resource, "out of memory while running partition " + std::to_string(k) + " (" + prog_.partitions[k].target + ")",
                  {.file = prog_.source});
    }
    for (std::size_t i = 0; i < g.outputs.size(); ++i) {
      const std::string& name = g.tensor(g.outputs[i]).name;
      if (link) {  // to every other rank whose stage reads it, and to the caller
        std::set<int> to;
        for (std::size_t j = k + 1; j < prog_.partitions.size(); ++j)
          if (rank_of(j) != rank)
            for (auto t : prog_.partitions[j].graph.inputs)
              if (prog_.partitions[j].graph.tensor(t).name == name) to.insert(rank_of(j));
        if (rank != 0) {
          bool is_output = false, kept = false;
          for (const auto& io : prog_.outputs) is_output = is_output || io.name == name;
          for (const auto& [cin, c] : carried_) kept = kept || (c.output == name && c.holder == rank);
          if (is_output && !kept) to.insert(0);
        }
        for (int r : to) link->send(r, tag(name), out[i]);
      }
      vals[name] = std::move(out[i]);
    }
  }
  std::vector<Tensor> result;
  if (rank == 0) {
    result.reserve(prog_.outputs.size());
    for (const auto& io : prog_.outputs) {
      if (auto it = vals.find(io.name); it != vals.end()) {
        result.push_back(it->second);
        continue;
      }
      bool kept = false;  // carried on the rank that makes it: nothing comes back
      for (const auto& [cin, c] : carried_) kept = kept || (c.output == io.name && c.holder != 0);
      const int p = producer(io.name);
      result.push_back(kept ? Tensor() : link->receive(p >= 0 ? rank_of(static_cast<std::size_t>(p)) : 0, tag(io.name)));
    }
    for (const auto& [in, c] : carried_)
      if (!c.on_device && c.holder == 0)
        for (std::size_t i = 0; i < prog_.outputs.size(); ++i)
          if (prog_.outputs[i].name == c.output) held_[in] = std::exchange(result[i], Tensor());
  } else {
    for (const auto& [in, c] : carried_)
      if (!c.on_device && c.holder == rank)
        if (auto it = vals.find(c.output); it != vals.end()) held_[in] = it->second;
  }
  if (link) link->finish_sends();
  return result;
}

NPUSIM_FUNC void serve_stages(StageLink& link, std::span<ProgramRunner* const> programs) {
  for (;;) {
    const int cmd = link.command(StageLink::stop_command);
    if (cmd == StageLink::stop_command) return;
    if (cmd < 0 || static_cast<std::size_t>(cmd) >= programs.size() || programs[static_cast<std::size_t>(cmd)]->program_id() != cmd)
      throw Error(ErrorCode::runtime, "rank 0 announced a program this rank does not have", {.expected = "0.." + std::to_string(programs.size()),
                  .found = std::to_string(cmd)});
    programs[static_cast<std::size_t>(cmd)]->serve();
  }
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
