// The CLI's target registry: the one place that knows every target the binary was built with.
#pragma once

#include <memory>
#include <string>

#include "npusim/pipeline.hpp"
#include "npusim/target/reference/program_runner.hpp"
#include "npusim/target/reference/runner.hpp"

namespace npusim::cli {

struct TargetChoice {
  std::string target = "reference";
  std::string dtype = "f32";  // f32, f16, bf16
  bool interpret = false;     // reference only: run the IR node by node, no compilation
  std::string force_fallback; // debug switch (also NPUSIM_FORCE_FALLBACK)
};

inline const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names{"reference"};
  return names;
}

inline bool half_dtype(const std::string& d) { return d == "f16" || d == "bf16"; }

inline void validate(const TargetChoice& t) {
  const auto& names = target_names();
  if (std::find(names.begin(), names.end(), t.target) == names.end())
    throw Error(ErrorCode::unsupported, "unknown target '" + t.target + "'", {.expected = "reference", .found = t.target});
  if (t.dtype != "f32" && !half_dtype(t.dtype))
    throw Error(ErrorCode::unsupported, "unknown dtype '" + t.dtype + "'", {.expected = "f32, f16 or bf16", .found = t.dtype});
}

inline partition::TargetInfo target_info(const TargetChoice& t) {
  validate(t);
  return describe_target<ReferenceTarget>();
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

// A runner for a compiled program on the chosen target (weights bound from `source`).
inline std::unique_ptr<Runner> make_runner(const TargetChoice& t, const program::CompiledProgram& p, const weights::WeightSource* source,
                                           weights::BindOptions bind = {}) {
  validate(t);
  return runner_for<ReferenceTarget>::make(p, source, std::move(bind));
}

// The reference interpreting the IR directly (no passes, no fusion): the oracle.
inline std::unique_ptr<Runner> make_interpreter(const TargetChoice& t, const ir::Graph& g, const weights::BoundWeights& w) {
  return std::make_unique<ref::ReferenceRunner>(g, w.tensors, ref::Options{.round_half = half_dtype(t.dtype)});
}

inline weights::BindOptions interpreter_bind_options() {
  weights::BindOptions o;
  o.load_as = DType::f32;
  return o;
}

}  // namespace npusim::cli
