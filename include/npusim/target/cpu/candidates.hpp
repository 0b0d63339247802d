// Kernel choice on the CPU target, as oneDNN's implementation lists: for a kernel kind, an ordered
// list of candidates, the best first and the generic one last. Each candidate answers whether it
// applies to the problem (shapes, dtypes, this CPU, this build) and, when it declines, why. The
// first candidate that applies runs; `npusim explain --kernels` prints, per kernel, the one chosen
// and why each better one declined.
//
// NPUSIM_CPU_SKIP names candidates to leave out (comma-separated), for comparisons and
// workarounds: NPUSIM_CPU_SKIP=conv_amx,gemm_amx runs bf16 work as if the CPU had no AMX,
// conv_winograd the direct bf16 convolutions. A name that is not a candidate, or a generic one
// (which every problem needs), is an error naming the valid ones, not ignored.
#pragma once

#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct CandidateInfo {
  std::string_view name;
  std::string_view what;
  bool generic = false;  // the last resort of its list: always applies, cannot be skipped
};

// Convolutions (kernels/conv.hpp), best first.
inline constexpr CandidateInfo conv_candidates[] = {
    {"conv_blocked_f32", "f32 on channel-blocked activations (NCHW16c), 7-pixel row groups x 64 channels, AVX-512"},
    {"conv_depthwise", "depthwise (one input and one output channel per group), direct"},
    {"conv_amx", "bf16 on AMX tiles (32 channels x 32 pixels per tile block)"},
    {"conv_winograd", "bf16 3x3 stride-1 by Winograd F(2x2, 3x3) on AVX-512 BF16 dot products"},
    {"conv_dpbf16", "bf16 on AVX-512 BF16 dot products (pixel blocks; small images with channels along the vectors)"},
    {"conv_widened_f32", "f16/bf16 input widened once to f32, then the f32 pixel-block kernels"},
    {"conv_small_f32", "f32, images of at most 64 pixels: channels along the vectors, 48-channel strips"},
    {"conv_blocks_f32", "f32 pixel blocks of 32 gathered per thread, 12-channel strips, AVX-512"},
    {"conv_im2col_gemm", "im2col into 32-pixel tiles, then the packed GEMM (any dtype, any CPU)", true},
};

// Matrix products with packed weights (linear, addmm; compute/gemm.hpp), best first.
inline constexpr CandidateInfo gemm_candidates[] = {
    {"gemm_amx", "bf16 on AMX tiles"},
    {"gemm_dpbf16", "bf16 on AVX-512 BF16 dot products"},
    {"gemm_gemv", "at most 4 rows (decode): weight streaming, every thread its own panels"},
    {"gemm_f32", "f32 micro-kernel on widened panels (any dtype, any CPU)", true},
};

// Affine int8 convolutions and matrix products (qconv2d, qlinear; compute/qconv.hpp), best first.
inline constexpr CandidateInfo qconv_candidates[] = {
    {"qconv_vnni", "int8 indirect GEMM on AVX-512 VNNI dot products (vpdpbusd), 12 pixels x 32 channels per tile"},
    {"qconv_int32", "int8 indirect GEMM in plain int32 arithmetic (any CPU)", true},
};

// Every candidate of every list.
inline std::vector<CandidateInfo> all_candidates() {
  std::vector<CandidateInfo> v(std::begin(conv_candidates), std::end(conv_candidates));
  v.insert(v.end(), std::begin(gemm_candidates), std::end(gemm_candidates));
  v.insert(v.end(), std::begin(qconv_candidates), std::end(qconv_candidates));
  return v;
}

// The candidates NPUSIM_CPU_SKIP names, read and checked once.
inline const std::vector<std::string>& skipped_candidates() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    const char* e = std::getenv("NPUSIM_CPU_SKIP");
    if (!e) return v;
    std::string skippable;
    const std::vector<CandidateInfo> all = all_candidates();
    for (const CandidateInfo& c : all)
      if (!c.generic) skippable += (skippable.empty() ? "" : ", ") + std::string(c.name);
    std::string_view s = e;
    while (!s.empty()) {
      const std::size_t comma = s.find(',');
      std::string_view item = s.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) {
        const CandidateInfo* found = nullptr;
        for (const CandidateInfo& c : all)
          if (c.name == item) found = &c;
        if (!found)
          throw Error(ErrorCode::unsupported, "NPUSIM_CPU_SKIP names no CPU kernel candidate", {.expected = "one of " + skippable, .found = std::string(item)});
        if (found->generic)
          throw Error(ErrorCode::unsupported, "NPUSIM_CPU_SKIP cannot skip the generic candidate " + std::string(item) + " (every problem needs it)",
                      {.expected = "one of " + skippable, .found = std::string(item)});
        v.emplace_back(item);
      }
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
    return v;
  }();
  return names;
}

inline bool skipped(std::string_view name) {
  for (const auto& s : skipped_candidates())
    if (s == name) return true;
  return false;
}

// The outcome of walking a list: the candidate that runs and why each one before it declined.
struct Choice {
  std::string_view chosen;
  std::vector<std::pair<std::string_view, std::string>> declined;  // (candidate, why)
};

// Walks `list` with `applies(index, why) -> bool` (why: where to say why it declines, or null when
// nobody asks), honouring NPUSIM_CPU_SKIP; with `out`, records the reasons. Returns the index of
// the candidate that runs.
template <std::size_t N, class Applies>
std::size_t choose(const CandidateInfo (&list)[N], Applies&& applies, Choice* out = nullptr) {
  for (std::size_t i = 0; i < N; ++i) {
    if (!list[i].generic && skipped(list[i].name)) {
      if (out) out->declined.emplace_back(list[i].name, "skipped by NPUSIM_CPU_SKIP");
      continue;
    }
    std::string why;
    if (list[i].generic || applies(i, out ? &why : nullptr)) {
      if (out) out->chosen = list[i].name;
      return i;
    }
    if (out) out->declined.emplace_back(list[i].name, std::move(why));
  }
  return N - 1;  // unreachable: the last candidate is generic
}

// Says why a candidate declines, when someone asks (why != null): a reason, or a callable that
// makes it (so the run-time path, which does not ask, builds no string).
inline bool decline(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}
template <class F>
  requires std::is_invocable_v<F>
bool decline(std::string* why, F&& reason) {
  if (why) *why = reason();
  return false;
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
