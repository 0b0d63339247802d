// The CLI's target registry: the one place that knows every target the binary was built with.
// Each target contributes one entry (its description for the compiler and its partition executor),
// made in its own TU (target_<name>.cpp, the only files that include a target); programs run
// through runtime::ProgramRunner with every entry's executor, so fallback partitions find the
// reference target.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "npusim/program/compiler.hpp"
#include "npusim/runtime/program_runner.hpp"
#include "npusim/target/executor.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::cli {

struct TargetEntry {
  std::string name;
  std::string summary;
  std::function<partition::TargetInfo()> info;
  ExecutorFactory executor;
  // Which candidate each kernel runs (explain --kernels); empty for targets with one per kind.
  std::function<std::vector<KernelImplementation>(const program::Partition&)> implementations = {};
  std::string skip_env = {};  // the variable that leaves candidates out (NPUSIM_CPU_SKIP)
  // Its executor on a chosen device (--devices: one per stage); empty for targets of one device.
  std::function<ExecutorFactory(const ExecutorOptions&)> executor_on = {};
};

// One per target (target_<name>.cpp).
TargetEntry reference_target_entry();
TargetEntry cpu_target_entry();
#ifdef NPUSIM_WITH_OPENCL
TargetEntry opencl_target_entry();
#endif

const std::vector<TargetEntry>& targets();

std::vector<std::string> target_names();

const TargetEntry& target(const std::string& name);

ExecutorFactories executor_factories();

// The target used when --target is not given: the fastest one every build has (the SIMD CPU
// target). The reference is the oracle, about 6x slower on ResNet-18; OpenCL needs a device.
inline constexpr const char* default_target = "cpu";

struct TargetChoice {
  std::string target = default_target;
  std::string dtype = "f32";   // f32, f16, bf16
  bool interpret = false;      // reference only: run the IR node by node, no compilation
  std::string force_fallback;  // debug switch (also NPUSIM_FORCE_FALLBACK)
  std::vector<std::string> no_patterns;  // fusion patterns left out (a pattern's kernel kind, e.g. rope_kv)
  std::string device;          // opencl only: index or name substring (NPUSIM_OPENCL_DEVICE)
  std::vector<std::string> devices;  // opencl only: one device per pipeline stage (--devices 0,1)
  std::string weights_dtype;   // q8 or q4: linear weights in blocks (docs/quantization.md); "" none
  std::vector<std::string> keep;  // with weights_dtype: weights that stay as they are
  int stages = 1;               // pipeline stages (docs/scale-out.md)
  bool target_given = false, dtype_given = false, stages_given = false;
};

inline bool half_dtype(const std::string& d) { return d == "f16" || d == "bf16"; }

void validate(const TargetChoice& t);

partition::TargetInfo target_info(const TargetChoice& t);

program::CompileOptions compile_options(const TargetChoice& t);

program::CompiledProgram compile(const TargetChoice& t, const ir::Graph& g);

// generate and bench-llm read one row of the prefill's logits: a copy of the prefill graph that
// computes only that row (passes::select_output_row, its row a graph input), or, where the graph
// cannot, the graph as it is, with the reason on `info`.
ir::Graph prefill_for_generation(const ir::Graph& g, FILE* info = stdout);

// A runner for a compiled program: its partitions on their targets (weights bound from `source`).
// With --devices (validate() keeps the list), stage s's partitions on device s. Under mpirun (processes.hpp) only this rank's stage; program_id tells the programs of one
// command apart (generate: 0 the prefill, 1 the decode).
std::unique_ptr<runtime::ProgramRunner> make_runner(const program::CompiledProgram& p, const weights::WeightSource* source,
                                                    weights::BindOptions bind = {}, int program_id = 0);

// The reference interpreting the IR directly (no passes, no fusion): the oracle.
std::unique_ptr<Runner> make_interpreter(const TargetChoice& t, const ir::Graph& g, const weights::BoundWeights& w);

weights::BindOptions interpreter_bind_options();

// The CPU target's worker threads (--threads): the pool, OpenMP and Eigen.
void set_cpu_threads(int n);
int cpu_threads();
// Refuses an NPUSIM_THREADS that is not a thread count (before any target starts).
void check_thread_env();
// The OpenCL device the target would use, or the one `selector` picks (empty without OpenCL).
std::string opencl_device_description(const std::string& selector = {});
// The OpenCL device's copy bandwidth, GB/s read + written (0 without OpenCL).
double opencl_copy_bandwidth_gbs();

}  // namespace npusim::cli
