// The conv_max_pool kernel: conv2d [+ bias] [+ relu] -> max_pool2d. f32 single-group
// convolutions (AVX-512 builds) run fused (conv_max_pool.hpp), the convolution's output never
// stored. Anything else runs the two kernels one after the other through a buffer of the
// convolution's output that this kernel owns (the same work as unfused).
#pragma once

#include "npusim/target/cpu/conv_max_pool.hpp"
#include "npusim/target/cpu/kernels_linalg.hpp"
#include "npusim/target/cpu/kernels_nn.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// x -> conv (weights wt, bias b, relu) -> mid -> max pool -> y. `mid` is the convolution's output
// tensor, read for its shape and storage type only.
inline Fn bind_conv_max_pool(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId mid, ir::TensorId y,
                             const ops::Conv2d::Attrs& at, bool relu, const ops::MaxPool2d::Attrs& pa) {
  const Shape& ms = c.shape(mid);
#if defined(NPUSIM_CPU_AVX512)
  if (at.groups == 1 && c.storage(x) == DType::f32 && c.storage(mid) == DType::f32 && c.storage(y) == DType::f32) {
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
