// The CLI's target factory: the one place that knows every target the binary was built with.
#pragma once

#include <memory>
#include <string>

#include "npusim/target/reference/runner.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::cli {

struct TargetChoice {
  std::string target = "reference";
  std::string dtype = "f32";  // f32, f16, bf16
};

inline bool half_dtype(const std::string& d) { return d == "f16" || d == "bf16"; }

inline void validate(const TargetChoice& t) {
  if (t.target != "reference")
    throw Error(ErrorCode::unsupported, "unknown target '" + t.target + "'", {.expected = "reference", .found = t.target});
  if (t.dtype != "f32" && !half_dtype(t.dtype))
    throw Error(ErrorCode::unsupported, "unknown dtype '" + t.dtype + "'", {.expected = "f32, f16 or bf16", .found = t.dtype});
}

// Weight-binding options a target wants (the reference computes in float32).
inline weights::BindOptions bind_options(const TargetChoice&) {
  weights::BindOptions o;
  o.load_as = DType::f32;
  return o;
}

inline std::unique_ptr<Runner> make_runner(const TargetChoice& t, const ir::Graph& g, const weights::BoundWeights& w) {
  validate(t);
  // Reference: f32 computes everything in float32; a half dtype rounds every value the IR stores
  // as f16/bf16 to that type, as the model would.
  return std::make_unique<ref::ReferenceRunner>(g, w.tensors, ref::Options{.round_half = half_dtype(t.dtype)});
}

}  // namespace npusim::cli
