// Definitions for npusim/npu/record.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/npu/record.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC void attach(program::CompiledProgram& p, const Description& d, DType dt) {
  if (!is_npu_dtype(dt)) throw Error(ErrorCode::dtype, "an NPU estimate computes in f32, f16, bf16, i16 or i8", {.found = std::string(dtype_short_name(dt))});
  p.npu = program::NpuRecord{to_json(d), dt};
}

NPUSIM_FUNC std::optional<StoredNpu> stored(const program::CompiledProgram& p, const std::string& file) {
  if (!p.npu) return std::nullopt;
  return StoredNpu{parse_description(p.npu->description, file + " (stored NPU description)"), p.npu->dtype};
}

}  // namespace npusim::inline NPUSIM_ABI::npu
