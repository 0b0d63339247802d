// kernel<Op, CpuTarget> and kernel<Pattern, CpuTarget>: each binds to one or more functions that
// do only arithmetic at run time (every pointer, shape and packed weight resolved at bind time).
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/kernels_attention.hpp"
#include "npusim/target/cpu/kernels_conv_pool.hpp"
#include "npusim/target/cpu/kernels_linalg.hpp"
#include "npusim/target/cpu/kernels_misc.hpp"
#include "npusim/target/cpu/kernels_movement.hpp"
#include "npusim/target/cpu/kernels_nn.hpp"
#include "npusim/target/cpu/kernels_pointwise.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace cpu {
using Fns = std::vector<Fn>;
}  // namespace cpu

// ---- ops ------------------------------------------------------------------------------------------
template <class Op>
  requires(Op::op_class == ops::OpClass::elementwise)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pointwise(c)}; }
};

template <class Op>
  requires(Op::op_class == ops::OpClass::view || Op::op_class == ops::OpClass::movement)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return cpu::bind_movement(c); }
};

template <>
struct kernel<ops::AssertMetadata, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx&) { return {}; }
};

template <>
struct kernel<ops::Linear, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    return {cpu::bind_linear(c, n.inputs[0], n.inputs[1], n.inputs.size() == 3 ? std::optional(n.inputs[2]) : std::nullopt, n.outputs[0])};
  }
};

template <>
struct kernel<ops::Matmul, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    return {cpu::bind_matmul_dense(c, n.inputs[0], n.inputs[1], n.outputs[0], false, 1)};
  }
};

template <>
struct kernel<ops::Addmm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    // bias + mat1 @ mat2 with mat2 a [K, N] weight: a linear whose weight is stored transposed.
    const Tensor& w = cpu::require_weight(c, n.inputs[2], "addmm mat2");
    const std::int64_t K = w.shape()[0], N = w.shape()[1], M = c.shape(n.inputs[1])[0];
    auto packed = c.own(cpu::pack_b(w.raw(), w.dtype(), K, N, false));
    auto bias = cpu::f32_copy(c, n.inputs[0]);
    cpu::GemmScratch lay = cpu::GemmScratch::layout(M, K, N);
    auto pool = c.need_scratch(lay.bytes());
    cpu::AView a{c.ptr(n.inputs[1]), c.storage(n.inputs[1]), K, false};
    cpu::CView cv{c.ptr(n.outputs[0]), c.storage(n.outputs[0]), N, false};
    cpu::Epilogue ep{bias->data(), false};
    return {[=] { cpu::gemm(a, M, *packed, cv, ep, lay, pool->get()); }};
  }
};

template <>
struct kernel<ops::Conv2d, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    return {cpu::bind_conv(c, n.inputs[0], n.inputs[1], n.inputs.size() == 3 ? std::optional(n.inputs[2]) : std::nullopt, n.outputs[0],
                           c.attrs<ops::Conv2d>(), false)};
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::MaxPool2d> || std::is_same_v<Op, ops::AvgPool2d> || std::is_same_v<Op, ops::AdaptiveAvgPool2d>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pool<Op>(c, c.attrs<Op>())}; }
};

template <>
struct kernel<ops::BatchNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_batch_norm(c, c.attrs<ops::BatchNorm>())}; }
};

template <>
struct kernel<ops::LayerNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_layer_norm(c, c.attrs<ops::LayerNorm>())}; }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Amax> || std::is_same_v<Op, ops::Amin> ||
           std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_reduce<Op>(c, c.attrs<Op>())}; }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_softmax(c, c.attrs<Op>().dim, Op::log, false)}; }
};

template <>
struct kernel<ops::Embedding, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_embedding(c)}; }
};
template <>
struct kernel<ops::IndexCopy, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_copy(c, c.attrs<ops::IndexCopy>())}; }
};
template <>
struct kernel<ops::IndexSelect, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_select(c, c.attrs<ops::IndexSelect>())}; }
};

template <>
struct kernel<ops::ScaledDotProductAttention, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    auto a = c.attrs<ops::ScaledDotProductAttention>();
    const float scale = static_cast<float>(ops::ScaledDotProductAttention::effective_scale(a, c.shape(n.inputs[0]).back()));
    return {cpu::bind_attention(c, {n.inputs[0], n.inputs[1], n.inputs[2], n.inputs.size() == 4 ? std::optional(n.inputs[3]) : std::nullopt,
                                    scale, a.is_causal, n.outputs[0]})};
  }
};

template <class Op>
  requires(Op::op_class == ops::OpClass::creation && !std::is_same_v<Op, ops::RotaryHop>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_creation<Op>(c, c.attrs<Op>())}; }
};

template <>
struct kernel<ops::RotaryHop, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rotary_hop(c)}; }
};

// ---- fusion patterns ---------------------------------------------------------------------------
template <class P>
  requires(std::is_same_v<P, fusion::EltwiseChain> || std::is_same_v<P, fusion::AddRelu> || std::is_same_v<P, fusion::SiluGate>)
struct kernel<P, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pointwise(c)}; }
};

template <>
struct kernel<fusion::RmsNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rmsnorm(c)}; }
};

template <>
struct kernel<fusion::MaskedSoftmax, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_softmax(c, -1, false, true)}; }
};

template <>
struct kernel<fusion::Rotary, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rotary(c)}; }
};

template <>
struct kernel<fusion::Attention, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const bool has_mask = c.k.params.find("has_mask")->as_bool();
    return {cpu::bind_attention(c, {c.in(0), c.in(1), c.in(2), has_mask ? std::optional(c.in(3)) : std::nullopt,
                                    static_cast<float>(c.k.param("scale", 1.0)), false, c.out()})};
  }
};

template <>
struct kernel<fusion::GqaMatmul, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    return {cpu::bind_matmul_dense(c, c.in(0), c.in(1), c.out(), c.k.params.find("trans_b")->as_bool(), c.k.int_param("group", 1))};
  }
};

template <>
struct kernel<fusion::MatmulTransB, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_matmul_dense(c, c.in(0), c.in(1), c.out(), true, 1)}; }
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
