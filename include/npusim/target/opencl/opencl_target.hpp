// The OpenCL target's policy: OpenCL C 1.2 kernels (cl/*.cl, embedded at build time) on any
// OpenCL device (PoCL on CPUs, NVIDIA's driver on GPUs), f16/bf16 storage with float32
// arithmetic, the compiler's fusion and arena; the affine int8 ops in integer arithmetic. What it
// refuses (other integer arithmetic, float64, unusual addmm) runs on its fallback, the reference target.
//
//   opencl_target.hpp   OpenCLTarget: op and pattern lists, dtypes, refusals, fallback
//   kernels/*.hpp       kernel<Op, OpenCLTarget> by op family, each binding its launches
//   executor.hpp        ocl::Executor: runs one partition (executor_for<OpenCLTarget>)
//   device.hpp, binder.hpp, mma.hpp, cl/*.cl   devices and programs, binding, tensor cores, kernels
//   npusim/opencl.hpp   the entry header: Pipeline<npusim::OpenCLTarget, npusim::Bf16>
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "npusim/config.hpp"
#include "npusim/fusion/fuse.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/npusim_fwd.hpp"
#include "npusim/ops/registry.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget {
  static constexpr std::string_view name = "opencl";
  // Every op but the creation ops (constant folding removes those; others fall back); zeros_like,
  // whose input is no constant, is listed.
  using op_list = meta::concat_t<ops::unary_ops, ops::binary_ops, ops::view_ops, ops::movement_ops,
                                 meta::list<ops::Where, ops::AssertMetadata, ops::ToDtype, ops::Linear, ops::Matmul, ops::Addmm, ops::Conv2d,
                                            ops::MaxPool2d, ops::AvgPool2d, ops::AdaptiveAvgPool2d, ops::BatchNorm, ops::LayerNorm, ops::Mean,
                                            ops::Sum, ops::Amax, ops::Amin, ops::Argmax, ops::Argmin, ops::Softmax, ops::LogSoftmax,
                                            ops::Embedding, ops::IndexCopy, ops::IndexSelect, ops::ScaledDotProductAttention, ops::RotaryHop,
                                            ops::QuantizePerTensor, ops::DequantizePerTensor, ops::QConv2d, ops::QLinear, ops::QAdd, ops::QMaxPool2d, ops::QCat, ops::TopK, ops::ZerosLike,
                                            ops::IndexAdd, ops::IndexTensor, ops::Pad, ops::Roll, ops::LinalgVectorNorm, ops::MaskedFill,
                                            ops::SliceScatter>>;
  // The GEMV groups, rope_kv and conv_add_relu are what its kernels run as one launch (they were
  // merged by the executor before issue 41), linear_group_rope_kv the two of a decode step's
  // attention inputs in one, attention_transposed and transposed_rotary the transposes its
  // attention and rotary kernels absorb; each before the patterns whose ops it takes.
  using pattern_list = meta::list<fusion::Moe, fusion::AttentionTransposed, fusion::Attention, fusion::GqaMatmul, fusion::MaskedSoftmax,
                                  fusion::LinearGroupRopeKv, fusion::RopeKv, fusion::LinearAdd, fusion::LinearSiluGate, fusion::LinearGroup,
                                  fusion::RmsNorm, fusion::SiluGate,
                                  fusion::TransposedRotary, fusion::Rotary, fusion::ConvBnRelu,
                                  fusion::ConvAddRelu, fusion::AddRelu, fusion::MatmulTransB, fusion::EltwiseChain>;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // Packed linear weights (docs/quantization.md): gemv_q.cl's decode GEMV, dequantized for the GEMM.
  static constexpr std::string_view weight_formats[] = {"q8_0", "q4_0"};
  // What it refuses goes to the reference target (the runtime composes the two; constant folding
  // at compile time evaluates through the fallback).
  using fallback = ReferenceTarget;
  static constexpr std::string_view fallback_name = "reference";

  // Below the op level: the kernels compute in float32 and store f32/f16/bf16, integers and bool;
  // relu, neg, abs and clamp of integer tensors compute in 64-bit integers (integer_pointwise).
  static std::optional<std::string> refuse(const ir::Graph& g, const ir::Node& n);
  // Whether n is one of the pointwise ops the target runs in integers (every operand an integer).
  static bool integer_pointwise(const ir::Graph& g, const ir::Node& n);
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/opencl/impl/opencl_target_inl.hpp"
#endif
