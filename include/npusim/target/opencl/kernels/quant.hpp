// Affine int8 kernels of the OpenCL target (ops/quantized.hpp; cl/quant.cl): integer arithmetic,
// the reference target's integers bit for bit. Single-group convolutions run on a padded image of
// 4-channel words with dp4a (inline PTX on NVIDIA, plain arithmetic elsewhere), 64 channels x 32
// pixels a work-group; the rest one work-item per output. The
// per-channel requantization multipliers are computed on the host at bind time (core/quant.hpp),
// the same numbers every target uses.
#pragma once

#include "npusim/ops/quantized.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
// dp4a through inline PTX on NVIDIA GPUs that have it (compute capability >= 6.1), plain
// arithmetic elsewhere (cl/quant.cl, q_dot4).
inline cl_program quant_program(Binder& b) {
  const DeviceInfo& i = b.device().info();
  const bool ptx = i.platform_name.find("NVIDIA") != std::string::npos && (i.cc_major > 6 || (i.cc_major == 6 && i.cc_minor >= 1));
  return b.program("quant", cl_source::quant, ptx ? " -DQ_DP4A_PTX=1" : "");
}

// Per output channel: the fixed-point multipliers and shifts, as two __constant int arrays.
inline std::pair<cl_mem, cl_mem> channel_multipliers(Binder& b, const ops::QuantOutAttrs& a, ir::TensorId w_scale) {
  const Tensor s = b.host(w_scale).to(DType::f32);
  std::vector<cl_int> mult, shift;
  for (std::int64_t c = 0; c < s.numel(); ++c) {
    const auto m = ops::channel_multiplier(a.x_scale, s.data<float>()[c], a.out_scale);
    mult.push_back(m.multiplier), shift.push_back(m.shift);
  }
  return {b.constant(mult.data(), mult.size() * sizeof(cl_int)), b.constant(shift.data(), shift.size() * sizeof(cl_int))};
}
}  // namespace ocl

template <>
struct kernel<ops::QuantizePerTensor, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QuantizePerTensor>().affine();
    const ir::TensorId x = b.in(0);
    const std::int64_t n = b.numel(x);
    const cl_int code = b.value_check(b.node(), x, "cannot quantize NaN");
    b.launch1d(ocl::quant_program(b), "quantize", n, 256, b.typed(x), b.ptr(b.out()), static_cast<cl_long>(n), 1.0f / a.scale,
               static_cast<cl_float>(a.zero_point), static_cast<cl_float>(a.qmin), static_cast<cl_float>(a.qmax), b.errors(), code);
  }
};

template <>
struct kernel<ops::DequantizePerTensor, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::DequantizePerTensor>().affine();
    const std::int64_t n = b.numel(b.in(0));
    b.launch1d(ocl::quant_program(b), "dequantize", n, 256, b.ptr(b.in(0)), b.typed(b.out()), static_cast<cl_long>(n), a.scale,
               static_cast<cl_int>(a.zero_point));
  }
};

namespace ocl {
// A single-group convolution: the input copied into a padded image of 4-channel words (q_image),
// then qconv2d_dp4a (64 channels x 32 pixels a work-group, through local memory). Weights packed on the host as words of 4
// input channels per tap, each channel's accumulator starting at bias - x_zp * sum(w).
inline void bind_qconv2d_dp4a(Binder& b, const ops::QConv2d::Attrs& a) {
  const ir::Node& n = b.node();
  const ir::TensorId x = n.inputs.at(0), y = b.out();
  const Shape &xs = b.shape(x), &ys = b.shape(y);
  const Tensor w = b.host(n.inputs.at(1)).to(DType::i8);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3], OH = ys[2], OW = ys[3];
  const std::int64_t C4w = (C + 3) / 4, Hp = H + 2 * a.padding[0], Wp = W + 2 * a.padding[1];
  std::vector<std::uint32_t> w4(static_cast<std::size_t>(K * kh * kw * C4w), 0);
  std::vector<cl_int> start(static_cast<std::size_t>(K));
  const std::int8_t* pw = w.data<std::int8_t>();
  const Tensor* bias = n.inputs.size() == 4 ? &b.host(n.inputs[3]) : nullptr;
  const Tensor bias32 = bias ? bias->to(DType::i32) : Tensor();
  for (std::int64_t k = 0; k < K; ++k) {
    std::int64_t sum = 0;
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t r = 0; r < kh; ++r)
        for (std::int64_t s = 0; s < kw; ++s) {
          const std::int8_t v = pw[((k * C + c) * kh + r) * kw + s];
          sum += v;
          w4[static_cast<std::size_t>(((k * kh + r) * kw + s) * C4w + c / 4)] |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(v)) << (8 * (c % 4));
        }
    start[static_cast<std::size_t>(k)] = static_cast<cl_int>((bias ? bias32.data<std::int32_t>()[k] : 0) - a.x_zero_point * sum);
  }
  const auto [mult, shift] = channel_multipliers(b, a, n.inputs.at(2));
  cl_program p = quant_program(b);
  const std::size_t image_bytes = static_cast<std::size_t>(N * Hp * Wp * C4w) * 4;
  cl_mem img = b.reusable(100, image_bytes);
  I64 di{N, C, H, W, Hp, Wp, a.padding[0], a.padding[1], C4w, a.x_zero_point};
  b.launch1d(p, "q_image", N * Hp * Wp * C4w, 128, b.ptr(x), img, b.desc(di));
  I64 d{N, K, OH, OW, kh, kw, a.stride[0], a.stride[1], a.dilation[0], a.dilation[1], Hp, Wp, C4w, a.out_zero_point, a.out_min, a.out_max};
  const std::int64_t groups = N * ((K + 63) / 64) * ((OH * OW + 31) / 32);
  b.launch1d(p, "qconv2d_dp4a", groups * 64, 64, img, b.constant(w4.data(), w4.size() * 4), b.constant(start.data(), start.size() * 4), mult, shift, b.desc(d),
             b.ptr(y));
}
}  // namespace ocl

