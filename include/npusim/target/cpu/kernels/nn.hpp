// Row-wise and windowed kernels: RMSNorm and layer norm, softmax (plain, log, masked+scaled),
// batch norm, pools, reductions. Rows are read into float buffers, computed with f32 (vector)
// accumulation, and written back in the output's storage.
#pragma once

#include <cmath>
#include <limits>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/compute/conv_nchwc.hpp"
#include "npusim/target/cpu/compute/max_pool_blocked.hpp"
#include "npusim/target/cpu/compute/max_pool_row.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

inline float sum_squares(const float* x, std::int64_t n) {
  fbatch a0(0.f), a1(0.f);
  std::int64_t i = 0;
  for (; i + 2 * static_cast<std::int64_t>(W) <= n; i += 2 * W) {
    fbatch u = fbatch::load_unaligned(x + i), v = fbatch::load_unaligned(x + i + W);
    a0 = xsimd::fma(u, u, a0), a1 = xsimd::fma(v, v, a1);
  }
  float s = xsimd::hadd(a0 + a1);
  for (; i < n; ++i) s += x[i] * x[i];
  return s;
}

// Thread-local float rows (sized at first use per thread; no allocation once warm).
inline float* row_buffer(std::size_t slot, std::int64_t n) {
  thread_local std::vector<std::vector<float>> rows;
  if (rows.size() <= slot) rows.resize(slot + 1);
  if (static_cast<std::int64_t>(rows[slot].size()) < n) rows[slot].resize(static_cast<std::size_t>(n));
  return rows[slot].data();
}

// Fused RMSNorm: x -> x * rsqrt(mean(x^2) + eps) [rounded as the graph stores it] [* w].
Fn bind_rmsnorm(Ctx& c);

// softmax over the last dim of a float row, in place (log variant optional).
inline void softmax_row(float* x, std::int64_t n, bool log) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  fbatch acc(0.f);
  std::int64_t i = 0;
  for (; i + static_cast<std::int64_t>(W) <= n; i += W) {
    fbatch e = xsimd::exp(fbatch::load_unaligned(x + i) - fbatch(m));
    if (!log) e.store_unaligned(x + i);
    acc += e;
  }
  float s = xsimd::hadd(acc);
  for (; i < n; ++i) {
    float e = std::exp(x[i] - m);
    if (!log) x[i] = e;
    s += e;
  }
  if (log) {
    const float ls = std::log(s) + m;
    for (i = 0; i < n; ++i) x[i] -= ls;
  } else {
    const float inv = 1.0f / s;
    for (i = 0; i + static_cast<std::int64_t>(W) <= n; i += W) (fbatch::load_unaligned(x + i) * fbatch(inv)).store_unaligned(x + i);
    for (; i < n; ++i) x[i] *= inv;
  }
}

// softmax/log_softmax over any dim; masked_softmax (x * scale + mask) over the last dim.
Fn bind_softmax(Ctx& c, std::int64_t dim, bool log, bool masked);

Fn bind_layer_norm(Ctx& c, const ops::LayerNorm::Attrs& a);

Fn bind_batch_norm(Ctx& c, const ops::BatchNorm::Attrs& a);

// max_pool2d of one plane (NaN propagates: max_pool2d's rule).
inline void max_pool_plane(const ops::MaxPool2d::Attrs& a, const float* in, std::int64_t H, std::int64_t Wd, float* out, std::int64_t OH,
                           std::int64_t OW) {
  const MaxPoolGeom mp = MaxPoolGeom::make(a, H, Wd, OH, OW);
  float* work = row_buffer(2, mp.work_floats());
  mp.pad_work(work);  // rows_max writes between the pads only
  for (std::int64_t oh = 0; oh < OH; ++oh) {
    mp.rows_max(oh, [&](std::int64_t ih) { return in + ih * Wd; }, work);
    mp.cols_max(work, out + oh * OW);
  }
}

// The input window [h0, h1) x [w0, w1) of avg_pool2d / adaptive_avg_pool2d output (oh, ow), and
// its divisor.
struct PoolWindow {
  std::int64_t h0, h1, w0, w1, div;
};
template <class Op>
PoolWindow avg_pool_window(const typename Op::Attrs& a, std::int64_t oh, std::int64_t ow, std::int64_t H, std::int64_t Wd, std::int64_t OH, std::int64_t OW) {
  if constexpr (std::is_same_v<Op, ops::AvgPool2d>) {
    std::int64_t h0 = oh * a.stride[0] - a.padding[0], w0 = ow * a.stride[1] - a.padding[1];
    std::int64_t h1 = std::min(h0 + a.kernel_size[0], H + a.padding[0]), w1 = std::min(w0 + a.kernel_size[1], Wd + a.padding[1]);
    const std::int64_t pool = (h1 - h0) * (w1 - w0);
    h0 = std::max<std::int64_t>(h0, 0), w0 = std::max<std::int64_t>(w0, 0), h1 = std::min(h1, H), w1 = std::min(w1, Wd);
    return {h0, h1, w0, w1, a.divisor_override ? *a.divisor_override : a.count_include_pad ? pool : (h1 - h0) * (w1 - w0)};
  } else {
    using P = ops::AdaptiveAvgPool2d;
    const std::int64_t h0 = P::start(oh, H, OH), h1 = P::end(oh, H, OH), w0 = P::start(ow, Wd, OW), w1 = P::end(ow, Wd, OW);
    return {h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
  }
}

// avg_pool2d / adaptive_avg_pool2d of one plane.
template <class Op>
void avg_pool_plane(const typename Op::Attrs& a, const float* in, std::int64_t H, std::int64_t Wd, float* out, std::int64_t OH, std::int64_t OW) {
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const PoolWindow pw = avg_pool_window<Op>(a, oh, ow, H, Wd, OH, OW);
      float s = 0;
      for (std::int64_t ih = pw.h0; ih < pw.h1; ++ih)
        for (std::int64_t iw = pw.w0; iw < pw.w1; ++iw) s += in[ih * Wd + iw];
      out[oh * OW + ow] = pw.div > 0 ? s / static_cast<float>(pw.div) : 0.f;
    }
}

