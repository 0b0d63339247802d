// Definitions for npusim/npu/description.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/npu/description.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC const MacArray* Description::mac_array(DType d) const {
  for (const auto& [t, a] : mac_arrays)
    if (t == d) return &a;
  return nullptr;
}

NPUSIM_FUNC bool Description::supports(ops::OpClass c) const {
  return c == ops::OpClass::view || c == ops::OpClass::noop || std::find(op_classes.begin(), op_classes.end(), c) != op_classes.end();
}

NPUSIM_FUNC double Description::peak_macs_per_s(DType d) const {
  const MacArray* a = mac_array(d);
  return a ? static_cast<double>(a->macs_per_cycle()) * clock_hz() : 0.0;
}

NPUSIM_FUNC double Description::vector_elements_per_cycle(std::int64_t bytes) const {
  return std::max(1.0, static_cast<double>(vector_width_bytes) / static_cast<double>(std::max<std::int64_t>(bytes, 1)));
}

}  // namespace npusim::inline NPUSIM_ABI::npu
