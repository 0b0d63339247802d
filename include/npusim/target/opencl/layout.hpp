// Which of a partition's tensors the OpenCL target stores channels-last (NHWC): the activations
// between convolutions the tensor cores run channels-last (kernels/conv.hpp), so that their
// implicit GEMM gathers 16 contiguous bytes (8 channels of one tap) where NCHW gives one value per
// load. The shapes stay NCHW; only the bytes move. Pools read and write either layout, so they sit
// inside such a region (a max pool after an NCHW stem turns the layout, a global average pool turns
// it back: its [N, C, 1, 1] output is the same bytes in both).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "npusim/target/opencl/kernels/conv.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

inline bool is_pool_kernel(const Kernel& k) {
  return k.nodes.size() == 1 && (k.kind == ops::MaxPool2d::id || k.kind == ops::AvgPool2d::id || k.kind == ops::AdaptiveAvgPool2d::id);
}

// A tensor is stored channels-last when it is 4-D, lives in the arena (not a partition input or
// output, no view of or onto it), and every kernel that touches it is a pool or a convolution that
// `conv_ok` accepts and that takes it as its image, output or residual; at least one of them a
// convolution. A convolution runs channels-last only with all its activations so; one that cannot
// (an NCHW neighbour, a graph input) gives its tensors back, until nothing changes.
inline std::unordered_set<ir::TensorId> channels_last_tensors(const ir::Graph& g, const plan::BufferPlan& plan, const std::vector<Kernel>& kernels,
                                                             const std::function<bool(const Kernel&)>& conv_ok) {
  std::vector<char> conv(kernels.size(), 0);
  bool any = false;
  for (std::size_t i = 0; i < kernels.size(); ++i) any |= conv[i] = is_conv_kernel(kernels[i]) && conv_ok(kernels[i]);
  if (!any) return {};
  std::unordered_set<ir::TensorId> fixed(g.inputs.begin(), g.inputs.end());  // NCHW whatever happens
  fixed.insert(g.outputs.begin(), g.outputs.end());
  for (std::size_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].place == plan::Place::view) fixed.insert(static_cast<ir::TensorId>(t)), fixed.insert(plan.tensors[t].root);
  std::unordered_map<ir::TensorId, std::vector<std::size_t>> touch;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    for (auto t : kernels[i].inputs) touch[t].push_back(i);
    for (auto t : kernels[i].outputs) touch[t].push_back(i);
  }
  std::unordered_set<ir::TensorId> last;
  for (bool changed = true; changed;) {
    last.clear();
    for (const auto& [t, ks] : touch) {
      const auto& tp = plan.tensors.at(static_cast<std::size_t>(t));
      if (fixed.count(t) || tp.place != plan::Place::arena || g.tensor(t).shape.size() != 4) continue;
      bool ok = true, by_conv = false;
      for (std::size_t i : ks) {
        const Kernel& k = kernels[i];
        if (conv[i]) {
          const auto acts = conv_activations(g, k);
          ok = ok && std::find(acts.begin(), acts.end(), t) != acts.end();
          by_conv = true;
        } else {
          ok = ok && is_pool_kernel(k) && g.tensor(k.outputs.at(0)).shape.size() == 4;
        }
      }
      if (ok && by_conv) last.insert(t);
    }
    changed = false;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (!conv[i]) continue;
      for (auto t : conv_activations(g, kernels[i]))
        if (!last.count(t)) {
          conv[i] = 0, changed = true;
          break;
        }
    }
  }
  return last;
}

// What the executor stores channels-last, and what explain --kernels reports: the tensors above
// for the convolutions that can (channels_last_refusal), whose activations are 16-byte aligned in
// the arena (the 16-byte copies), where the tensor cores run them (`tensor_cores`, asked only when
// a convolution gets that far; gemm_mma not skipped by NPUSIM_OPENCL_SKIP). NPUSIM_OPENCL_NHWC=0
// (or off) keeps every tensor NCHW, to compare the two; 1, on or unset: this choice.
inline std::unordered_set<ir::TensorId> choose_channels_last(const ir::Graph& g, const plan::BufferPlan& plan, const std::vector<Kernel>& kernels,
                                                            const std::function<bool(ir::TensorId)>& weight_known, const std::function<bool()>& tensor_cores) {
  if (const char* e = std::getenv("NPUSIM_OPENCL_NHWC"); e && *e) {
    const std::string v = e;
    if (v == "0" || v == "off") return {};
    if (v != "1" && v != "on") throw Error(ErrorCode::unsupported, "NPUSIM_OPENCL_NHWC is 0/off or 1/on", {.found = v});
  }
  if (kernel_choice::skipped<Skip, GemmMma>()) return {};
  auto conv_ok = [&](const Kernel& k) {
    if (!channels_last_refusal(g, plan, k, weight_known).empty()) return false;
    for (auto t : conv_activations(g, k))
      if (plan.tensors.at(static_cast<std::size_t>(t)).offset % 16) return false;
    return tensor_cores();
  };
  return channels_last_tensors(g, plan, kernels, conv_ok);
}

}  // namespace npusim::inline NPUSIM_ABI::ocl
