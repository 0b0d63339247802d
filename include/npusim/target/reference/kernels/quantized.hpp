// Reference kernels of the affine int8 ops (ops/quantized.hpp): the integer semantics every
// other target's kernels are held to, bit for bit. The reference holds integers as int64; the
// accumulators are int32 sums computed exactly (Eigen int32 products of the zero-point-shifted
// codes), then requantized with TFLite's fixed-point arithmetic.
#pragma once

#include <Eigen/Core>

#include "npusim/ops/quantized.hpp"
#include "npusim/target/reference/kernels/common.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ref {
using IMat = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Per output channel: the fixed-point multiplier and the int32 bias (0 without one).
inline std::vector<quant::FixedPointMultiplier> channel_multipliers(const ops::QuantOutAttrs& a, const Tensor& w_scale) {
  std::vector<quant::FixedPointMultiplier> m(static_cast<std::size_t>(w_scale.numel()));
  const float* s = w_scale.data<float>();
  for (std::size_t c = 0; c < m.size(); ++c) m[c] = ops::channel_multiplier(a.x_scale, s[c], a.out_scale);
  return m;
}
inline std::vector<std::int32_t> channel_bias(const Args& args, std::int64_t cout) {
  std::vector<std::int32_t> b(static_cast<std::size_t>(cout), 0);
  if (args.in.size() == 4)
    for (std::int64_t c = 0; c < cout; ++c) b[uidx(c)] = static_cast<std::int32_t>(args.x(3).data<std::int64_t>()[c]);
  return b;
}
}  // namespace ref

template <>
struct kernel<ops::QuantizePerTensor, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QuantizePerTensor::Attrs& a, ref::Args& args) {
    const quant::Affine af = a.affine();
    const float* x = args.x().data<float>();
    std::int64_t* y = args.alloc(0).data<std::int64_t>();
    for (std::int64_t i = 0, n = args.x().numel(); i < n; ++i) y[i] = quant::quantize(x[i], af);
  }
};

template <>
struct kernel<ops::DequantizePerTensor, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::DequantizePerTensor::Attrs& a, ref::Args& args) {
    const quant::Affine af = a.affine();
    const std::int64_t* x = args.x().data<std::int64_t>();
    float* y = args.alloc(0).data<float>();
    for (std::int64_t i = 0, n = args.x().numel(); i < n; ++i) y[i] = quant::dequantize(static_cast<std::int32_t>(x[i]), af);
  }
};

template <>
struct kernel<ops::QConv2d, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QConv2d::Attrs& a, ref::Args& args) {
    const Tensor &x = args.x(0), &w = args.x(1);
    Tensor& y = args.alloc(0);
    const auto [N, C, H, W, K, kh, kw, OH, OW, G, Cg, Kg, rows, cols] = ref::ConvDims(x.shape(), w.shape(), y.shape(), a.groups);
    const auto mult = ref::channel_multipliers(a, args.x(2));
    const auto bias = ref::channel_bias(args, K);
    ref::IMat wm(K, rows), col(rows, cols), acc;
    for (std::int64_t i = 0; i < K * rows; ++i) wm.data()[i] = static_cast<std::int32_t>(w.data<std::int64_t>()[i]);
    const std::int64_t* px = x.data<std::int64_t>();
    std::int64_t* py = y.data<std::int64_t>();
    const auto zx = static_cast<std::int32_t>(a.x_zero_point);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t g = 0; g < G; ++g) {
        // im2col of x - x_zero_point: a padded tap is the real value 0.
        ref::im2col(px + (n * C + g * Cg) * H * W, Cg, H, W, kh, kw, OH, OW, a.stride, a.padding, a.dilation, std::int32_t{0},
                    [zx](std::int64_t v) { return static_cast<std::int32_t>(v) - zx; }, col.data());
        acc.noalias() = wm.middleRows(g * Kg, Kg) * col;
        for (std::int64_t k = 0; k < Kg; ++k) {
          const std::int64_t ch = g * Kg + k;
          for (std::int64_t i = 0; i < cols; ++i)
            py[(n * K + ch) * cols + i] = ops::requantize(acc(k, i) + bias[ref::uidx(ch)], mult[ref::uidx(ch)], static_cast<std::int32_t>(a.out_zero_point),
                                                          static_cast<std::int32_t>(a.out_min), static_cast<std::int32_t>(a.out_max));
        }
      }
  }
};

