// The target registry (targets.hpp): the entries, in the order `npusim targets` lists them.
#include "options.hpp"
#include "targets.hpp"

#include "processes.hpp"

#include <cstdio>
#include <cstdlib>

#include "npusim/passes/select_rows.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/target/reference/reference_target.hpp"

namespace npusim::cli {

int cmd_devices();

namespace {
std::vector<std::string> stage_devices;  // --devices, as the last validate() saw it
}

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
  for (const std::string& p : t.no_patterns) {
    bool known = false;
    std::string names;
    for (const auto& info : fusion::pattern_infos(fusion::all_patterns{})) known = known || info.name == p, names += (names.empty() ? "" : ", ") + std::string(info.name);
    if (!known) throw Error(ErrorCode::unsupported, "--no-pattern: no fusion pattern is called '" + p + "'", {.expected = "one of " + names, .found = p});
    if (t.interpret) throw Error(ErrorCode::unsupported, "--interpret runs the IR node by node; --no-pattern acts when compiling", {.found = "--no-pattern " + p});
  }
  if (t.interpret && t.stages != 1)
    throw Error(ErrorCode::unsupported, "--interpret runs the IR node by node; --stages acts when compiling", {.found = "--interpret --stages " + std::to_string(t.stages)});
  if (!t.devices.empty()) {
    const TargetEntry& e = target(t.target);
    if (!e.executor_on)
      throw Error(ErrorCode::unsupported, "--devices places stages on several devices of a target that has devices (opencl)",
                  {.expected = "--target opencl", .found = "--target " + t.target});
    if (!t.device.empty()) throw Error(ErrorCode::unsupported, "--device picks one device, --devices one per stage: give one of them", {.found = "--device --devices"});
    if (t.stages != static_cast<int>(t.devices.size()))
      throw Error(ErrorCode::unsupported, "--devices lists one device per stage", {.expected = "--stages " + std::to_string(t.devices.size()) +
                  " (or leave --stages out)", .found = "--stages " + std::to_string(t.stages)});
  }
  stage_devices = t.devices;
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
  o.stages = t.stages;
  o.fuse.disabled.insert(t.no_patterns.begin(), t.no_patterns.end());
  return o;
}

program::CompiledProgram compile(const TargetChoice& t, const ir::Graph& g) { return program::compile(g, target_info(t), compile_options(t)); }

ir::Graph prefill_for_generation(const ir::Graph& g, FILE* info) {
  ir::Graph one = g;
  try {
    const passes::RowSelection r = passes::select_output_row(one, 0, llm::logits_row_input);
    if (!r.input.empty())
      std::fprintf(info, "prefill: logits of the prompt's last row only (%zu nodes on one row, input %s)\n", r.nodes, r.input.c_str());
    return one;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::graph) throw;
    std::fprintf(info, "prefill: logits of every row (%s)\n", e.message().c_str());
    return g;
  }
}

std::unique_ptr<runtime::ProgramRunner> make_runner(const program::CompiledProgram& p, const weights::WeightSource* source, weights::BindOptions bind,
                                                    int program_id) {
  runtime::StagePlacement place{stage_link(), program_id, {}};
  for (const std::string& d : stage_devices) {
    ExecutorFactories f = executor_factories();
    const TargetEntry& e = target(p.target);
    f[e.name] = e.executor_on(ExecutorOptions{.device = d});
    place.stage_factories.push_back(std::move(f));
  }
  return std::make_unique<runtime::ProgramRunner>(p, source, executor_factories(), std::move(bind), std::move(place));
}

weights::BindOptions interpreter_bind_options() {
  weights::BindOptions o;
  o.load_as = DType::f32;
  return o;
}

#ifndef NPUSIM_WITH_OPENCL
std::string opencl_device_description(const std::string&) { return {}; }
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
