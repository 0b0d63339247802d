// Reference kernels of the window ops (pad, roll, index.Tensor), the vector norm, the writes
// (copy_, zero_, fill, masked_fill, slice_scatter) and the alias ops (swapaxes, expand_as,
// type_as, new_zeros, repeat_interleave), on xtensor over the tensors' own buffers (ref::xt_of):
// each kernel is the xtensor spelling of the op's definition. index.Tensor stays a loop: xtensor
// 0.24 has no NumPy advanced indexing by several broadcast index arrays; pad is a gather (faster).
#pragma once

#include <cmath>
#include <cstring>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/kernels/misc.hpp"
#include "npusim/target/reference/kernels/shape.hpp"
#include "npusim/target/reference/kernels/xt.hpp"

#include <xtensor/xnorm.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

namespace npusim::inline NPUSIM_ABI {

namespace ref {

// y[i] = x[src[i]], or `fill` where src[i] < 0; y has x's runtime dtype.
inline Tensor gather(const Tensor& x, const Shape& shape, const std::vector<std::int64_t>& src, double fill = 0) {
  Tensor y = Tensor::empty(x.dtype(), shape);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    T* q = y.data<T>();
    const T f = convert_scalar<T>(fill);
    for (std::size_t i = 0; i < src.size(); ++i) q[i] = src[i] < 0 ? f : p[src[i]];
  });
  return y;
}

}  // namespace ref

// pad as a gather: output index o of dimension d reads x at i = o - left, brought into x by the
// mode (reflect, replicate, circular), or the constant where it falls outside (constant mode;
// negative padding crops). Spelled here apart from ops::Pad::source_map, which the CPU and OpenCL
// targets gather by, so that the conformance suite compares two spellings. xtensor's spelling (a
// fill, then a dynamic_view of x assigned to one of y; keep-views for the other modes) read as well
// but took twice as long on the fixtures, and its own pad returns zeros or throws bad_alloc for
// reflect and wrap (0.24).
template <>
struct kernel<ops::Pad, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Pad::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    const Shape& s = x.shape();
    const Shape& ys = args.out_specs[0].shape;
    const auto mode = ops::Pad::mode(a);
    const auto p = ops::Pad::per_dim(a, s.size());
    const std::size_t r = s.size();
    // Per dimension, the x index of each output index (-1: the fill), and x's strides.
    std::vector<std::vector<std::int64_t>> at(r);
    std::vector<std::int64_t> stride(r, 1);
    for (std::size_t d = r; d-- > 0;) {
      if (d + 1 < r) stride[d] = stride[d + 1] * s[d + 1];
      const std::int64_t n = s[d];
      for (std::int64_t o = 0; o < ys[d]; ++o) {
        std::int64_t i = o - p[d].first;
        if (i < 0 || i >= n) {
          if (mode == ops::Pad::Mode::constant) i = -1;
          else if (mode == ops::Pad::Mode::reflect) i = i < 0 ? -i : 2 * (n - 1) - i;
          else if (mode == ops::Pad::Mode::replicate) i = i < 0 ? 0 : n - 1;
          else i = ops::SourceMap::floor_mod(i, n);  // circular
        }
        at[d].push_back(i);
      }
    }
    // y's elements in order (an odometer over its indices), each x's flat index or -1.
    std::vector<std::int64_t> src(static_cast<std::size_t>(npusim::numel(ys)));
    std::vector<std::int64_t> o(r, 0);
    for (auto& e : src) {
      e = 0;
      for (std::size_t d = 0; d < r; ++d) {
        const std::int64_t i = at[d][ref::uidx(o[d])];
        if (i < 0) {
          e = -1;
          break;
        }
        e += i * stride[d];
      }
      for (std::size_t d = r; d-- > 0;)
        if (++o[d] < ys[d]) break;
        else o[d] = 0;
    }
    args.out[0] = ref::gather(x, ys, src, a.value.value_or(0.0));
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::ReflectionPad> || std::is_same_v<Op, ops::ReplicationPad> || std::is_same_v<Op, ops::CircularPad>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) { kernel<ops::Pad, ReferenceTarget>::run(Op::pad(a), args); }
};

