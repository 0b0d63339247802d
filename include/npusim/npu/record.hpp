// The NPU a program was compiled against, kept in the program (and its .npubin): attach() stores
// a description and the estimate's dtype, stored() reads them back (a damaged description is an
// error naming the file), and stored_estimate() recomputes the estimate from them.
#pragma once

#include "npusim/npu/cost_model.hpp"
#include "npusim/npu/description_json.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

void attach(program::CompiledProgram& p, const Description& d, DType dt);

struct StoredNpu {
  Description description;
  DType dtype = DType::f32;
};

// `file` names the program in errors.
std::optional<StoredNpu> stored(const program::CompiledProgram& p, const std::string& file = "<program>");

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/record_inl.hpp"
#endif
