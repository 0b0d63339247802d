// Definitions for npusim/npu/estimate.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/npu/estimate.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC const char* placement_name(Placement p) {
  switch (p) {
    case Placement::npu: return "npu";
    case Placement::host: return "host";
    case Placement::free: return "free";
  }
  return "?";
}

NPUSIM_FUNC const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::dma: return "dma";
    case Bound::sram: return "sram";
    case Bound::host: return "host";
    case Bound::none: return "-";
  }
  return "?";
}

}  // namespace npusim::inline NPUSIM_ABI::npu
