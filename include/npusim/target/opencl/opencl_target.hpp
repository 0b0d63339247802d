// The OpenCL target's policy: OpenCL C 1.2 kernels (cl/*.cl, embedded at build time) on any
// OpenCL device (PoCL on CPUs, NVIDIA's driver on GPUs), f16/bf16 storage with float32
// arithmetic, the compiler's fusion and arena. What it refuses (integer arithmetic, float64,
// unusual addmm) runs on its fallback, the reference target.
//
//   opencl_target.hpp   OpenCLTarget: op and pattern lists, dtypes, refusals, fallback
//   kernels/*.hpp       kernel<Op, OpenCLTarget> by op family, each binding its launches
//   executor.hpp        ocl::Executor: runs one partition (executor_for<OpenCLTarget>)
//   device.hpp, binder.hpp, mma.hpp, cl/*.cl   devices and programs, binding, tensor cores, kernels
//   npusim/opencl.hpp   the entry header: Pipeline<npusim::OpenCLTarget, npusim::Bf16>
#pragma once

#include "npusim/npusim_fwd.hpp"
#include "npusim/target/opencl/kernels/attention.hpp"
#include "npusim/target/opencl/kernels/conv.hpp"
#include "npusim/target/opencl/kernels/index.hpp"
#include "npusim/target/opencl/kernels/linalg.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"
#include "npusim/target/opencl/kernels/nn.hpp"
#include "npusim/target/opencl/kernels/pointwise.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget {
  static constexpr std::string_view name = "opencl";
  // Every op but the creation ops (constant folding removes those; others fall back).
  using op_list = meta::concat_t<ops::unary_ops, ops::binary_ops, ops::view_ops, ops::movement_ops,
                                 meta::list<ops::Where, ops::AssertMetadata, ops::ToDtype, ops::Linear, ops::Matmul, ops::Addmm, ops::Conv2d,
                                            ops::MaxPool2d, ops::AvgPool2d, ops::AdaptiveAvgPool2d, ops::BatchNorm, ops::LayerNorm, ops::Mean,
                                            ops::Sum, ops::Amax, ops::Amin, ops::Argmax, ops::Argmin, ops::Softmax, ops::LogSoftmax,
                                            ops::Embedding, ops::IndexCopy, ops::IndexSelect, ops::ScaledDotProductAttention, ops::RotaryHop>>;
  using pattern_list = meta::list<fusion::Attention, fusion::GqaMatmul, fusion::MaskedSoftmax, fusion::RmsNorm, fusion::SiluGate, fusion::Rotary,
                                  fusion::ConvBnRelu, fusion::AddRelu, fusion::MatmulTransB, fusion::EltwiseChain>;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // What it refuses goes to the reference target (the runtime composes the two; constant folding
  // at compile time evaluates through the fallback).
  using fallback = ReferenceTarget;
  static constexpr std::string_view fallback_name = "reference";

  // Below the op level: the kernels compute in float32 and store f32/f16/bf16, integers and bool.
  static std::optional<std::string> refuse(const ir::Graph& g, const ir::Node& n) {
    const auto op = ops::require_op(n);
    const auto& info = ops::op_info(op);
    auto any = [&](auto pred) {
      for (auto t : n.inputs)
        if (pred(g.tensor(t).dtype)) return true;
      for (auto t : n.outputs)
        if (pred(g.tensor(t).dtype)) return true;
      return false;
    };
    if (any([](DType t) { return t == DType::f64; })) return "the OpenCL target does not compute in float64";
    const bool int_in = std::any_of(n.inputs.begin(), n.inputs.end(), [&](auto t) { return is_integral(g.tensor(t).dtype); });
    if (info.op_class == ops::OpClass::elementwise && info.id != "to_dtype" && any([](DType t) { return is_integral(t); }))
      return "the OpenCL target runs pointwise ops in float32 only (integer arithmetic falls back)";
    if ((info.op_class == ops::OpClass::reduction || info.op_class == ops::OpClass::matmul || info.op_class == ops::OpClass::conv ||
         info.op_class == ops::OpClass::pool || info.op_class == ops::OpClass::normalization) &&
        int_in)
      return "the OpenCL target reduces and multiplies floats only";
    if (op == ops::op_index_v<ops::Addmm>) {
      auto a = ops::read_attrs<ops::Addmm::Attrs>(n.attrs, n.op_type);
      if (a.alpha.value != 1 || a.beta.value != 1 || g.tensor(n.inputs[0]).shape.size() != 1)
        return "the OpenCL target runs addmm as x @ W + bias with alpha = beta = 1 and a 1-D bias";
    }
    if (op == ops::op_index_v<ops::ScaledDotProductAttention>) {
      const Shape& q = g.tensor(n.inputs[0]).shape;
      if (q.size() < 3 || q.size() > 4 || q.back() > 256) return "the OpenCL attention kernel takes rank 3-4 inputs with head dim <= 256";
    }
    return std::nullopt;
  }
};
static_assert(check_target<OpenCLTarget>(OpenCLTarget::op_list{}));
static_assert(check_target<OpenCLTarget>(OpenCLTarget::pattern_list{}));

}  // namespace npusim::inline NPUSIM_ABI
