// Running a compiled program whose partitions may belong to different targets (the DAG
// executor): each partition gets an executor from its target's factory (target/executor.hpp),
// tensors cross between partitions by name (transfers), and weights are bound once per target (a
// cache shared by that target's partitions). Single-target programs are the one-partition case of
// the same thing. runner_for<Target> makes one over Target's executors and its fallback's.
//
// Pipeline stages in several processes (docs/scale-out.md): given a StageLink, this process builds
// executors (and binds weights) for its own stage's partitions only (stage == rank); tensors that
// cross to another rank's stage go through the link, and loop-carried values (an LLM's KV cache)
// stay on the rank whose stage makes and reads them. Rank 0 calls run(); the others serve().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include "npusim/config.hpp"
#include "npusim/program/program.hpp"
#include "npusim/runtime/stage_link.hpp"
#include "npusim/target/executor.hpp"
#include "npusim/target/policy.hpp"
#include "npusim/weights/recipe_source.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

// Where a program's stages run: null link: all here. program_id: what rank 0 announces before each
// run, so that the serving ranks run the same program (serve_stages). stage_factories (one per
// stage, or none): stage s's partitions get their executors from stage_factories[s] instead of the
// runner's factories, e.g. the OpenCL target on another device for each stage (--devices); the
// tensors between them cross through the host, as between any two partitions.
struct StagePlacement {
  StageLink* link = nullptr;
  int program_id = 0;
  std::vector<ExecutorFactories> stage_factories;
};

class ProgramRunner : public Runner {
 public:
  ProgramRunner(program::CompiledProgram program, const weights::WeightSource* source, const ExecutorFactories& factories,
                weights::BindOptions bind = {}, StagePlacement placement = {});
  ProgramRunner(const ProgramRunner&) = delete;
  ProgramRunner& operator=(const ProgramRunner&) = delete;

  const ir::Graph& graph() const override { return iface_; }
  const program::CompiledProgram& program() const { return prog_; }
  std::string describe() const override;

  void set_profiler(Profiler* p);

  // Pairs a partition can keep on its device stay there; the rest are carried here, on the host.
  bool carry(std::span<const std::pair<std::string, std::string>> pairs) override;
  // Where the partition that carries `input` on its device can (this rank's).
  bool seed_carried(const std::string& input, const Tensor& prefix) override;

  std::vector<Tensor> run(std::span<const Tensor> inputs) override;

  // A rank other than 0: its stage's part of one run() of rank 0.
  void serve();
  int program_id() const { return place_.program_id; }

 private:
  std::vector<Tensor> run_stages(std::span<const Tensor> inputs);
  int rank_of(std::size_t partition) const { return place_.link ? prog_.partitions[partition].stage : 0; }
  int me() const { return place_.link ? place_.link->rank() : 0; }
  int tag(const std::string& name) const;
  program::CompiledProgram prog_;  // owned: executors refer into it, so runners do not move
  weights::RecipeSource recipes_;
  std::map<std::string, std::unordered_map<std::string, Tensor>> caches_;
  std::vector<std::unique_ptr<PartitionExecutor>> execs_;
  Profiler* profiler_ = nullptr;
  ir::Graph iface_;
  struct Carried {
    std::string output;
    bool on_device = false;
    int holder = 0;  // the rank that keeps it between runs (its stage makes and reads it), else 0
  };
  std::map<std::string, Carried, std::less<>> carried_;  // by input name
  std::map<std::string, Tensor, std::less<>> held_;      // host-carried values, by input name
  StagePlacement place_;
  std::map<std::string, int, std::less<>> tags_;  // by tensor name: what the stage link sends it under
};

// The executors a program compiled for Target needs: Target's own and its fallback's (a target
// names its fallback type, `using fallback = ReferenceTarget;`, whose executor header the caller
// includes: the entry headers npusim/<target>.hpp do).
template <class Target>
ExecutorFactories factories_for(const ExecutorOptions& o = {}) {
  static_assert(ExecutableTarget<Target>, "NPUSIM: no executor_for<Target>: include the target's executor.hpp (or its entry header npusim/<target>.hpp)");
  ExecutorFactories f;
  f[std::string(Target::name)] = executor_for<Target>::factory(o);
  static_assert(check_target_policy<Target>());
  using F = typename Target::fallback;
  if constexpr (!std::is_same_v<F, no_fallback>) {
    static_assert(ExecutableTarget<F>, "NPUSIM: no executor_for<Target::fallback>: include the fallback target's executor.hpp");
    if (!f.count(F::name)) f[std::string(F::name)] = executor_for<F>::factory({});
  }
  return f;
}

// A rank other than 0: runs its stage of whichever program rank 0 announces (by program_id),
// until rank 0 announces StageLink::stop_command.
void serve_stages(StageLink& link, std::span<ProgramRunner* const> programs);

}  // namespace npusim::inline NPUSIM_ABI::runtime

namespace npusim::inline NPUSIM_ABI {

// Builds the object that runs a program compiled for Target (what Pipeline<Target, D> uses).
template <class Target>
struct runner_for {
  static std::unique_ptr<Runner> make(const program::CompiledProgram& p, const weights::WeightSource* w, weights::BindOptions bind = {},
                                      const ExecutorOptions& o = {}) {
    return std::make_unique<runtime::ProgramRunner>(p, w, runtime::factories_for<Target>(o), std::move(bind));
  }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/program_runner_inl.hpp"
#endif
