// The reference target's executor: runs a compiled program's partition by interpreting its nodes
// in the kernel schedule (a fused kernel as the composition of its members' reference kernels),
// rounding values to the planned storage types when the program computes in f16/bf16. As the
// fallback of every other target it runs their fallback partitions; on its own it proves passes
// and fusion keep meaning.
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/target/executor.hpp"
#include "npusim/target/reference/reference_target.hpp"

namespace npusim::inline NPUSIM_ABI {
template <>
struct executor_for<ReferenceTarget> {
  static ExecutorFactory factory(const ExecutorOptions& = {});
};

#ifdef NPUSIM_COMPILED_LIB
extern template partition::TargetInfo describe_target<ReferenceTarget>();  // in npusim::compiled
#endif
}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/reference/impl/executor_inl.hpp"
#endif
