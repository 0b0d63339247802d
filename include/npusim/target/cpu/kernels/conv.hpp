// Convolution kernels: conv2d (+ bias, [+ residual], + relu) per image and group (the binder's
// paths are in bind_conv below), a BatchNorm the compiler could not fold folded into the weights
// here, and conv_max_pool (conv2d [+ bias] [+ relu] -> max_pool2d): f32 single-group convolutions
// (AVX-512 builds) run fused (compute/conv_max_pool.hpp), the convolution's output never stored;
// anything else runs the two kernels one after the other through a buffer of the convolution's
// output that this kernel owns (the same work as unfused).
#pragma once

#include <Eigen/Core>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/conv_max_pool.hpp"
#include "npusim/target/cpu/compute/conv_nchwc.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/kernels/conv/amx.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"
#include "npusim/target/cpu/kernels/conv/blocked_f32.hpp"
#include "npusim/target/cpu/kernels/conv/blocks_f32.hpp"
#include "npusim/target/cpu/kernels/conv/depthwise.hpp"
#include "npusim/target/cpu/kernels/conv/dpbf16.hpp"
#include "npusim/target/cpu/kernels/conv/im2col_gemm.hpp"
#include "npusim/target/cpu/kernels/conv/small_f32.hpp"
#include "npusim/target/cpu/kernels/conv/widened_f32.hpp"
#include "npusim/target/cpu/kernels/conv/winograd.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// y += r, then relu, over the whole tensor in y's storage (r of y's shape and layout): the
// residual of a conv_add_relu whose convolution wrote y.
Fn bind_residual_add(Ctx& c, ir::TensorId y, ir::TensorId r, bool relu);

// Convolutions, best first, the generic one last: one type per way of running them
// (kernels/conv/*.hpp), walked by choose (candidates.hpp) for the binder, explain --kernels and
// NPUSIM_CPU_SKIP alike.
using conv_candidates = meta::list<ConvBlockedF32, ConvDepthwise, ConvAmx, ConvWinograd, ConvDpbf16, ConvWidenedF32, ConvSmallF32, ConvBlocksF32,
                                   ConvIm2colGemm>;
static_assert(check_candidate_list<ConvProblem>(conv_candidates{}), "NPUSIM: conv_candidates: names must be unique, the last and only the last generic");

// The candidate a convolution runs (index into conv_candidates), with the reasons when asked.
inline std::size_t choose_conv(const ConvProblem& p, Choice* out = nullptr) { return choose<conv_candidates>(p, out); }

// conv2d (+ bias, [+ residual], + relu), per image and group, by the first of conv_candidates that
// applies: f32 activations held channel-blocked (layout.hpp) by the blocked kernel; depthwise
// direct; bf16 on AMX tiles, else by Winograd where conv_winograd.hpp takes the geometry, else on
// AVX-512 BF16 dot products; f16 (and bf16 without those) widened to f32 for the f32 pixel-block
// kernels; otherwise im2col + the packed GEMM; all writing NCHW unless the output is blocked. A
// residual is added in the epilogue of the blocked kernel (blocked output) and of the bf16
// dot-product ones (a residual in the output's type), otherwise by a pass over the output (the
// rounding of the unfused conv -> add, which the bf16 epilogue keeps).
Fn bind_conv(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId y, const ops::Conv2d::Attrs& at,
             bool relu, std::optional<ir::TensorId> residual = std::nullopt);

// A convolution's weights and f32 bias, with a BatchNorm the compiler could not fold (e.g. a
// shared conv output) folded in here, once, in double.
struct ConvWeights {
  Tensor w;
  std::shared_ptr<std::vector<float>> bias;  // may be null
};
ConvWeights conv_weights(Ctx& c, const ir::Node& conv, const ir::Node* bn);

Fn bind_conv(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, const ops::Conv2d::Attrs& at, bool relu,
             std::optional<ir::TensorId> residual = std::nullopt);

// x -> conv (weights wt, bias b, relu) -> mid -> max pool -> y. `mid` is the convolution's output
// tensor, read for its shape and storage type only.
// Whether conv_max_pool runs as one kernel (the blocked convolution pooling its rows in cache):
// f32 single-group convolutions in AVX-512 builds, unless NPUSIM_CPU_SKIP names conv_blocked_f32.
inline bool conv_max_pool_fused(std::int64_t groups, DType x, DType mid, DType y) { return ConvBlockedF32::enabled() && ConvBlockedF32::blockable(groups, x, mid, y); }

Fn bind_conv_max_pool(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId mid, ir::TensorId y,
                      const ops::Conv2d::Attrs& at, bool relu, const ops::MaxPool2d::Attrs& pa);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::Conv2d, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    return {cpu::bind_conv(c, n.inputs[0], n.inputs[1], n.inputs.size() == 3 ? std::optional(n.inputs[2]) : std::nullopt, n.outputs[0],
                           c.attrs<ops::Conv2d>(), false)};
  }
};

template <>
struct kernel<fusion::ConvAddRelu, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& conv = c.node(0);
    const auto bias = conv.inputs.size() == 3 ? std::optional(conv.inputs[2]) : std::nullopt;
    return {cpu::bind_conv(c, conv.inputs[0], conv.inputs[1], bias, c.out(), c.attrs<ops::Conv2d>(0), c.k.params.find("has_relu")->as_bool(),
                           c.in(conv.inputs.size()))};
  }
};

template <>
struct kernel<fusion::ConvBnRelu, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& conv = c.node(0);
    const bool has_bn = c.k.params.find("has_bn")->as_bool();
    const cpu::ConvWeights w = cpu::conv_weights(c, conv, has_bn ? &c.node(1) : nullptr);
    return {cpu::bind_conv(c, conv.inputs[0], w.w, w.bias, c.out(), c.attrs<ops::Conv2d>(0), c.k.params.find("has_relu")->as_bool())};
  }
};

template <>
struct kernel<fusion::ConvMaxPool, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& conv = c.node(0);
    const bool has_bn = c.k.params.find("has_bn")->as_bool();
    const std::size_t last = c.k.nodes.size() - 1;
    const cpu::ConvWeights w = cpu::conv_weights(c, conv, has_bn ? &c.node(1) : nullptr);
    return {cpu::bind_conv_max_pool(c, conv.inputs[0], w.w, w.bias, c.node(last).inputs[0], c.out(), c.attrs<ops::Conv2d>(0),
                                    c.k.params.find("has_relu")->as_bool(), c.attrs<ops::MaxPool2d>(last))};
  }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/conv_inl.hpp"
#endif
