// The CPU target's executor: runs one partition of a compiled program. Arena, inputs and weights
// in their storage types; every kernel bound once (activations between f32 convolutions held
// channel-blocked where layout.hpp decides so); run() converts the inputs, calls the kernels,
// copies the outputs.
#pragma once

#include <vector>

#include "npusim/config.hpp"
#include "npusim/target/cpu/cpu_target.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/target/executor.hpp"

namespace npusim::inline NPUSIM_ABI {

// The candidate every convolution and linear kernel of a partition runs, and why the better ones
// declined (`npusim explain --kernels`).
template <>
struct implementations_for<CpuTarget> {
  static std::vector<KernelImplementation> of(const program::Partition& p);
};

template <>
struct executor_for<CpuTarget> {
  static ExecutorFactory factory(const ExecutorOptions& = {});
};

#ifdef NPUSIM_COMPILED_LIB
extern template partition::TargetInfo describe_target<CpuTarget>();  // in npusim::compiled
#endif

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/impl/executor_inl.hpp"
#endif
