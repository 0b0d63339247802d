// Matrix kernels: linear (weights packed once, GEMM or weight-streaming GEMV), matmul and the
// grouped/transposed variants between activations (Eigen on float32 copies), addmm.
#pragma once

#include <Eigen/Core>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// y[..., N] = x[..., K] W[N, K]^T + b, b a weight (copied at bind) or a tensor computed at run time
// (read before each product). weight_format "q8_0"/"q4_0" (ops::Linear's attribute):
// W is quantized to those blocks here; up to 4 rows of x read the blocks (cpu::qgemv), more rows
// multiply the blocks' values, dequantized into W's storage type, with the GEMM.
Fn bind_linear(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, bool relu = false,
               std::string_view weight_format = {});

// Batched matmul between activations through Eigen on float32 copies. B optionally transposed
// (K is its last dim) and grouped (one B per `group` consecutive A batches).
Fn bind_matmul_dense(Ctx& c, ir::TensorId a, ir::TensorId b, ir::TensorId y, bool trans_b, std::int64_t group);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::Linear, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    return {cpu::bind_linear(c, n.inputs[0], n.inputs[1], n.inputs.size() == 3 ? std::optional(n.inputs[2]) : std::nullopt, n.outputs[0], false,
                             c.attrs<ops::Linear>().weight_format)};
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

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/linalg_inl.hpp"
#endif
