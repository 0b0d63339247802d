// Convolution kernels of the OpenCL target: implicit GEMM on the matrix kernels' tiles (the
// tensor cores where the device has them), reduction indices from a table built at bind time, 1x1
// stride-1 convolutions as a plain GEMM per image, bias + residual + ReLU epilogue (conv_add_relu); an unfolded
// BatchNorm runs after the convolution, in place.
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/linalg.hpp"
#include "npusim/target/opencl/kernels/nn.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
// A convolution's product from the shapes alone (x [N, C, H, W], w [K, C/G, kh, kw], y [N, K, OH,
// OW]): A the weight, B the image; a 1x1 stride-1 convolution is a plain GEMM per image (its
// strides set, pointwise), any other an implicit GEMM over a reduction table (bind_conv).
struct ConvLayout {
  Gemm g;
  bool pointwise = false;
};
inline ConvLayout conv_layout(const Shape& xs, const Shape& ws, const Shape& ys, const ops::Conv2d::Attrs& a) {
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3], G = a.groups;
  ConvLayout l;
  Gemm& g = l.g;
  g.M = K / G, g.N = OH * OW, g.K = (C / G) * kh * kw;
  l.pointwise = kh == 1 && kw == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.padding[0] == 0 && a.padding[1] == 0 && G == 1;
  if (l.pointwise) {
    g.sam = g.K, g.sak = 1, g.sbk = H * W, g.sbn = 1, g.scm = OH * OW, g.scn = 1;
    g.nb1 = N, g.sb1 = C * H * W, g.sc1 = K * OH * OW;
  }
  return l;
}

inline void bind_conv(Binder& b, const ir::Node& conv, ir::TensorId y, bool relu, bool has_bias, std::optional<ir::TensorId> residual = {}) {
  auto a = ops::read_attrs<ops::Conv2d::Attrs>(conv.attrs, conv.op_type);
  const ir::TensorId x = conv.inputs.at(0), w = conv.inputs.at(1);
  const Shape &xs = b.shape(x), &ws = b.shape(w), &ys = b.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3], G = a.groups;
  auto [g, pointwise] = conv_layout(xs, ws, ys, a);
  g.a = b.ref(w), g.b = b.ref(x), g.c = b.ref(y), g.relu = relu;
  if (has_bias && conv.inputs.size() > 2) g.bias = b.ref(conv.inputs[2]), g.bias_mode = 2;
  if (residual) g.residual = b.ref(*residual);
  if (pointwise) {
    bind_gemm(b, g);
    return;
  }
  if (C * H * W >= (std::int64_t{1} << 31) || g.M * g.K >= (std::int64_t{1} << 31)) b.unsupported("a convolution with more than 2^31 input elements per image");
  // Per reduction index k = (c, r, s): the input offset and the window offsets, computed once.
  std::vector<cl_int> tab;
  for (std::int64_t c = 0; c < C / G; ++c)
    for (std::int64_t r = 0; r < kh; ++r)
      for (std::int64_t s = 0; s < kw; ++s)
        tab.insert(tab.end(), {static_cast<cl_int>(c * H * W + r * a.dilation[0] * W + s * a.dilation[1]), static_cast<cl_int>(r * a.dilation[0]),
                               static_cast<cl_int>(s * a.dilation[1]), 0});
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.b.dtype}, {"TC", g.c.dtype}});
  I64 d{C, H, W, OH, OW, kh, kw, a.stride[0], a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], G, K};
  g.bias_mode = 2;
  const TiledArgs t{opts, true, b.desc(d), true, b.constant(tab.data(), tab.size() * sizeof(cl_int)), N * G};
  bind_product(b, g, &t);
}
}  // namespace ocl

template <>
struct kernel<ops::Conv2d, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) { ocl::bind_conv(b, b.node(), b.out(), false, true); }
};

template <>
struct kernel<fusion::ConvBnRelu, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const ir::Node& conv = b.node(0);
    const ir::Node* bn = b.member<ops::BatchNorm>();
    const bool relu = b.member<ops::Relu>() != nullptr;
    if (!bn) {
      ocl::bind_conv(b, conv, b.out(), relu, true);
      return;
    }
    ocl::bind_conv(b, conv, b.out(), false, true);  // conv into the output, then BN (+ReLU) in place
    ocl::bind_batchnorm(b, *bn, b.out(), b.out(), relu);
    (void)k;
  }
};

// conv2d -> add(residual) [-> relu] (fusion::ConvAddRelu): the residual and the ReLU in the epilogue.
template <>
struct kernel<fusion::ConvAddRelu, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) { ocl::bind_conv(b, b.node(0), b.out(), b.member<ops::Relu>() != nullptr, true, b.k().inputs.back()); }
};

}  // namespace npusim::inline NPUSIM_ABI
