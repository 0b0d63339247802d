// Mixture-of-experts kernels of the OpenCL target (cl/moe.cl): the router's topk, and the `moe`
// pattern (fusion/patterns.hpp): two launches that read each sample's token and expert index on
// the device and compute only the selected experts' rows (gate/up with the SwiGLU into a float
// scratch of S x I, then down, weighted and summed per token in sample order); zeros_like and
// index_add as plain loops (index_add of integers falls back: OpenCLTarget::refuse), so that a block the
// pattern does not take stays on the device.
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

template <>
struct kernel<ops::TopK, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::TopK>();
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& s = b.shape(x);
    const auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    b.launch1d(b.program("moe", ocl::cl_source::moe), "topk", outer * inner, 64, b.typed(x), b.typed(b.out(0)), b.typed(b.out(1)),
               static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(inner), static_cast<cl_long>(*a.k),
               static_cast<cl_int>(a.largest));
  }
};

template <>
struct kernel<ops::ZerosLike, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    b.launch1d(b.program("moe", ocl::cl_source::moe), "fill_zero", b.numel(b.out()), 256, b.typed(b.out()), static_cast<cl_long>(b.numel(b.out())));
  }
};

template <>
struct kernel<ops::IndexAdd, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::IndexAdd>();
    const auto& in = b.node().inputs;
    const ir::TensorId self = in.at(0), idx = in.at(1), src = in.at(2), y = b.out();
    const Shape& s = b.shape(self);
    const auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const cl_int code = b.index_check(b.node(), idx, "index_add", s[d], true);
    b.launch1d(b.program("moe", ocl::cl_source::moe), "index_add", b.numel(y), 256, b.typed(self), b.typed(idx), b.typed(src), b.typed(y),
               static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(b.numel(idx)), static_cast<cl_long>(inner),
               static_cast<cl_float>(a.alpha.value), b.errors(), code);
  }
};

template <>
struct kernel<fusion::Moe, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), tok = b.in(1), ids = b.in(2), w = b.in(3), gu = b.in(4), dn = b.in(5), y = b.out();
    const std::int64_t T = b.shape(x)[0], H = b.shape(x)[1], S = b.numel(tok), E = b.shape(gu)[0], I = b.shape(dn)[2];
    const ir::Node& last = b.node(b.k().nodes.size() - 1);  // index_add: its index errors are the reference's
    const cl_int tok_code = b.index_check(last, tok, "index_add", T, true);
    const cl_int exp_code = b.index_check(last, ids, "moe expert", E, true);
    cl_mem h = b.scratch(static_cast<std::size_t>(S * I) * sizeof(float));
    const cl_program p = b.program("moe", ocl::cl_source::moe);
    b.launch1d(p, "moe_gate_up", S * I, 64, b.typed(x), b.typed(tok), b.typed(ids), b.typed(gu), h, static_cast<cl_long>(T), static_cast<cl_long>(H),
               static_cast<cl_long>(E), static_cast<cl_long>(I), static_cast<cl_long>(S), b.errors(), tok_code, exp_code);
    b.launch1d(p, "moe_down", T * H, 64, h, b.typed(tok), b.typed(ids), b.typed(w), b.typed(dn), b.typed(y), static_cast<cl_long>(T),
               static_cast<cl_long>(H), static_cast<cl_long>(E), static_cast<cl_long>(I), static_cast<cl_long>(S));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
