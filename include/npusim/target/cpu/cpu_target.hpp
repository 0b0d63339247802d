// The CPU target's policy: SIMD kernels (xsimd, -march=native; AMX tiles and AVX-512 BF16 dot
// products where the CPU has them), its own thread pool, the compiler's fusion and arena. Weights
// stay in their storage type (bf16/f16/f32), packed once at load, widened in registers;
// accumulation in f32. Partitions it cannot run go to its fallback, the reference target.
//
//   cpu_target.hpp   CpuTarget: op and pattern lists, dtypes, refusals, fallback (no kernel: light)
//   kernels/*.hpp    kernel<Op, CpuTarget> by op family, each binding to functions that do only
//                    arithmetic at run time (compute/*.hpp: GEMM, convolutions, pools)
//   executor.hpp     cpu::Executor: runs one partition (executor_for<CpuTarget>)
//   npusim/cpu.hpp   the entry header: Pipeline<npusim::CpuTarget, npusim::Bf16>
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

struct CpuTarget {
  static constexpr std::string_view name = "cpu";
  // Every op but the model-zoo ops without a CPU kernel (they fall back; the alias ops and writes
  // are rewritten into listed ops before partitioning: passes/functionalize.hpp).
  using op_list = meta::concat_t<ops::unary_ops, ops::binary_ops, ops::view_ops, ops::movement_ops, ops::other_ops, meta::list<ops::MaskedFill, ops::IndexTensor, ops::Pad, ops::Roll, ops::LinalgVectorNorm, ops::SliceScatter>>;
  using pattern_list = meta::list<fusion::Moe, fusion::Attention, fusion::GqaMatmul, fusion::MaskedSoftmax, fusion::RmsNorm, fusion::SiluGate, fusion::Rotary,
                                  fusion::ConvMaxPool, fusion::ConvAddRelu, fusion::ConvBnRelu, fusion::AddRelu, fusion::MatmulTransB, fusion::EltwiseChain>;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // What it cannot run goes to the reference target (the runtime composes the two; constant
  // folding at compile time evaluates through the fallback).
  using fallback = ReferenceTarget;
  // Linear weights it quantizes at load and reads as blocks (docs/quantization.md).
  static constexpr std::string_view weight_formats[] = {"q8_0", "q4_0"};

  // Nodes whose operands the CPU kernels need as load-time constants (packed weights).
  static std::optional<std::string> refuse(const ir::Graph& g, const ir::Node& n);
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/impl/cpu_target_inl.hpp"
#endif
