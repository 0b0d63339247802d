// The target registry (targets.hpp): the entries, in the order `npusim targets` lists them.
#include "options.hpp"
#include "targets.hpp"

#include <cstdio>
#include <cstdlib>

#include "npusim/target/reference/reference_target.hpp"

namespace npusim::cli {

int cmd_devices();

const std::vector<TargetEntry>& targets() {
  static const std::vector<TargetEntry> all = [] {
    std::vector<TargetEntry> t;
    t.push_back(reference_target_entry());
    t.push_back(cpu_target_entry());
#ifdef NPUSIM_WITH_OPENCL
    t.push_back(opencl_target_entry());
#endif
    // Further targets register here (one TU each).
    return t;
  }();
  return all;
}

std::vector<std::string> target_names() {
  std::vector<std::string> n;
  for (const auto& t : targets()) n.push_back(t.name);
  return n;
}

const TargetEntry& target(const std::string& name) {
  for (const auto& t : targets())
    if (t.name == name) return t;
  std::string known;
  for (const auto& t : targets()) known += (known.empty() ? "" : ", ") + t.name;
  throw Error(ErrorCode::unsupported, "unknown target '" + name + "'", {.expected = known, .found = name});
}

ExecutorFactories executor_factories() {
  ExecutorFactories f;
  for (const auto& t : targets()) f[t.name] = t.executor;
  return f;
}

void validate(const TargetChoice& t) {
  target(t.target);
  if (t.dtype != "f32" && !half_dtype(t.dtype))
    throw Error(ErrorCode::unsupported, "unknown dtype '" + t.dtype + "'", {.expected = "f32, f16 or bf16", .found = t.dtype});
  if (t.interpret && t.target != "reference")
    throw Error(ErrorCode::unsupported, "--interpret runs the reference target only", {.expected = "--target reference", .found = "--target " + t.target});
  if (t.interpret && !t.weights_dtype.empty())
    throw Error(ErrorCode::unsupported, "--interpret runs the IR as exported; --weights-dtype acts when compiling", {.found = "--interpret --weights-dtype " + t.weights_dtype});
  if (!t.device.empty() && t.target != "opencl")
    throw Error(ErrorCode::unsupported, "--device picks an OpenCL device: it applies to --target opencl only", {.found = "--target " + t.target});
  if (!t.device.empty()) ::setenv("NPUSIM_OPENCL_DEVICE", t.device.c_str(), 1);
}

partition::TargetInfo target_info(const TargetChoice& t) {
  validate(t);
  return target(t.target).info();
}

program::CompileOptions compile_options(const TargetChoice& t) {
  program::CompileOptions o;
  o.compute = *parse_dtype(t.dtype);
  o.evaluator = ReferenceTarget::evaluator();
  o.force = partition::ForceFallback::parse(t.force_fallback, "--force-fallback");
  if (const char* env = std::getenv("NPUSIM_FORCE_FALLBACK")) o.force.merge(partition::ForceFallback::parse(env, "NPUSIM_FORCE_FALLBACK"));
  o.weight_quant = {t.weights_dtype, t.keep};
  return o;
}

program::CompiledProgram compile(const TargetChoice& t, const ir::Graph& g) { return program::compile(g, target_info(t), compile_options(t)); }

std::unique_ptr<runtime::ProgramRunner> make_runner(const program::CompiledProgram& p, const weights::WeightSource* source, weights::BindOptions bind) {
  return std::make_unique<runtime::ProgramRunner>(p, source, executor_factories(), std::move(bind));
}

weights::BindOptions interpreter_bind_options() {
  weights::BindOptions o;
  o.load_as = DType::f32;
  return o;
}

#ifndef NPUSIM_WITH_OPENCL
std::string opencl_device_description() { return {}; }
double opencl_copy_bandwidth_gbs() { return 0.0; }
int cmd_devices() {
  std::printf("this npusim was built without OpenCL\n");
  return 0;
}
#endif

Registered add_devices(Shared& s) {
  return {s.app.add_subcommand("devices", "list the OpenCL devices the opencl target can use"), [] { return cmd_devices(); }};
}

}  // namespace npusim::cli
