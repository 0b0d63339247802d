// Kernel choice on the CPU target (target/candidates.hpp: candidates as types, one chooser): for a
// kernel kind, a type list of candidates, the best first and the generic one last (candidates.hpp's
// users: compute/gemm.hpp, kernels/conv.hpp).
//
// NPUSIM_CPU_SKIP names candidates to leave out (comma-separated), for comparisons and
// workarounds: NPUSIM_CPU_SKIP=conv_amx,gemm_amx runs bf16 work as if the CPU had no AMX,
// conv_winograd the direct bf16 convolutions. A name that is not a candidate, or a generic one
// (which every problem needs), is an error naming the valid ones (check_skipped, given every list
// of the target), not ignored.
#pragma once

#include "npusim/target/candidates.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct Skip {
  static constexpr const char* env = "NPUSIM_CPU_SKIP";
  static constexpr std::string_view target = "CPU";
};

using kernel_choice::Candidate;
using kernel_choice::CandidateInfo;
using kernel_choice::candidate_infos;
using kernel_choice::check_candidate_list;
using kernel_choice::Choice;
using kernel_choice::decline;
using kernel_choice::is;
using kernel_choice::with_candidate;

inline const std::vector<std::string>& skip_env() { return kernel_choice::skip_env<Skip>(); }
template <class C>
bool skipped() {
  return kernel_choice::skipped<Skip, C>();
}
template <class Lists>
void check_skipped(Lists lists) {
  kernel_choice::check_skipped<Skip>(lists);
}
template <class List, class Problem>
std::size_t choose(const Problem& p, Choice* out = nullptr) {
  return kernel_choice::choose<Skip, List>(p, out);
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
