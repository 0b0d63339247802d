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
// A 1x1 stride-1 unpadded convolution of one group: a matrix product over the pixels as they are.
inline bool is_pointwise(const Shape& ws, const ops::Conv2d::Attrs& a) {
  return ws[2] == 1 && ws[3] == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.padding[0] == 0 && a.padding[1] == 0 && a.groups == 1;
}
inline ConvLayout conv_layout(const Shape& xs, const Shape& ws, const Shape& ys, const ops::Conv2d::Attrs& a) {
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3], G = a.groups;
  ConvLayout l;
  Gemm& g = l.g;
  g.M = K / G, g.N = OH * OW, g.K = (C / G) * kh * kw;
  l.pointwise = is_pointwise(ws, a);
  if (l.pointwise) {
    g.sam = g.K, g.sak = 1, g.sbk = H * W, g.sbn = 1, g.scm = OH * OW, g.scn = 1;
    g.nb1 = N, g.sb1 = C * H * W, g.sc1 = K * OH * OW;
  }
  return l;
}

// ---- channels-last (NHWC) convolutions on the tensor cores ---------------------------------------
// Where a convolution's image, output and residual are all stored channels-last (the executor's
// choice, ocl::channels_last_tensors), its product is y[pixel, Cout] = im2col(x)[pixel, K] W'^T with
// the pixels of every image as M: a 1x1 stride-1 convolution is a linear layer over x's rows, any
// other gathers its image as the tensor cores' tiles load it (gemm_mma -DA_IM2COL), 16 bytes (8
// channels of one tap) at a time, zero where the window leaves the image. W' is the weight reordered
// to [Cout][kh][kw][C] once at bind time. The epilogue is a linear layer's: bias per output channel,
// residual in the output's layout, ReLU.

// The activations of a convolution kernel (conv2d, conv_bn_relu, conv_add_relu): the image, the
// output, and conv_add_relu's residual.
inline std::vector<ir::TensorId> conv_activations(const ir::Graph& g, const Kernel& k) {
  std::vector<ir::TensorId> t{g.nodes.at(static_cast<std::size_t>(k.nodes.at(0))).inputs.at(0), k.outputs.at(0)};
  if (k.kind == fusion::ConvAddRelu::name) t.push_back(k.inputs.back());
  return t;
}
inline bool is_conv_kernel(const Kernel& k) {
  return k.kind == fusion::ConvBnRelu::name || k.kind == fusion::ConvAddRelu::name || k.kind == ops::Conv2d::id;
}
// "" when the kernel's convolution can run channels-last on the tensor cores (its storage types,
// shapes and weight as the binder will see them; the device's tensor cores are the caller's
// question), else why not.
inline std::string channels_last_refusal(const ir::Graph& g, const plan::BufferPlan& plan, const Kernel& k, const std::function<bool(ir::TensorId)>& weight_known) {
  if (!is_conv_kernel(k)) return "not a convolution";
  const ir::Node& conv = g.nodes.at(static_cast<std::size_t>(k.nodes.at(0)));
  for (auto n : k.nodes)
    if (g.nodes.at(static_cast<std::size_t>(n)).op_type == ops::BatchNorm::id) return "a BatchNorm left unfolded (it runs over NCHW)";
  const auto a = ops::read_attrs<ops::Conv2d::Attrs>(conv.attrs, conv.op_type);
  const ir::TensorId x = conv.inputs.at(0), w = conv.inputs.at(1), y = k.outputs.at(0);
  const Shape &xs = g.tensor(x).shape, &ws = g.tensor(w).shape;
  if (xs.size() != 4 || ws.size() != 4 || g.tensor(y).shape.size() != 4) return "not a 2-D convolution of 4-D tensors";
  if (a.groups != 1) return "groups";
  if (xs[1] % 8 || ws[0] % 8) return "channels not a multiple of 8 (a gathered chunk is 8 channels of one tap)";
  if (!weight_known(w)) return "a weight computed at run time (it is reordered at bind time)";
  auto st = [&](ir::TensorId t) { return plan.tensors.at(static_cast<std::size_t>(t)).storage; };
  const DType t = st(x);
  if ((t != DType::f16 && t != DType::bf16) || st(w) != t || st(y) != t) return "operands not all f16 or all bf16";
  return {};
}

