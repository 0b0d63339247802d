// Affine int8 kernels of the OpenCL target (ops/quantized.hpp; cl/quant.cl): plain integer
// arithmetic, one work-item per output, the reference target's integers bit for bit. The
// per-channel requantization multipliers are computed on the host at bind time (core/quant.hpp),
// the same numbers every target uses.
#pragma once

#include "npusim/ops/quantized.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
inline cl_program quant_program(Binder& b) { return b.program("quant", cl_source::quant); }

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
    const cl_int code = b.value_check(b.node(), x, "NaN");
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

template <>
struct kernel<ops::QConv2d, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<ops::QConv2d>();
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

}  // namespace npusim::inline NPUSIM_ABI
