// Composition for the OpenCL target: runner_for<OpenCLTarget> (what Pipeline<OpenCLTarget, D>
// uses) runs a compiled program through runtime::PlanRunner with the OpenCL executor for its
// partitions and the reference target's for the fallback partitions; constant folding evaluates
// through the reference. The OpenCL executor itself knows nothing of the reference.
#pragma once

#include "npusim/pipeline.hpp"
#include "npusim/target/opencl/executor.hpp"
#include "npusim/target/reference/program_runner.hpp"

namespace npusim::inline NPUSIM_ABI {

inline passes::Evaluator OpenCLTarget::evaluator() { return ReferenceTarget::evaluator(); }

namespace ocl {
inline runtime::ExecutorFactories factories(const std::string& device = {}) {
  runtime::ExecutorFactories f;
  f["opencl"] = executor_factory(device);
  f["reference"] = ref::executor_factory();
  return f;
}
}  // namespace ocl

template <>
struct runner_for<OpenCLTarget> {
  static std::unique_ptr<Runner> make(const program::CompiledProgram& p, const weights::WeightSource* w, weights::BindOptions bind = {},
                                      const std::string& device = {}) {
    return std::make_unique<runtime::PlanRunner>(p, w, ocl::factories(device), std::move(bind));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
