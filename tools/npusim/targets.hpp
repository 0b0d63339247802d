// The CLI's target registry: the one place that knows every target the binary was built with.
// Each target contributes one entry (its description for the compiler and its partition executor);
// programs run through runtime::ProgramRunner with every entry's executor, so fallback partitions
// find the reference target.
#pragma once

#include <memory>
#include <string>

#include "npusim/cpu.hpp"
#include "npusim/pipeline.hpp"
#include "npusim/reference.hpp"
#ifdef NPUSIM_WITH_OPENCL
#include "npusim/opencl.hpp"
#endif

namespace npusim::cli {

struct TargetEntry {
  std::string name;
  std::string summary;
  std::function<partition::TargetInfo()> info;
  ExecutorFactory executor;
  // Which candidate each kernel runs (explain --kernels); empty for targets with one per kind.
  std::function<std::vector<KernelImplementation>(const program::Partition&)> implementations = {};
};

inline const std::vector<TargetEntry>& targets() {
  static const std::vector<TargetEntry> all = [] {
    std::vector<TargetEntry> t;
    t.push_back({"reference", "float32 interpreter (the oracle and every target's fallback)", [] { return describe_target<ReferenceTarget>(); },
                 executor_for<ReferenceTarget>::factory()});
    t.push_back({"cpu", "SIMD CPU target (xsimd, own thread pool; weights packed in their storage type)", [] { return describe_target<CpuTarget>(); },
                 executor_for<CpuTarget>::factory(), &implementations_for<CpuTarget>::of});
#ifdef NPUSIM_WITH_OPENCL
    t.push_back({"opencl", "OpenCL C kernels on an OpenCL device (NPUSIM_OPENCL_DEVICE; see `npusim devices`)",
                 [] { return describe_target<OpenCLTarget>(); }, executor_for<OpenCLTarget>::factory()});
#endif
    // Further targets register here (one block each).
    return t;
  }();
  return all;
}

inline std::vector<std::string> target_names() {
  std::vector<std::string> n;
  for (const auto& t : targets()) n.push_back(t.name);
  return n;
}

inline const TargetEntry& target(const std::string& name) {
  for (const auto& t : targets())
    if (t.name == name) return t;
  std::string known;
  for (const auto& t : targets()) known += (known.empty() ? "" : ", ") + t.name;
  throw Error(ErrorCode::unsupported, "unknown target '" + name + "'", {.expected = known, .found = name});
}

inline ExecutorFactories executor_factories() {
  ExecutorFactories f;
  for (const auto& t : targets()) f[t.name] = t.executor;
  return f;
}

// The target used when --target is not given: the fastest one every build has (the SIMD CPU
// target). The reference is the oracle, about 6x slower on ResNet-18; OpenCL needs a device.
inline constexpr const char* default_target = "cpu";

struct TargetChoice {
  std::string target = default_target;
  std::string dtype = "f32";   // f32, f16, bf16
  bool interpret = false;      // reference only: run the IR node by node, no compilation
  std::string force_fallback;  // debug switch (also NPUSIM_FORCE_FALLBACK)
  std::string device;          // opencl only: index or name substring (NPUSIM_OPENCL_DEVICE)
  bool target_given = false, dtype_given = false;
};

inline bool half_dtype(const std::string& d) { return d == "f16" || d == "bf16"; }

inline void validate(const TargetChoice& t) {
  target(t.target);
  if (t.dtype != "f32" && !half_dtype(t.dtype))
    throw Error(ErrorCode::unsupported, "unknown dtype '" + t.dtype + "'", {.expected = "f32, f16 or bf16", .found = t.dtype});
  if (t.interpret && t.target != "reference")
    throw Error(ErrorCode::unsupported, "--interpret runs the reference target only", {.expected = "--target reference", .found = "--target " + t.target});
  if (!t.device.empty() && t.target != "opencl")
    throw Error(ErrorCode::unsupported, "--device picks an OpenCL device: it applies to --target opencl only", {.found = "--target " + t.target});
  if (!t.device.empty()) ::setenv("NPUSIM_OPENCL_DEVICE", t.device.c_str(), 1);
}

inline partition::TargetInfo target_info(const TargetChoice& t) {
  validate(t);
  return target(t.target).info();
}

inline program::CompileOptions compile_options(const TargetChoice& t) {
  program::CompileOptions o;
  o.compute = *parse_dtype(t.dtype);
  o.evaluator = ReferenceTarget::evaluator();
  std::string force = t.force_fallback;
  if (const char* env = std::getenv("NPUSIM_FORCE_FALLBACK"); env && *env) force += (force.empty() ? "" : ",") + std::string(env);
  o.force = partition::ForceFallback::parse(force);
  return o;
}

inline program::CompiledProgram compile(const TargetChoice& t, const ir::Graph& g) { return program::compile(g, target_info(t), compile_options(t)); }

// A runner for a compiled program: its partitions on their targets (weights bound from `source`).
inline std::unique_ptr<runtime::ProgramRunner> make_runner(const program::CompiledProgram& p, const weights::WeightSource* source,
                                                        weights::BindOptions bind = {}) {
  return std::make_unique<runtime::ProgramRunner>(p, source, executor_factories(), std::move(bind));
}

// The reference interpreting the IR directly (no passes, no fusion): the oracle.
inline std::unique_ptr<Runner> make_interpreter(const TargetChoice& t, const ir::Graph& g, const weights::BoundWeights& w) {
  return std::make_unique<ref::InterpreterRunner>(g, w.tensors, ref::Options{.round_half = half_dtype(t.dtype)});
}

inline weights::BindOptions interpreter_bind_options() {
  weights::BindOptions o;
  o.load_as = DType::f32;
  return o;
}

}  // namespace npusim::cli
