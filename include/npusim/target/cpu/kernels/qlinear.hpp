// The CPU target's paths for a linear over q8_0/q4_0 weights (docs/quantization.md), best first,
// the generic one last: one type per way of running it (kernels/qlinear/*.hpp), walked by choose
// (candidates.hpp) for the binder, explain --kernels and NPUSIM_CPU_SKIP alike.
#pragma once

#include "npusim/target/cpu/kernels/qlinear/gemm.hpp"
#include "npusim/target/cpu/kernels/qlinear/gemv.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

using qlinear_candidates = meta::list<QLinearGemm, QLinearGemv>;
static_assert(check_candidate_list<QLinearProblem>(qlinear_candidates{}),
              "NPUSIM: qlinear_candidates: names must be unique, the last and only the last generic");

}  // namespace npusim::inline NPUSIM_ABI::cpu