template <>
struct kernel<ops::Roll, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Roll::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.out[0] = Tensor::empty(x.dtype(), args.out_specs[0].shape);
    if (x.numel() == 0) return;
    const auto r = static_cast<std::int64_t>(x.rank());
    // xt::roll wants 0 <= shift < size and a non-negative axis (0.24 indexes with either as given).
    auto shift = [](std::int64_t k, std::int64_t n) { return static_cast<std::ptrdiff_t>(((k % n) + n) % n); };
    ref::visit_bits(x.dtype(), [&]<class T>() {
      auto Y = ref::xt_bits<T>(y);
      if (a.dims.empty()) {  // the flattened tensor rolls
        Y = xt::roll(ref::xt_bits<T>(x), shift(a.shifts[0], x.numel()));
        return;
      }
      xt::xarray<T> v = ref::xt_bits<T>(x);
      for (std::size_t k = 0; k < a.shifts.size(); ++k) {
        const std::int64_t d = normalize_dim(a.dims[k], r);
        v = xt::roll(v, shift(a.shifts[k], x.shape()[ref::uidx(d)]), d);
      }
      Y = v;
    });
  }
};

template <>
struct kernel<ops::IndexTensor, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::IndexTensor::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    const ops::IndexTensor::Layout l = ops::IndexTensor::layout(a, args.in_specs);
    const Shape& s = x.shape();
    const Strides xs = contiguous_strides(s);
    const std::vector<std::int64_t>& from = l.from;  // per output dimension: a kept dimension of x, or -1 - j for B's j
    std::vector<Strides> is;  // per index input: strides over B
    for (std::size_t k = 1; k < args.in.size(); ++k) is.push_back(broadcast_strides(args.x(k).shape(), l.index_shape));
    const Shape& os = l.out;
    std::vector<std::int64_t> src(ref::uidx(numel(os))), idx(os.size(), 0), b(l.index_shape.size(), 0);
    for (std::size_t i = 0; i < src.size(); ++i) {
      std::int64_t off = 0;
      for (std::size_t d = 0; d < os.size(); ++d) {
        if (from[d] >= 0) off += idx[d] * xs[ref::uidx(from[d])];
        else b[ref::uidx(-1 - from[d])] = idx[d];
      }
      for (std::size_t d = 0; d < s.size(); ++d) {
        if (l.source[d] == 0) continue;
        const std::size_t k = l.source[d] - 1;
        std::int64_t io = 0;
        for (std::size_t j = 0; j < b.size(); ++j) io += b[j] * is[k][j];
        off += ref::checked_index(args.x(k + 1).data<std::int64_t>()[io], s[d], "index") * xs[d];
      }
      src[i] = off;
      for (std::size_t d = os.size(); d-- > 0;) {
        if (++idx[d] < os[d]) break;
        idx[d] = 0;
      }
    }
    args.out[0] = ref::gather(x, os, src);
  }
};

template <>
struct kernel<ops::LinalgVectorNorm, ReferenceTarget> {
  static constexpr bool provided = true;
  // In double, as torch's CPU kernel accumulates float: xtensor's norms over the reduced axes.
  static void run(const ops::LinalgVectorNorm::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::vector<bool> red = ops::LinalgVectorNorm::reduced(a, x.rank());
    std::vector<std::size_t> axes;
    ref::XShape kept;
    for (std::size_t d = 0; d < red.size(); ++d) (red[d] ? axes.push_back(d) : kept.push_back(ref::uidx(x.shape()[d])));
    const auto X = xt::cast<double>(ref::xt_of<float>(x));
    auto Y = xt::adapt(y.data<float>(), ref::uidx(y.numel()), xt::no_ownership(), kept);  // y without its keepdim 1s
    const double ord = a.ord.value;
    // (0.24 finds the calls with axes ambiguous unless the evaluation strategy is given.)
    constexpr auto lazy = xt::evaluation_strategy::lazy;
    if (ord == INFINITY) Y = xt::amax(xt::abs(X), axes, lazy);
    else if (ord == -INFINITY) Y = xt::amin(xt::abs(X), axes, lazy);
    else if (ord == 0) Y = xt::norm_l0(X, axes, lazy);
    else if (ord == 1) Y = xt::norm_l1(X, axes, lazy);
    else if (ord == 2) Y = xt::norm_l2(X, axes, lazy);
    else Y = xt::norm_lp(X, ord, axes, lazy);
  }
};

template <>
struct kernel<ops::MaskedFill, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::MaskedFill::Attrs& a, ref::Args& args) {
    Tensor& y = args.alloc(0);
    double value = a.value ? a.value->value : 0.0;
    if (args.in.size() == 3) value = args.x(2).to(DType::f32).data<float>()[0];
    const Tensor x = args.x(0).to(y.dtype());
    ref::visit_runtime(y.dtype(), [&]<class T>() {
      auto Y = ref::xt_of<T>(y);
      Y = xt::broadcast(xt::where(ref::xt_of<bool>(args.x(1)), convert_scalar<T>(value), ref::xt_of<T>(x)), Y.shape());
    });
  }
};