#if defined(NPUSIM_CPU_AVX512)
// max_pool2d of a channel-blocked f32 input ([blocks][H][W][16], layout.hpp) into a blocked
// output, 16 channels per vector. The work is split by output row across all blocks, so a thread
// reads the input rows the convolution before it wrote on the same thread (the convolutions split
// by pixel ranges) rather than half of them from the other core's cache. Columns whose window lies
// inside the row skip the bounds checks. NaN propagates (max_pool2d's rule): a NaN anywhere in
// the window makes the output NaN.
Fn bind_max_pool_blocked(const ops::MaxPool2d::Attrs& a, const float* x, float* y, std::int64_t blocks, std::int64_t H, std::int64_t Wd, std::int64_t OH,
                         std::int64_t OW);

// avg_pool2d / adaptive_avg_pool2d of a channel-blocked f32 input into a blocked output (the same
// bytes as NCHW for a 1 x 1 output): the plane kernel's windows and rules, 16 channels per vector.
template <class Op>
Fn bind_avg_pool_blocked(const typename Op::Attrs& a, const float* x, float* y, std::int64_t blocks, std::int64_t H, std::int64_t Wd, std::int64_t OH,
                         std::int64_t OW) {
  return [=] {
    parallel_for(blocks * OH, 1, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t blk = r / OH, oh = r % OH;
        const float* in = x + blk * H * Wd * CBLK;
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const PoolWindow pw = avg_pool_window<Op>(a, oh, ow, H, Wd, OH, OW);
          fbatch s(0.0f);
          for (std::int64_t ih = pw.h0; ih < pw.h1; ++ih)
            for (std::int64_t iw = pw.w0; iw < pw.w1; ++iw) s += fbatch::load_aligned(in + (ih * Wd + iw) * CBLK);
          (pw.div > 0 ? s / fbatch(static_cast<float>(pw.div)) : fbatch(0.0f)).store_aligned(y + ((blk * OH + oh) * OW + ow) * CBLK);
        }
      }
    });
  };
}
#endif

// max/avg/adaptive-avg pooling over (N*C) planes: x -> y.
template <class Op>
Fn bind_pool(Ctx& c, const typename Op::Attrs& a, ir::TensorId x, ir::TensorId y) {
  const Shape &xs = c.shape(x), &ys = c.shape(y);
  const std::size_t r = xs.size();
  const std::int64_t H = xs[r - 2], Wd = xs[r - 1], OH = ys[r - 2], OW = ys[r - 1], planes = numel(xs) / (H * Wd);
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  if (c.is_blocked(x) != c.is_blocked(y) && !(OH * OW == 1 && !c.is_blocked(y)))
    c.unsupported("a pool between a blocked and an NCHW activation (npusim bug)");
#if defined(NPUSIM_CPU_AVX512)
  if (c.is_blocked(x)) {
    const auto* bx = reinterpret_cast<const float*>(px);
    auto* by = reinterpret_cast<float*>(py);
    if constexpr (std::is_same_v<Op, ops::MaxPool2d>) return bind_max_pool_blocked(a, bx, by, planes / CBLK, H, Wd, OH, OW);
    else return bind_avg_pool_blocked<Op>(a, bx, by, planes / CBLK, H, Wd, OH, OW);
  }
#endif
  return [=] {
    parallel_for(planes, 2, [&](std::int64_t p0, std::int64_t p1) {
      float* in = row_buffer(0, H * Wd);
      float* out = row_buffer(1, OH * OW);
      for (std::int64_t p = p0; p < p1; ++p) {
        load_row(dx, px + static_cast<std::size_t>(p * H * Wd) * dtype_size(dx), in, H * Wd);
        if constexpr (std::is_same_v<Op, ops::MaxPool2d>) max_pool_plane(a, in, H, Wd, out, OH, OW);
        else avg_pool_plane<Op>(a, in, H, Wd, out, OH, OW);
        store_row(dy, out, py + static_cast<std::size_t>(p * OH * OW) * dtype_size(dy), OH * OW);
      }
    });
  };
}
template <class Op>
Fn bind_pool(Ctx& c, const typename Op::Attrs& a) {
  return bind_pool<Op>(c, a, c.node().inputs[0], c.node().outputs[0]);
}