inline void bind_conv_channels_last(Binder& b, const ir::Node& conv, ir::TensorId y, bool relu, bool has_bias, std::optional<ir::TensorId> residual) {
  auto a = ops::read_attrs<ops::Conv2d::Attrs>(conv.attrs, conv.op_type);
  const ir::TensorId x = conv.inputs.at(0), w = conv.inputs.at(1);
  const Shape &xs = b.shape(x), &ws = b.shape(w), &ys = b.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Co = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3];
  if (!b.channels_last(x) || (residual && !b.channels_last(*residual)))
    b.unsupported("a channels-last convolution over an image or residual stored NCHW (npusim bug)");
  Gemm g;
  g.M = N * OH * OW, g.N = Co, g.K = C * kh * kw;
  g.sam = C, g.sak = 1, g.sbk = 1, g.sbn = g.K, g.scm = Co, g.scn = 1;
  g.a = b.ref(x), g.c = b.ref(y), g.relu = relu, g.channels_last = true;
  if (has_bias && conv.inputs.size() > 2) g.bias = b.ref(conv.inputs[2]);
  if (residual) g.residual = b.ref(*residual);
  if (is_pointwise(ws, a)) {  // x's rows are the pixels: a linear layer with the weight [Cout, C] as it is
    g.b = b.ref(w);
    bind_gemm(b, g);
    return;
  }
  const DType st = b.storage(w);
  const Tensor& host = b.host(w);
  const Tensor wt = host.dtype() == st ? host : host.to(st);
  const std::size_t es = dtype_size(st);
  std::vector<std::byte> re(static_cast<std::size_t>(Co * g.K) * es);
  const auto* src = static_cast<const std::byte*>(wt.raw());
  for (std::int64_t o = 0; o < Co; ++o)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t r = 0; r < kh; ++r)
        for (std::int64_t q = 0; q < kw; ++q)
          std::memcpy(re.data() + static_cast<std::size_t>(((o * kh + r) * kw + q) * C + c) * es, src + static_cast<std::size_t>(((o * C + c) * kh + r) * kw + q) * es, es);
  g.b = {b.constant(re.data(), re.size()), 0, st};
  std::vector<cl_int> tab;  // per 8 channels of K = (r, s, c): offset from the window origin, r', s'
  for (std::int64_t k = 0; k < g.K; k += 8) {
    const std::int64_t c = k % C, rs = k / C, r = (rs / kw) * a.dilation[0], q = (rs % kw) * a.dilation[1];
    tab.insert(tab.end(), {static_cast<cl_int>((r * W + q) * C + c), static_cast<cl_int>(r), static_cast<cl_int>(q), 0});
  }
  g.im2col = Gemm::Im2col{b.constant(tab.data(), tab.size() * sizeof(cl_int)), H, W, C, OW, OH * OW, a.stride[0], a.stride[1], a.padding[0], a.padding[1]};
  if (N * H * W * C >= (std::int64_t{1} << 31) || g.M * g.N >= (std::int64_t{1} << 31)) b.unsupported("a channels-last convolution with more than 2^31 elements");
  bind_gemm(b, g);
}

inline void bind_conv(Binder& b, const ir::Node& conv, ir::TensorId y, bool relu, bool has_bias, std::optional<ir::TensorId> residual = {}) {
  if (b.channels_last(y)) return bind_conv_channels_last(b, conv, y, relu, has_bias, residual);
  auto a = ops::read_attrs<ops::Conv2d::Attrs>(conv.attrs, conv.op_type);
  const ir::TensorId x = conv.inputs.at(0), w = conv.inputs.at(1);
  const Shape &xs = b.shape(x), &ws = b.shape(w), &ys = b.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3], G = a.groups;
  if (b.channels_last(x) || (residual && b.channels_last(*residual)))
    b.unsupported("an NCHW convolution over an image or residual stored channels-last (npusim bug)");
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
