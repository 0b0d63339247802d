// Runs one partition of a compiled program on an OpenCL device.
//   construction: weights uploaded once (shared per device), one arena buffer from the plan, one
//     persistent buffer per graph input, every kernel bound to launches with their arguments set;
//     an index_copy the planner made a view of its `self` (a KV cache) writes only the new rows.
//   run(): inputs converted to their storage type and written without blocking, every launch
//     enqueued on one in-order queue, outputs read back, one clFinish. Outputs carried to the next
//     run (carry()) stay on the device. With a profiler, each launch gets an event whose device
//     start/end become the trace (host enqueue time in the table's host column).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/target/executor.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

namespace npusim::inline NPUSIM_ABI {
// The path every matrix product of a partition (linears, their fused groups, matmuls, convolutions) runs on
// the default device (NPUSIM_OPENCL_DEVICE), and why the better ones declined (`npusim explain
// --kernels`): the binder's own chooser (ocl::gemm_candidates) on the problems it will bind.
template <>
struct implementations_for<OpenCLTarget> {
  static std::vector<KernelImplementation> of(const program::Partition& p);
};

// Executors on the device ExecutorOptions::device names ("" = NPUSIM_OPENCL_DEVICE or the first GPU).
template <>
struct executor_for<OpenCLTarget> {
  static ExecutorFactory factory(const ExecutorOptions& o = {});
};

#ifdef NPUSIM_COMPILED_LIB
extern template partition::TargetInfo describe_target<OpenCLTarget>();  // in npusim::compiled
#endif
}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/opencl/impl/executor_inl.hpp"
#endif
