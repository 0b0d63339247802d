// The target contract: what a target gives the runtime so that a compiled program's partitions
// run on it. Below both runtime/ and pipeline.hpp, above the compiler; a target includes this and
// never the runtime, the pipeline or another target.
//
//   PartitionExecutor   runs one partition of a compiled program (inputs -> outputs, host tensors),
//                       built from a PartitionContext; may keep loop-carried outputs on its device
//   ExecutorFactory     how a target makes one (ExecutorFactories: by target name)
//   executor_for<T>     each target's executor.hpp specialises it: factory(ExecutorOptions)
//   Runner              (target/runner.hpp) what every runnable thing offers its callers
//
// The runtime composes these: runtime::ProgramRunner runs a program over the factories of its
// target and that target's fallback (runtime/program_runner.hpp, runner_for<T>).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "npusim/program/program.hpp"
#include "npusim/target/profiler.hpp"
#include "npusim/target/runner.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::inline NPUSIM_ABI {

// What a target provides to run one partition. Inputs and outputs are host tensors in the
// partition graph's input/output order (any float type; executors convert as they need).
class PartitionExecutor {
 public:
  virtual ~PartitionExecutor() = default;
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) = 0;
  // Turns per-kernel profiling on (events go to `p`, track `track`), or off with nullptr.
  virtual void set_profiler(Profiler* p, int track) = 0;
  // Keeps graph output `output` for the next run's input `input` (Runner::carry); false if this
  // executor cannot (the program runner then carries it on the host).
  virtual bool carry(const std::string& /*output*/, const std::string& /*input*/) { return false; }
  // Runner::seed_carried for an input this executor carries (carry() returned true for it).
  virtual bool seed_carried(const std::string& /*input*/, const Tensor& /*prefix*/) { return false; }
  // How the partition runs where a target has more than one way (OpenCL: "one persistent launch of
  // 528 work-groups" or "launch by launch: <why>"); empty otherwise.
  virtual std::string execution_note() const { return {}; }
};

struct PartitionContext {
  const program::CompiledProgram& program;
  const program::Partition& partition;
  std::size_t index;
  const weights::WeightSource* weights;  // recipes already applied through it
  weights::BindOptions bind;             // with a cache shared by this target's partitions
};

using ExecutorFactory = std::function<std::unique_ptr<PartitionExecutor>(const PartitionContext&)>;
using ExecutorFactories = std::map<std::string, ExecutorFactory, std::less<>>;

// Target-specific choices made when executors are created (the OpenCL device; others ignore it).
struct ExecutorOptions {
  std::string device;  // "" = the target's default (NPUSIM_OPENCL_DEVICE, else the first GPU)
  // OpenCL: run each partition as one persistent launch of this many work-groups where it can (0:
  // launch by launch; stage_by_stage: launch by launch, each kernel reading its arguments from the
  // persistent program's table; -1: as NPUSIM_OPENCL_PERSISTENT says, else launch by launch).
  // docs/opencl.md.
  static constexpr int stage_by_stage = -2;
  int persistent_groups = -1;
};

// Specialised by each target's executor.hpp:
//   static ExecutorFactory factory(const ExecutorOptions& = {});
template <class Target>
struct executor_for;

// Which implementation a kernel of a partition runs where a target chooses among several, and why
// each better one declined (`npusim explain --kernels`). Optional: a target with a choice
// specialises implementations_for<Target> with
//   static std::vector<KernelImplementation> of(const program::Partition&);
struct KernelImplementation {
  std::size_t kernel = 0;  // index into the partition's kernels
  std::string chosen;
  std::string note;                                           // e.g. "with conv + max pool fused"
  std::vector<std::pair<std::string, std::string>> declined;  // (candidate, why), best first
};
template <class Target>
struct implementations_for;

template <class Target>
concept ExecutableTarget = requires(const ExecutorOptions& o) {
  { executor_for<Target>::factory(o) } -> std::convertible_to<ExecutorFactory>;
};

}  // namespace npusim::inline NPUSIM_ABI
