// Definitions for npusim/target/cpu/kernels/conv.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/conv.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_residual_add(Ctx& c, ir::TensorId y, ir::TensorId r, bool relu) {
  constexpr std::int64_t CH = 1024;
  const std::int64_t n = c.numel(y);
  std::byte* py = c.ptr(y);
  const std::byte* pr = c.ptr(r);
  const DType dy = c.storage(y), dr = c.storage(r);
  return [=] {
    parallel_for((n + CH - 1) / CH, 4, [&](std::int64_t b0, std::int64_t b1) {
      alignas(64) float a[CH], s[CH];
      for (std::int64_t blk = b0; blk < b1; ++blk) {
        const std::int64_t off = blk * CH, len = std::min(CH, n - off);
        load_row(dy, py + static_cast<std::size_t>(off) * dtype_size(dy), a, len);
        load_row(dr, pr + static_cast<std::size_t>(off) * dtype_size(dr), s, len);
        for (std::int64_t i = 0; i < len; ++i) a[i] = relu ? std::max(a[i] + s[i], 0.0f) : a[i] + s[i];
        store_row(dy, a, py + static_cast<std::size_t>(off) * dtype_size(dy), len);
      }
    });
  };
}

NPUSIM_FUNC std::string conv_shape(const ConvGeom& g) {
  return std::to_string(g.kh) + "x" + std::to_string(g.kw) + " stride " + std::to_string(g.sh) + " pad " + std::to_string(g.ph) + ", " +
         std::to_string(g.C) + " -> " + std::to_string(g.K) + " channels, " + std::to_string(g.G) + " group(s), " + std::to_string(g.OH) + "x" +
         std::to_string(g.OW) + " output";
}

NPUSIM_FUNC Fn bind_conv(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId y,
                         const ops::Conv2d::Attrs& at, bool relu, std::optional<ir::TensorId> residual) {
  const Shape &xs = c.shape(x), &ys = c.shape(y);
  const ConvGeom g{xs[0], xs[1], xs[2], xs[3], wt.shape()[0], wt.shape()[2], wt.shape()[3], ys[2], ys[3], at.groups,
                   at.stride[0], at.stride[1], at.padding[0], at.padding[1], at.dilation[0], at.dilation[1]};
  const ConvProblem problem{g, c.storage(x), c.storage(y), c.is_blocked(x), c.is_blocked(y)};
  const std::size_t chosen = choose_conv(problem);
  if ((problem.blocked_in || problem.blocked_out) && !is<ConvBlockedF32, conv_candidates>(chosen))
    c.unsupported("a blocked activation around a convolution the blocked kernel does not run (npusim bug)");
  ConvBinding binding{c, problem, wt, b, x, y, relu, residual, c.ptr(x), c.ptr(y)};
  return with_candidate<Fn, conv_candidates>(chosen, [&]<class C>() -> Fn {
    bool fused = false;
    if constexpr (requires { C::fuses_residual(binding); }) fused = residual && C::fuses_residual(binding);
    if (residual && !fused) {  // the convolution, then the residual and the relu in a pass of their own
      binding.residual.reset();
      binding.relu = false;
      Fn conv = C::bind(binding), add = bind_residual_add(c, y, *residual, relu);
      return [=] { conv(), add(); };
    }
    return C::bind(binding);
  });
}

