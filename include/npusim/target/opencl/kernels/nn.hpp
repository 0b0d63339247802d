// Row-wise and windowed kernels of the OpenCL target: reductions and arg-reductions, softmax
// (plain, log, masked and scaled), layer norm, RMSNorm, batch norm, pooling.
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
// The reduce and vector_norm kernels' descriptor: [nk, nr, count, kept shape, kept strides,
// reduced shape, reduced strides].
inline I64 reduce_desc(Binder& b, ir::TensorId x, const std::vector<bool>& red) {
  const Shape& xs = b.shape(x);
  const Strides st = contiguous_strides(xs);
  I64 ks, kst, rs, rst;
  for (std::size_t i = 0; i < xs.size(); ++i)
    (red[i] ? rs : ks).push_back(xs[i]), (red[i] ? rst : kst).push_back(st[i]);
  std::int64_t count = 1;
  for (auto v : rs) count *= v;
  I64 d{static_cast<std::int64_t>(ks.size()), static_cast<std::int64_t>(rs.size()), count};
  for (auto* v : {&ks, &kst, &rs, &rst}) d.insert(d.end(), v->begin(), v->end());
  return d;
}
inline void bind_reduce(Binder& b, ir::TensorId x, const std::vector<bool>& red, int op) {
  const std::int64_t nout = b.numel(b.out());
  b.launch1d(b.program("generic", ocl::cl_source::generic), "reduce", nout, 64, b.typed(x), b.typed(b.out()), b.desc(reduce_desc(b, x, red)),
             static_cast<cl_long>(nout), static_cast<cl_int>(op));
}
}  // namespace ocl

template <class Op>
  requires(std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Amax> || std::is_same_v<Op, ops::Amin>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    std::vector<bool> red;
    ops::reduced_shape(b.shape(x), a.dim.value_or(ops::Ints{}), a.keepdim, &red);
    constexpr int op = std::is_same_v<Op, ops::Sum> ? 0 : std::is_same_v<Op, ops::Mean> ? 1 : std::is_same_v<Op, ops::Amax> ? 2 : 3;
    ocl::bind_reduce(b, x, red, op);
  }
};

// linalg_vector_norm: one work-item per output, as reduce, in float32.
template <>
struct kernel<ops::LinalgVectorNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::LinalgVectorNorm>();
    const ir::TensorId x = b.node().inputs.at(0);
    const std::vector<bool> red = ops::LinalgVectorNorm::reduced(a, b.shape(x).size());
    const std::int64_t nout = b.numel(b.out());
    b.launch1d(b.program("generic", ocl::cl_source::generic), "vector_norm", nout, 64, b.typed(x), b.typed(b.out()), b.desc(ocl::reduce_desc(b, x, red)),
               static_cast<cl_long>(nout), static_cast<cl_float>(a.ord.value));
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    const std::size_t r = b.shape(x).size();
    std::vector<bool> red(r, !a.dim.has_value());
    if (a.dim) red[static_cast<std::size_t>(normalize_dim(*a.dim, static_cast<std::int64_t>(r)))] = true;
    ocl::bind_reduce(b, x, red, std::is_same_v<Op, ops::Argmax> ? 4 : 5);
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& s = b.shape(x);
    const std::size_t d = s.empty() ? 0 : static_cast<std::size_t>(normalize_dim(b.attrs<Op>().dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1, len = s.empty() ? 1 : s[d];
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    b.launch1d(b.program("generic", ocl::cl_source::generic), "softmax", outer * inner, 64, b.typed(x), b.typed(b.out()), static_cast<cl_long>(outer),
               static_cast<cl_long>(len), static_cast<cl_long>(inner), static_cast<cl_int>(Op::log));
  }
};

template <>
struct kernel<ops::LayerNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::LayerNorm>();
    const auto& in = b.node().inputs;
    std::int64_t n = 1;  // the product in place: a temporary Shape here trips GCC 13's -Wfree-nonheap-object
    for (auto d : a.normalized_shape) n *= d;
    const std::int64_t rows = n ? b.numel(in[0]) / n : 0;
    auto opt = [&](std::size_t i) { return in.size() > i ? b.typed(in[i]) : b.none(); };
    b.launch(b.program("generic", ocl::cl_source::generic), "layernorm", {static_cast<std::size_t>(rows) * 256, 1, 1}, {256, 1, 1}, 1, b.typed(in[0]), opt(1),
             static_cast<cl_int>(in.size() > 1), opt(2), static_cast<cl_int>(in.size() > 2), b.typed(b.out()), static_cast<cl_long>(n),
             static_cast<cl_float>(a.eps));
  }
};

