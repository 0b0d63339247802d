// Definitions for npusim/runtime/program_runner.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/runtime/program_runner.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC ProgramRunner::ProgramRunner(program::CompiledProgram program, const weights::WeightSource* source,
                                         const ExecutorFactories& factories,
                                         weights::BindOptions bind)
    : prog_(std::move(program)), recipes_(source, prog_.recipes) {
  // The arenas are the program's working memory on whatever target runs it: refuse a program
  // that cannot fit before any executor allocates (the .npubin reader caps each at 64 TiB).
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
    auto f = factories.find(part.target);
    if (f == factories.end())
      throw Error(ErrorCode::unsupported, "no executor for target '" + part.target + "' in this build", {.file = prog_.source});
    weights::BindOptions b = bind;
    if (!b.cache) b.cache = &caches_[part.target];  // weights once per target
    execs_.push_back(f->second(PartitionContext{prog_, part, k, &recipes_, b}));
  }
  caches_.clear();  // executors hold what they bound
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
  return s;
}

NPUSIM_FUNC void ProgramRunner::set_profiler(Profiler* p) {
  profiler_ = p;
  for (std::size_t k = 0; k < execs_.size(); ++k) execs_[k]->set_profiler(p, static_cast<int>(k));
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
    const bool on_device = producer >= 0 && readers == 1 && reader == producer && out_readers == 0 &&
                           execs_[static_cast<std::size_t>(producer)]->carry(out, in);
    carried_[in] = {out, on_device};
  }
  return true;
}

NPUSIM_FUNC std::vector<Tensor> ProgramRunner::run(std::span<const Tensor> inputs) {
  if (inputs.size() != prog_.inputs.size())
    throw Error(ErrorCode::graph, "wrong number of inputs", {.file = prog_.source, .expected = std::to_string(prog_.inputs.size()),
                                                             .found = std::to_string(inputs.size())});
  std::map<std::string, Tensor, std::less<>> vals;
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
    if (!inputs[i].defined()) {
      auto c = carried_.find(io.name);
      if (c == carried_.end())
        throw Error(ErrorCode::graph, "input has no value (it is not carried)", {.file = prog_.source, .tensor = io.name});
      if (!c->second.on_device) {
        auto h = held_.find(io.name);
        if (h == held_.end()) throw Error(ErrorCode::runtime, "carried input has no value yet", {.file = prog_.source, .tensor = io.name});
        vals[io.name] = h->second;
        continue;
      }
    }
    vals[io.name] = inputs[i];
  }
  for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
    const ir::Graph& g = prog_.partitions[k].graph;
    std::vector<Tensor> in;
    in.reserve(g.inputs.size());
    for (auto t : g.inputs) {
      auto it = vals.find(g.tensor(t).name);
      if (it == vals.end())
        throw Error(ErrorCode::runtime, "partition input was not produced by an earlier partition (npusim bug)", {.tensor = g.tensor(t).name});
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
    for (std::size_t i = 0; i < g.outputs.size(); ++i) vals[g.tensor(g.outputs[i]).name] = std::move(out[i]);
  }
  std::vector<Tensor> result;
  result.reserve(prog_.outputs.size());
  for (const auto& io : prog_.outputs) result.push_back(vals.at(io.name));
  for (const auto& [in, c] : carried_)
    if (!c.on_device)
      for (std::size_t i = 0; i < prog_.outputs.size(); ++i)
        if (prog_.outputs[i].name == c.output) held_[in] = std::exchange(result[i], Tensor());
  return result;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