NPUSIM_FUNC ConvWeights conv_weights(Ctx& c, const ir::Node& conv, const ir::Node* bn) {
  const auto bias = conv.inputs.size() == 3 ? std::optional(conv.inputs[2]) : std::nullopt;
  if (!bn) return {require_weight(c, conv.inputs[1], "conv weight"), bias ? f32_copy(c, *bias) : nullptr};
  const bool affine = bn->inputs.size() == 5;
  const double eps = ops::read_attrs<ops::BatchNorm::Attrs>(bn->attrs, bn->op_type).eps;
  auto f64 = [&](ir::TensorId t) { return require_weight(c, t, "batch_norm parameter").to(DType::f64); };
  Tensor w = f64(conv.inputs[1]), mean = f64(bn->inputs[affine ? 3 : 1]), var = f64(bn->inputs[affine ? 4 : 2]);
  const std::int64_t cout = w.shape()[0], per = w.numel() / cout;
  Tensor wf = Tensor::empty(DType::f32, w.shape());
  auto b = c.own(std::vector<float>(static_cast<std::size_t>(cout)));
  Tensor cb = bias ? f64(*bias) : Tensor(), gm = affine ? f64(bn->inputs[1]) : Tensor(), bt = affine ? f64(bn->inputs[2]) : Tensor();
  for (std::int64_t o = 0; o < cout; ++o) {
    const double sc = (gm.defined() ? gm.data<double>()[o] : 1.0) / std::sqrt(var.data<double>()[o] + eps);
    for (std::int64_t i = 0; i < per; ++i) wf.data<float>()[o * per + i] = static_cast<float>(w.data<double>()[o * per + i] * sc);
    (*b)[static_cast<std::size_t>(o)] =
        static_cast<float>(((cb.defined() ? cb.data<double>()[o] : 0.0) - mean.data<double>()[o]) * sc + (bt.defined() ? bt.data<double>()[o] : 0.0));
  }
  return {*c.own(wf), b};
}

NPUSIM_FUNC Fn bind_conv(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y,
                         const ops::Conv2d::Attrs& at, bool relu, std::optional<ir::TensorId> residual) {
  return bind_conv(c, x, require_weight(c, w, "conv weight"), bias ? f32_copy(c, *bias) : nullptr, y, at, relu, residual);
}

NPUSIM_FUNC Fn bind_conv_max_pool(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId mid,
                                  ir::TensorId y, const ops::Conv2d::Attrs& at, bool relu, const ops::MaxPool2d::Attrs& pa) {
  const Shape& ms = c.shape(mid);
#if defined(NPUSIM_CPU_AVX512)
  if (conv_max_pool_fused(at.groups, c.storage(x), c.storage(mid), c.storage(y))) {
    const Shape &xs = c.shape(x), &ys = c.shape(y);
    const ConvGeom g{xs[0], xs[1], xs[2], xs[3], wt.shape()[0], wt.shape()[2], wt.shape()[3], ms[2], ms[3], 1,
                     at.stride[0], at.stride[1], at.padding[0], at.padding[1], at.dilation[0], at.dilation[1]};
    auto f = c.own(make_blocked_conv_max_pool(g, wt.raw(), wt.dtype(), b ? b->data() : nullptr, relu, c.is_blocked(x), pa, ys[2], ys[3], c.is_blocked(y)));
    auto pool = c.need_scratch(f->scratch_bytes());
    const auto* px = c.ptr<const float>(x);
    auto* py = c.ptr<float>(y);
    const std::int64_t xn = xs[1] * xs[2] * xs[3], yn = ys[1] * ys[2] * ys[3];
    return [=] {
      for (std::int64_t n = 0; n < g.N; ++n) blocked_conv_max_pool(*f, px + n * xn, py + n * yn, pool->get());
    };
  }
#endif
  if (c.is_blocked(x) || c.is_blocked(y)) c.unsupported("a blocked activation around a conv_max_pool the fused kernel cannot run (npusim bug)");
  // The convolution's output in a buffer of its own, NCHW.
  auto buf = c.own(AlignedBuf::make(static_cast<std::size_t>(numel(ms)) * dtype_size(c.storage(mid))));
  Ctx inner = c;
  inner.addr = [outer = c.addr, mid, p = buf->as<std::byte>()](ir::TensorId t) { return t == mid ? p : outer(t); };
  Fn conv = bind_conv(inner, x, wt, b, mid, at, relu), pool = bind_pool<ops::MaxPool2d>(inner, pa, mid, y);
  return [conv = std::move(conv), pool = std::move(pool)] { conv(), pool(); };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
