// The NPU a program was compiled against, kept in the program (and its .npubin): attach() stores
// a description and the estimate's dtype, stored() reads them back (a damaged description is an
// error naming the file), and stored_estimate() recomputes the estimate from them.
#pragma once

#include "npusim/npu/cost_model.hpp"
#include "npusim/npu/description_json.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

inline void attach(program::CompiledProgram& p, const Description& d, DType dt) {
  if (!is_npu_dtype(dt)) throw Error(ErrorCode::dtype, "an NPU estimate computes in f32, f16, bf16, i16 or i8", {.found = std::string(dtype_short_name(dt))});
  p.npu = program::NpuRecord{to_json(d), dt};
}

struct StoredNpu {
  Description description;
  DType dtype = DType::f32;
};

// `file` names the program in errors.
inline std::optional<StoredNpu> stored(const program::CompiledProgram& p, const std::string& file = "<program>") {
  if (!p.npu) return std::nullopt;
  return StoredNpu{parse_description(p.npu->description, file + " (stored NPU description)"), p.npu->dtype};
}

}  // namespace npusim::inline NPUSIM_ABI::npu
