// Reference kernels: pooling, normalisation, reductions and softmax. Accumulations run in double,
// so the reference is at least as accurate as the framework it is compared with.
#pragma once

#include <cmath>
#include <limits>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"

namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::MaxPool2d, ReferenceTarget> {
  static constexpr bool provided = true;
  // Tap indices i in [0, k) with 0 <= base + i * d < size.
  static std::pair<std::int64_t, std::int64_t> taps(std::int64_t base, std::int64_t d, std::int64_t k, std::int64_t size) {
    if (base >= size) return {0, 0};
    const std::int64_t lo = base >= 0 ? 0 : (-base + d - 1) / d;
    return {lo, std::max(lo, std::min(k, (size - 1 - base) / d + 1))};
  }
  static void run(const ops::MaxPool2d::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = y.shape()[2], OW = y.shape()[3];
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t c = 0; c < NC; ++c)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          float m = -std::numeric_limits<float>::infinity();
          // Only the window taps that fall inside the input: the window itself comes from a file and
          // may be huge (padding up to half of it), the input is in memory.
          const std::int64_t bh = oh * a.stride[0] - a.padding[0], bw = ow * a.stride[1] - a.padding[1];
          const auto [i0, i1] = taps(bh, a.dilation[0], a.kernel_size[0], H);
          const auto [j0, j1] = taps(bw, a.dilation[1], a.kernel_size[1], W);
          for (std::int64_t i = i0; i < i1; ++i) {
            std::int64_t ih = bh + i * a.dilation[0];
            for (std::int64_t j = j0; j < j1; ++j) {
              std::int64_t iw = bw + j * a.dilation[1];
              float v = px[(c * H + ih) * W + iw];
              if (v > m || std::isnan(v)) m = v;
            }
          }
          py[(c * OH + oh) * OW + ow] = m;
        }
  }
};

template <>
struct kernel<ops::AvgPool2d, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::AvgPool2d::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3], OH = y.shape()[2], OW = y.shape()[3];
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t c = 0; c < NC; ++c)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          // PyTorch: the window is clipped to the padded input for the divisor, then to the input.
          std::int64_t h0 = oh * a.stride[0] - a.padding[0], w0 = ow * a.stride[1] - a.padding[1];
          std::int64_t h1 = std::min(h0 + a.kernel_size[0], H + a.padding[0]), w1 = std::min(w0 + a.kernel_size[1], W + a.padding[1]);
          std::int64_t pool = (h1 - h0) * (w1 - w0);
          h0 = std::max<std::int64_t>(h0, 0), w0 = std::max<std::int64_t>(w0, 0);
          h1 = std::min(h1, H), w1 = std::min(w1, W);
          double s = 0;
          for (std::int64_t ih = h0; ih < h1; ++ih)
            for (std::int64_t iw = w0; iw < w1; ++iw) s += px[(c * H + ih) * W + iw];
          std::int64_t div = a.divisor_override ? *a.divisor_override : a.count_include_pad ? pool : (h1 - h0) * (w1 - w0);
          py[(c * OH + oh) * OW + ow] = div > 0 ? static_cast<float>(s / static_cast<double>(div)) : 0.0f;
        }
  }
};

template <>
struct kernel<ops::AdaptiveAvgPool2d, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::AdaptiveAvgPool2d::Attrs&, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::size_t r = x.rank();
    const std::int64_t H = x.shape()[r - 2], W = x.shape()[r - 1], OH = y.shape()[r - 2], OW = y.shape()[r - 1];
    const std::int64_t NC = x.numel() / (H * W);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    using P = ops::AdaptiveAvgPool2d;
    for (std::int64_t c = 0; c < NC; ++c)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          std::int64_t h0 = P::start(oh, H, OH), h1 = P::end(oh, H, OH), w0 = P::start(ow, W, OW), w1 = P::end(ow, W, OW);
          double s = 0;
          for (std::int64_t ih = h0; ih < h1; ++ih)
            for (std::int64_t iw = w0; iw < w1; ++iw) s += px[(c * H + ih) * W + iw];
          py[(c * OH + oh) * OW + ow] = static_cast<float>(s / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
  }
};

template <>
struct kernel<ops::BatchNorm, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::BatchNorm::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const bool affine = args.in.size() == 5;
    const float* mean = args.x(affine ? 3 : 1).data<float>();
    const float* var = args.x(affine ? 4 : 2).data<float>();
    const float* w = affine ? args.x(1).data<float>() : nullptr;
    const float* b = affine ? args.x(2).data<float>() : nullptr;
    const std::int64_t N = x.shape()[0], C = x.shape()[1], inner = x.numel() / std::max<std::int64_t>(N * C, 1);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t c = 0; c < C; ++c) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[c]) + a.eps);
      const double scale = inv * (w ? w[c] : 1.0), shift = (b ? b[c] : 0.0) - mean[c] * scale;
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t base = (n * C + c) * inner;
        for (std::int64_t i = 0; i < inner; ++i) py[base + i] = static_cast<float>(px[base + i] * scale + shift);
      }
    }
  }
};

