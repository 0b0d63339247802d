// The simulated timeline as a Chrome/Perfetto trace (`npusim simulate --trace`): JSON
// "traceEvents" of complete events in microseconds on three lanes of one process: "NPU DMA"
// (each NPU kernel's DMA busy time from its start), "NPU compute" (its MAC-array/vector time,
// after the first tile's load when double-buffered), and "host" (host kernels and the transfers
// between host and NPU charged to them). Per kernel, not per tile: a lane shows busy time.
#pragma once

#include <string>

#include "npusim/config.hpp"
#include "npusim/npu/estimate.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

enum Lane : int { lane_dma = 1, lane_compute = 2, lane_host = 3 };

std::string trace_json(const Estimate& e, const std::string& process);

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/trace_inl.hpp"
#endif
