// The reference target's entry in the CLI's registry, and the interpreter (`run --interpret`).
#include "npusim/reference.hpp"
#include "targets.hpp"

namespace npusim::cli {

TargetEntry reference_target_entry() {
  return {"reference", "float32 interpreter (the oracle and every target's fallback)", [] { return describe_target<ReferenceTarget>(); },
          executor_for<ReferenceTarget>::factory()};
}

std::unique_ptr<Runner> make_interpreter(const TargetChoice& t, const ir::Graph& g, const weights::BoundWeights& w) {
  return std::make_unique<ref::InterpreterRunner>(g, w.tensors, ref::Options{.round_half = half_dtype(t.dtype)});
}

}  // namespace npusim::cli