template <>
struct kernel<ops::QLinear, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QLinear::Attrs& a, ref::Args& args) {
    const Tensor &x = args.x(0), &w = args.x(1);
    Tensor& y = args.alloc(0);
    const std::int64_t Nf = w.shape()[0], Kf = w.shape()[1], M = x.numel() / Kf;
    const auto mult = ref::channel_multipliers(a, args.x(2));
    const auto bias = ref::channel_bias(args, Nf);
    ref::IMat wm(Nf, Kf), xm(M, Kf);
    for (std::int64_t i = 0; i < Nf * Kf; ++i) wm.data()[i] = static_cast<std::int32_t>(w.data<std::int64_t>()[i]);
    for (std::int64_t i = 0; i < M * Kf; ++i) xm.data()[i] = static_cast<std::int32_t>(x.data<std::int64_t>()[i] - a.x_zero_point);
    const ref::IMat acc = xm * wm.transpose();
    std::int64_t* py = y.data<std::int64_t>();
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < Nf; ++n)
        py[m * Nf + n] = ops::requantize(acc(m, n) + bias[ref::uidx(n)], mult[ref::uidx(n)], static_cast<std::int32_t>(a.out_zero_point),
                                         static_cast<std::int32_t>(a.out_min), static_cast<std::int32_t>(a.out_max));
  }
};

template <>
struct kernel<ops::QAdd, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QAdd::Attrs& a, ref::Args& args) {
    const ops::QAddParams p(a);
    const std::int64_t *pa = args.x(0).data<std::int64_t>(), *pb = args.x(1).data<std::int64_t>();
    std::int64_t* py = args.alloc(0).data<std::int64_t>();
    for (std::int64_t i = 0, n = args.x(0).numel(); i < n; ++i) py[i] = p(static_cast<std::int32_t>(pa[i]), static_cast<std::int32_t>(pb[i]));
  }
};

template <>
struct kernel<ops::QMaxPool2d, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QMaxPool2d::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = y.shape()[2], OW = y.shape()[3];
    const std::int64_t* px = x.data<std::int64_t>();
    std::int64_t* py = y.data<std::int64_t>();
    for (std::int64_t c = 0; c < NC; ++c)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          std::int64_t m = INT64_MIN;
          for (std::int64_t i = 0; i < a.kernel_size[0]; ++i)
            for (std::int64_t j = 0; j < a.kernel_size[1]; ++j) {
              const std::int64_t ih = oh * a.stride[0] - a.padding[0] + i * a.dilation[0], iw = ow * a.stride[1] - a.padding[1] + j * a.dilation[1];
              if (ih >= 0 && ih < H && iw >= 0 && iw < W) m = std::max(m, px[(c * H + ih) * W + iw]);
            }
          py[(c * OH + oh) * OW + ow] = m;  // every window holds a tap (window_output_size)
        }
  }
};

template <>
struct kernel<ops::QCat, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::QCat::Attrs& a, ref::Args& args) {
    Tensor& y = args.alloc(0);
    const auto rescale = ops::qcat_rescales(a);
    const auto [outer, inner] = ops::cat_split(y.shape(), a.dim);
    const auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(y.rank())));
    std::int64_t* py = y.data<std::int64_t>();
    std::int64_t at = 0;
    for (std::size_t i = 0; i < args.in.size(); ++i) {
      const Tensor& x = args.x(i);
      const std::int64_t len = x.rank() ? x.shape()[d] * inner : 0;
      const std::int64_t* px = x.data<std::int64_t>();
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < len; ++j) py[o * y.shape()[d] * inner + at + j] = rescale[i](static_cast<std::int32_t>(px[o * len + j]));
      at += len;
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