template <>
struct kernel<ops::QConv2d, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QConv2d>();
    if (a.groups == 1) return ocl::bind_qconv2d_dp4a(b, a);
    // Grouped: one work-item per output, direct.
    const ir::Node& n = b.node();
    const ir::TensorId x = n.inputs.at(0), w = n.inputs.at(1), y = b.out();
    const Shape &xs = b.shape(x), &ws = b.shape(w), &ys = b.shape(y);
    const auto [mult, shift] = ocl::channel_multipliers(b, a, n.inputs.at(2));
    const bool has_bias = n.inputs.size() == 4;
    ocl::I64 d{xs[0],         xs[1],         xs[2],         xs[3],         ws[0],         ws[2],         ws[3],        ys[2],        ys[3],      a.stride[0],
               a.stride[1],   a.padding[0],  a.padding[1],  a.dilation[0], a.dilation[1], a.groups,      a.x_zero_point, a.out_zero_point, a.out_min, a.out_max};
    (void)b.launch1d(ocl::quant_program(b), "qconv2d", b.numel(y), 128, b.ptr(x), b.ptr(w), has_bias ? b.ptr(n.inputs[3]) : ocl::Ptr{b.none().r},
                     static_cast<cl_int>(has_bias), mult, shift, b.desc(d), b.ptr(y));
  }
};

template <>
struct kernel<ops::QLinear, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QLinear>();
    const ir::Node& n = b.node();
    const ir::TensorId x = n.inputs.at(0), w = n.inputs.at(1), y = b.out();
    const std::int64_t Nf = b.shape(w)[0], Kf = b.shape(w)[1], M = b.numel(x) / Kf;
    const auto [mult, shift] = ocl::channel_multipliers(b, a, n.inputs.at(2));
    const bool has_bias = n.inputs.size() == 4;
    ocl::I64 d{M, Kf, Nf, a.x_zero_point, a.out_zero_point, a.out_min, a.out_max};
    b.launch1d(ocl::quant_program(b), "qlinear", M * Nf, 128, b.ptr(x), b.ptr(w), has_bias ? b.ptr(n.inputs[3]) : ocl::Ptr{b.none().r},
               static_cast<cl_int>(has_bias), mult, shift, b.desc(d), b.ptr(y));
  }
};

template <>
struct kernel<ops::QAdd, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ops::QAddParams p(b.attrs<ops::QAdd>());
    const cl_int v[] = {p.a_offset, p.b_offset, p.out_offset, p.out_min, p.out_max, p.a_mult.multiplier, p.a_mult.shift,
                        p.b_mult.multiplier, p.b_mult.shift, p.out_mult.multiplier, p.out_mult.shift};
    const std::int64_t n = b.numel(b.out());
    b.launch1d(ocl::quant_program(b), "qadd", n, 256, b.ptr(b.in(0)), b.ptr(b.in(1)), b.ptr(b.out()), static_cast<cl_long>(n), b.constant(v, sizeof v));
  }
};

template <>
struct kernel<ops::QMaxPool2d, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QMaxPool2d>();
    const Shape &xs = b.shape(b.in(0)), &ys = b.shape(b.out());
    ocl::I64 d{xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3], a.kernel_size[0], a.kernel_size[1], a.stride[0], a.stride[1], a.padding[0], a.padding[1],
               a.dilation[0], a.dilation[1]};
    b.launch1d(ocl::quant_program(b), "qmax_pool2d", xs[0] * xs[1] * ys[2] * ys[3], 128, b.ptr(b.in(0)), b.ptr(b.out()), b.desc(d));
  }
};

template <>
struct kernel<ops::QCat, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QCat>();
    const ir::TensorId y = b.out();
    const Shape& ys = b.shape(y);
    const auto rescale = ops::qcat_rescales(a);
    const auto [outer, inner] = ops::cat_split(ys, a.dim);
    const auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(ys.size())));
    const std::int64_t row = ys.empty() ? 0 : ys[d] * inner;
    std::int64_t at = 0;
    for (std::size_t i = 0; i < b.node().inputs.size(); ++i) {
      const ir::TensorId x = b.node().inputs[i];
      const std::int64_t len = b.shape(x).empty() ? 0 : b.shape(x)[d] * inner;
      const ops::QCatRescale& r = rescale[i];
      const cl_int p[] = {r.identity, r.m.multiplier, r.m.shift, r.zero_point, r.out_zero_point};
      b.launch1d(ocl::quant_program(b), "qcat_part", outer * len, 256, b.ptr(x), b.ptr(y), static_cast<cl_long>(outer), static_cast<cl_long>(len),
                 static_cast<cl_long>(row), static_cast<cl_long>(at), b.constant(p, sizeof p));
      at += len;
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