template <>
struct kernel<ops::LayerNorm, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::LayerNorm::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::int64_t n = numel(Shape(a.normalized_shape.begin(), a.normalized_shape.end())), rows = x.numel() / n;
    const float* w = args.in.size() >= 2 ? args.x(1).data<float>() : nullptr;
    const float* b = args.in.size() >= 3 ? args.x(2).data<float>() : nullptr;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = px + r * n;
      double mean = 0, var = 0;
      for (std::int64_t i = 0; i < n; ++i) mean += row[i];
      mean /= static_cast<double>(n);
      for (std::int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
      var /= static_cast<double>(n);
      const double inv = 1.0 / std::sqrt(var + a.eps);
      for (std::int64_t i = 0; i < n; ++i)
        py[r * n + i] = static_cast<float>((row[i] - mean) * inv * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f));
    }
  }
};

namespace ref {
// Visits reduction groups: for each output element, the input offsets that reduce into it.
// Implemented by iterating the input with an output-offset stride of 0 on reduced dims.
template <class F>
void reduce_for_each(const Shape& in_shape, const std::vector<bool>& red, F&& f) {
  std::array<Strides, 2> st{contiguous_strides(in_shape), reduced_out_strides(in_shape, red)};
  strided_for_each<2>(in_shape, st, [&](const std::array<std::int64_t, 2>& o) { f(o[0], o[1]); });
}
}  // namespace ref

template <class Op>
  requires(std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Amax> || std::is_same_v<Op, ops::Amin>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    std::vector<bool> red;
    ops::reduced_shape(x.shape(), a.dim.value_or(ops::Ints{}), a.keepdim, &red);
    const std::int64_t count = y.numel() ? x.numel() / y.numel() : 0;
    const bool is_max = std::is_same_v<Op, ops::Amax>, is_min = std::is_same_v<Op, ops::Amin>;
    const double init = is_max ? -INFINITY : is_min ? INFINITY : 0.0;
    std::vector<double> acc(static_cast<std::size_t>(y.numel()), init);
    Tensor xd = x.to(DType::f64);
    const double* px = xd.data<double>();
    ref::reduce_for_each(x.shape(), red, [&](std::int64_t i, std::int64_t o) {
      double& s = acc[ref::uidx(o)];
      if (is_max) s = (px[i] > s || std::isnan(px[i])) ? px[i] : s;
      else if (is_min) s = (px[i] < s || std::isnan(px[i])) ? px[i] : s;
      else s += px[i];
    });
    if (std::is_same_v<Op, ops::Mean>)
      for (double& v : acc) v /= static_cast<double>(count);
    Tensor accd = Tensor::from_values<double>(y.shape(), std::span<const double>(acc));
    y = accd.to(y.dtype());
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    Tensor x = args.x().to(DType::f64);
    Tensor& y = args.alloc(0);
    Shape s = x.shape();
    std::int64_t d = a.dim ? normalize_dim(*a.dim, static_cast<std::int64_t>(s.size())) : 0;
    if (!a.dim) s = {x.numel()}, d = 0;
    if (s.empty()) s = {1};
    std::int64_t outer = 1, inner = 1, len = s[ref::uidx(d)];
    for (std::int64_t i = 0; i < d; ++i) outer *= s[ref::uidx(i)];
    for (std::size_t i = ref::uidx(d) + 1; i < s.size(); ++i) inner *= s[i];
    const double* px = x.data<double>();
    auto* py = y.data<std::int64_t>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t in = 0; in < inner; ++in) {
        std::int64_t best = 0;
        double bv = px[o * len * inner + in];
        for (std::int64_t k = 1; k < len && !std::isnan(bv); ++k) {
          double v = px[(o * len + k) * inner + in];
          bool better = std::is_same_v<Op, ops::Argmax> ? v > bv : v < bv;
          if (better || std::isnan(v)) best = k, bv = v;
        }
        py[o * inner + in] = best;
      }
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const Shape& s = x.shape();
    const std::size_t d = s.empty() ? 0 : ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1, len = s.empty() ? 1 : s[d];
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t in = 0; in < inner; ++in) {
        auto at = [&](std::int64_t k) { return (o * len + k) * inner + in; };
        double m = -INFINITY;
        for (std::int64_t k = 0; k < len; ++k) m = std::max(m, static_cast<double>(px[at(k)]));
        double sum = 0;
        for (std::int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(px[at(k)]) - m);
        for (std::int64_t k = 0; k < len; ++k) {
          double v = static_cast<double>(px[at(k)]) - m;
          py[at(k)] = static_cast<float>(Op::log ? v - std::log(sum) : std::exp(v) / sum);
        }
      }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