namespace ocl {
inline void bind_batchnorm(Binder& b, const ir::Node& bn, ir::TensorId x, ir::TensorId y, bool relu) {
  auto a = ops::read_attrs<ops::BatchNorm::Attrs>(bn.attrs, bn.op_type);
  const bool affine = bn.inputs.size() == 5;
  const Shape& xs = b.shape(x);
  const std::int64_t C = xs.size() > 1 ? xs[1] : 1, n = npusim::numel(xs), inner = n / std::max<std::int64_t>(xs[0] * C, 1);
  Typed mean = b.typed(bn.inputs[affine ? 3 : 1]), var = b.typed(bn.inputs[affine ? 4 : 2]);
  Typed w = affine ? b.typed(bn.inputs[1]) : b.none(), bias = affine ? b.typed(bn.inputs[2]) : b.none();
  b.launch1d(b.program("generic", ocl::cl_source::generic), "batchnorm", n, 256, b.typed(x), mean, var, w, bias, static_cast<cl_int>(affine), b.typed(y),
             static_cast<cl_long>(n), static_cast<cl_long>(C), static_cast<cl_long>(inner), static_cast<cl_float>(a.eps), relu);
}
}  // namespace ocl

template <>
struct kernel<ops::BatchNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_batchnorm(b, b.node(), b.node().inputs.at(0), b.out(), false); }
};

template <class Op>
  requires(std::is_same_v<Op, ops::MaxPool2d> || std::is_same_v<Op, ops::AvgPool2d> || std::is_same_v<Op, ops::AdaptiveAvgPool2d>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape &xs = b.shape(x), &ys = b.shape(b.out());
    const std::size_t r = xs.size();
    const std::int64_t H = xs[r - 2], W = xs[r - 1], OH = ys[r - 2], OW = ys[r - 1], NC = npusim::numel(xs) / std::max<std::int64_t>(H * W, 1);
    const std::int64_t C = r == 4 ? xs[1] : 1;
    const bool x_last = b.channels_last(x), y_last = b.channels_last(b.out());  // NHWC (ocl::channels_last_tensors)
    ocl::I64 d{NC, H, W, OH, OW, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, C, x_last, y_last};
    int kind = 2;
    auto a = b.attrs<Op>();
    if constexpr (!std::is_same_v<Op, ops::AdaptiveAvgPool2d>) {
      d[5] = a.kernel_size[0], d[6] = a.kernel_size[1], d[7] = a.stride[0], d[8] = a.stride[1], d[9] = a.padding[0], d[10] = a.padding[1];
      if constexpr (std::is_same_v<Op, ops::MaxPool2d>) {
        d[11] = a.dilation[0], d[12] = a.dilation[1], kind = 0;
      } else {
        d[13] = a.count_include_pad, d[14] = a.divisor_override.value_or(0), kind = 1;
      }
    }
    b.launch1d(b.program("generic", ocl::cl_source::generic), "pool2d", NC * OH * OW, 64, b.typed(x), b.typed(b.out()), b.desc(d), static_cast<cl_int>(kind));
  }
};

template <>
struct kernel<fusion::MaskedSoftmax, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), mask = b.in(1);
    const Shape& xs = b.shape(x);
    Strides ms = broadcast_strides(b.shape(mask), xs);
    ocl::I64 d{static_cast<std::int64_t>(xs.size())};
    d.insert(d.end(), xs.begin(), xs.end());
    d.insert(d.end(), ms.begin(), ms.end());
    const std::int64_t rows = xs.empty() ? 1 : b.numel(x) / xs.back();
    b.launch1d(b.program("generic", ocl::cl_source::generic), "masked_softmax", rows, 64, b.typed(x), b.typed(mask), b.typed(b.out()), b.desc(d),
               static_cast<cl_long>(rows), static_cast<cl_float>(b.k().param("scale", 1.0)));
  }
};

namespace ocl {
// The stored type of the value an RMSNorm's weight multiplies (the model rounds to it first).
inline DType rmsnorm_mid(const Binder& b, const Kernel& k) {
  if (k.inputs.size() < 2) return DType::f32;
  const ir::Node& last = b.g().nodes[static_cast<std::size_t>(k.nodes.back())];
  return b.storage(last.inputs[0] == k.inputs[1] ? last.inputs[1] : last.inputs[0]);
}
}  // namespace ocl

template <>
struct kernel<fusion::RmsNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const bool has_w = k.inputs.size() > 1;
    const ir::TensorId x = b.in(0);
    const std::int64_t n = b.shape(x).back(), rows = n ? b.numel(x) / n : 0;
    const DType mid = ocl::rmsnorm_mid(b, k);
    b.launch(b.program("generic", ocl::cl_source::generic), "rmsnorm", {static_cast<std::size_t>(rows) * 256, 1, 1}, {256, 1, 1}, 1, b.typed(x),
             has_w ? b.typed(b.in(1)) : b.none(), has_w, b.typed(b.out()), static_cast<cl_long>(n), static_cast<cl_float>(k.param("eps", 1e-6)),
             ocl::dt_code(mid));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
