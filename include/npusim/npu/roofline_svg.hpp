// A roofline of an estimate as standalone SVG (`npusim simulate --svg`): log-log axes of
// arithmetic intensity (operations per DRAM byte) against attained operations per second, the
// roof min(peak, bandwidth x intensity), and one circle per NPU kernel (area by its share of the
// latency, colour by what bounds it). Kernels that move no DRAM bytes sit at the right edge.
#pragma once

#include <string>

#include "npusim/config.hpp"
#include "npusim/npu/report.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

const char* bound_colour(Bound b);

std::string xml_escape(const std::string& s);

std::string roofline_svg(const Estimate& e, const std::string& title);

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/roofline_svg_inl.hpp"
#endif
