// The CPU target's policy: SIMD kernels (xsimd, -march=native; AMX tiles and AVX-512 BF16 dot
// products where the CPU has them), its own thread pool, the compiler's fusion and arena. Weights
// stay in their storage type (bf16/f16/f32), packed once at load, widened in registers;
// accumulation in f32. Partitions it cannot run go to its fallback, the reference target.
//
//   cpu_target.hpp   CpuTarget: op and pattern lists, dtypes, refusals, fallback
//   kernels/*.hpp    kernel<Op, CpuTarget> by op family, each binding to functions that do only
//                    arithmetic at run time (compute/*.hpp: GEMM, convolutions, pools)
//   executor.hpp     cpu::Executor: runs one partition (executor_for<CpuTarget>)
//   npusim/cpu.hpp   the entry header: Pipeline<npusim::CpuTarget, npusim::Bf16>
#pragma once

#include "npusim/npusim_fwd.hpp"
#include "npusim/target/cpu/kernels/attention.hpp"
#include "npusim/target/cpu/kernels/conv.hpp"
#include "npusim/target/cpu/kernels/linalg.hpp"
#include "npusim/target/cpu/kernels/misc.hpp"
#include "npusim/target/cpu/kernels/movement.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/cpu/kernels/pointwise.hpp"

namespace npusim::inline NPUSIM_ABI {

struct CpuTarget {
  static constexpr std::string_view name = "cpu";
  using op_list = ops::all_ops;
  using pattern_list = meta::list<fusion::Attention, fusion::GqaMatmul, fusion::MaskedSoftmax, fusion::RmsNorm, fusion::SiluGate, fusion::Rotary,
                                  fusion::ConvMaxPool, fusion::ConvAddRelu, fusion::ConvBnRelu, fusion::AddRelu, fusion::MatmulTransB, fusion::EltwiseChain>;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  // What it cannot run goes to the reference target (the runtime composes the two; constant
  // folding at compile time evaluates through the fallback).
  using fallback = ReferenceTarget;
  static constexpr std::string_view fallback_name = "reference";

  // Nodes whose operands the CPU kernels need as load-time constants (packed weights).
  static std::optional<std::string> refuse(const ir::Graph& g, const ir::Node& n) {
    auto is_weight = [&](std::size_t i) {
      auto k = g.tensor(n.inputs.at(i)).kind;
      return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
    };
    const auto op = ops::require_op(n);
    if ((op == ops::op_index_v<ops::Linear> || op == ops::op_index_v<ops::Conv2d>) && !is_weight(1))
      return "the CPU target packs " + n.op_type + " weights at load time; this one is computed at run time";
    if (op == ops::op_index_v<ops::Addmm>) {
      auto a = ops::read_attrs<ops::Addmm::Attrs>(n.attrs, n.op_type);
      if (!is_weight(2) || !is_weight(0) || a.alpha.value != 1 || a.beta.value != 1 || g.tensor(n.inputs[0]).shape.size() != 1)
        return "the CPU target runs addmm as bias + x @ W with load-time weights and alpha = beta = 1";
    }
    if (op == ops::op_index_v<ops::BatchNorm> || op == ops::op_index_v<ops::LayerNorm>)
      for (std::size_t i = 1; i < n.inputs.size(); ++i)
        if (!is_weight(i)) return "the CPU target needs " + n.op_type + " parameters as weights";
    return std::nullopt;
  }
};
static_assert(check_target<CpuTarget>(CpuTarget::op_list{}));
static_assert(check_target<CpuTarget>(CpuTarget::pattern_list{}));

}  // namespace npusim::inline NPUSIM_ABI
