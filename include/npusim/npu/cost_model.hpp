// The program-level cost model: a CompiledProgram's kernels, in execution order, on an NPU.
//
//   placement     a kernel runs on the NPU when its operand dtype and every member's op class are
//                 supported and some tiling fits the SRAM; otherwise on the host, at the host's
//                 throughput, with each tensor crossing between host and NPU charged to it
//   weight cache  weights are placed in the description's weight cache in execution order while
//                 they fit; cached weights cost no DMA (the steady state of repeated inferences)
//   activations   the program's activation arena (plan/, scaled to the estimate's element size)
//                 starts at the bottom of the activation region: a tensor whose slice of the
//                 arena lies inside the region stays on chip from its producer to its last reader
//   forwarding    any other tensor that only the next kernel reads may stay on chip between the two
//                 (no DMA out and in), at the price of the SRAM it holds while both run; which
//                 tensors stay is chosen by dynamic programming over the kernel chain for the
//                 least total time, so more SRAM, bandwidth or clock never makes it slower
//   timeline      kernels run one after another; inside a kernel DMA overlaps compute through
//                 double buffering (npu/tiling.hpp)
// It reads only the program: no target, no runtime, no weights (shapes and dtypes are enough).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/npu/estimate.hpp"
#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

struct EstimateOptions {
  std::optional<DType> dtype;  // operand dtype on the NPU; default: the program's compute dtype
};

namespace cost_detail {

struct Entry {
  std::int32_t part = 0, kernel = 0;
  const ir::Graph* graph = nullptr;
  const Kernel* k = nullptr;
  Workload w;
  std::vector<std::string> in_roots, out_roots;  // names, views resolved to what they alias
  Placement placement = Placement::npu;
  std::string reason;
};

std::string dtype_list(const std::vector<DType>& v);

// Why the NPU cannot run a workload in `dt` (empty: it can, if a tiling fits).
std::string unsupported(const Workload& w, const Description& d, DType dt);

double host_ns(const Workload& w, const Description& d);

}  // namespace cost_detail

Estimate estimate(const program::CompiledProgram& p, const Description& d, const EstimateOptions& opt = {});

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/cost_model_inl.hpp"
#endif