namespace ref {
// src converted to y's type and broadcast to y's shape.
inline void broadcast_into(const Tensor& src, Tensor& y) {
  const Tensor s = src.to(y.dtype());
  visit_bits(y.dtype(), [&]<class T>() {
    auto Y = xt_bits<T>(y);
    Y = xt::broadcast(xt_bits<T>(s), Y.shape());
  });
}
}  // namespace ref

template <>
struct kernel<ops::Copy, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Copy::Attrs&, ref::Args& args) { ref::broadcast_into(args.x(1), args.alloc(0)); }
};

template <>
struct kernel<ops::Zero, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Zero::Attrs&, ref::Args& args) { ref::fill(args.alloc(0), 0.0); }
};

template <>
struct kernel<ops::Fill, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Fill::Attrs& a, ref::Args& args) { ref::fill(args.alloc(0), a.value.value); }
};

template <>
struct kernel<ops::NewZeros, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::NewZeros::Attrs&, ref::Args& args) { ref::fill(args.alloc(0), 0.0); }
};

template <>
struct kernel<ops::SliceScatter, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::SliceScatter::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x(0);
    Tensor& y = args.out[0] = Tensor::empty(x.dtype(), x.shape());
    const Tensor src = args.x(1).to(y.dtype());
    const auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    const ops::SliceRange r = ops::clamp_slice(x.shape()[d], a.start, a.end, a.step);
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    if (r.length == 0 || x.numel() == 0) return;
    // y as [before d, d, after d], a fixed-rank view (xtensor's dynamic views cost more to set up
    // than these small tensors take to copy): y[:, start::step, :] = src.
    const std::size_t outer = ref::uidx(npusim::numel(Shape(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(d))));
    const std::size_t n = ref::uidx(x.shape()[d]), inner = ref::uidx(x.numel()) / (outer * n);
    ref::visit_bits(y.dtype(), [&]<class T>() {
      auto Y = xt::adapt(static_cast<T*>(y.raw()), outer * n * inner, xt::no_ownership(), std::array<std::size_t, 3>{outer, n, inner});
      const auto S = xt::adapt(static_cast<const T*>(src.raw()), ref::uidx(src.numel()), xt::no_ownership(),
                               std::array<std::size_t, 3>{outer, ref::uidx(r.length), inner});
      xt::view(Y, xt::all(), xt::range(r.start, r.start + (r.length - 1) * r.step + 1, r.step), xt::all()) = S;
    });
  }
};

template <>
struct kernel<ops::Swapaxes, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Swapaxes::Attrs& a, ref::Args& args) { ref::permute_copy<ops::Swapaxes>(a, args); }
};

template <>
struct kernel<ops::ExpandAs, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::ExpandAs::Attrs&, ref::Args& args) { ref::broadcast_into(args.x(), args.alloc(0)); }
};

template <>
struct kernel<ops::RepeatInterleave, ReferenceTarget> {
  static constexpr bool provided = true;
  // Every element of x repeated r times along the axis (x flattened when no dim is given).
  static void run(const ops::RepeatInterleave::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.out[0] = Tensor::empty(x.dtype(), args.out_specs[0].shape);
    const std::size_t d = ops::RepeatInterleave::axis(a, y.rank());
    ref::XShape xs = ref::xshape(y.shape());
    if (a.repeats == 0) return;
    xs[d] /= static_cast<std::size_t>(a.repeats);
    const std::vector<std::size_t> repeats(xs[d], ref::uidx(a.repeats));
    ref::visit_bits(x.dtype(), [&]<class T>() {
      // xt::repeat keeps references: to a temporary expression, it dangles (0.24).
      const auto X = xt::adapt(static_cast<const T*>(x.raw()), ref::uidx(x.numel()), xt::no_ownership(), xs);
      ref::xt_bits<T>(y) = xt::repeat(X, repeats, d);
    });
  }
};

template <>
struct kernel<ops::TypeAs, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::TypeAs::Attrs&, ref::Args& args) {
    const DType rt = ref::runtime_dtype(args.out_specs[0].dtype);
    args.out[0] = args.x().dtype() == rt ? args.x().clone() : args.x().to(rt);
  }
};

}  // namespace npusim::inline NPUSIM_ABI