// Reductions over any dims (sum/mean/amax/amin) and argmax/argmin, accumulated in double.
template <class Op>
Fn bind_reduce(Ctx& c, const typename Op::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId x = n.inputs[0], y = n.outputs[0];
  const Shape xs = c.shape(x);
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  const std::int64_t on = c.numel(y);
  if constexpr (std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>) {
    Shape s = xs;
    std::int64_t d = a.dim ? normalize_dim(*a.dim, static_cast<std::int64_t>(s.size())) : 0;
    if (!a.dim) s = {numel(xs)}, d = 0;
    if (s.empty()) s = {1};
    std::int64_t outer = 1, inner = 1;
    const std::int64_t len = s[static_cast<std::size_t>(d)];
    for (std::int64_t i = 0; i < d; ++i) outer *= s[static_cast<std::size_t>(i)];
    for (std::size_t i = static_cast<std::size_t>(d) + 1; i < s.size(); ++i) inner *= s[i];
    return [=] {
      visit_dtype(dx, [&]<class T>() {
        const T* p = reinterpret_cast<const T*>(px);
        for (std::int64_t o = 0; o < outer; ++o)
          for (std::int64_t in = 0; in < inner; ++in) {
            std::int64_t best = 0;
            double bv = convert_scalar<double>(p[o * len * inner + in]);
            for (std::int64_t k = 1; k < len && !std::isnan(bv); ++k) {
              const double v = convert_scalar<double>(p[(o * len + k) * inner + in]);
              if ((std::is_same_v<Op, ops::Argmax> ? v > bv : v < bv) || std::isnan(v)) best = k, bv = v;
            }
            reinterpret_cast<std::int64_t*>(py)[o * inner + in] = best;
          }
      });
    };
  } else {
    std::vector<bool> red;
    ops::reduced_shape(xs, a.dim.value_or(ops::Ints{}), a.keepdim, &red);
    const Strides ost = reduced_out_strides(xs, red);
    const std::int64_t count = on ? numel(xs) / on : 0;
    constexpr bool is_max = std::is_same_v<Op, ops::Amax>, is_min = std::is_same_v<Op, ops::Amin>;
    return [=] {
      std::vector<double> acc(static_cast<std::size_t>(on), is_max ? -INFINITY : is_min ? INFINITY : 0.0);
      visit_dtype(dx, [&]<class T>() {
        const T* p = reinterpret_cast<const T*>(px);
        const std::int64_t total = numel(xs);
        std::vector<std::int64_t> idx(xs.size(), 0);
        std::int64_t o = 0;
        for (std::int64_t i = 0; i < total; ++i) {
          const double v = convert_scalar<double>(p[i]);
          double& s = acc[static_cast<std::size_t>(o)];
          if (is_max) s = (v > s || std::isnan(v)) ? v : s;
          else if (is_min) s = (v < s || std::isnan(v)) ? v : s;
          else s += v;
          for (std::size_t d = xs.size(); d-- > 0;) {
            o += ost[d];
            if (++idx[d] < xs[d]) break;
            o -= ost[d] * xs[d];
            idx[d] = 0;
          }
        }
      });
      if (std::is_same_v<Op, ops::Mean>)
        for (double& v : acc) v /= static_cast<double>(count);
      visit_dtype(dy, [&]<class T>() {
        for (std::int64_t i = 0; i < on; ++i) reinterpret_cast<T*>(py)[i] = convert_scalar<T>(acc[static_cast<std::size_t>(i)]);
      });
    };
  }
}

// linalg_vector_norm: the reductions' walk over x in memory order, |x|^ord accumulated in double
// per output (ord inf/-inf: max/min, 0: the count of non-zeros).
Fn bind_vector_norm(Ctx& c, const ops::LinalgVectorNorm::Attrs& a);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <class Op>
  requires(std::is_same_v<Op, ops::MaxPool2d> || std::is_same_v<Op, ops::AvgPool2d> || std::is_same_v<Op, ops::AdaptiveAvgPool2d>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pool<Op>(c, c.attrs<Op>())}; }
};

template <>
struct kernel<ops::LinalgVectorNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_vector_norm(c, c.attrs<ops::LinalgVectorNorm>())}; }
};

template <>
struct kernel<ops::BatchNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_batch_norm(c, c.attrs<ops::BatchNorm>())}; }
};

template <>
struct kernel<ops::LayerNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_layer_norm(c, c.attrs<ops::LayerNorm>())}; }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Amax> || std::is_same_v<Op, ops::Amin> ||
           std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_reduce<Op>(c, c.attrs<Op>())}; }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_softmax(c, c.attrs<Op>().dim, Op::log, false)}; }
};

template <>
struct kernel<fusion::RmsNorm, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rmsnorm(c)}; }
};

template <>
struct kernel<fusion::MaskedSoftmax, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_softmax(c, -1, false, true)}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/nn_inl.hpp"
#endif
