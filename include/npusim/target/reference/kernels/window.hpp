// Reference kernels of the window ops (pad, roll, index.Tensor), the vector norm, the writes
// (copy_, zero_, fill, masked_fill, slice_scatter) and the alias ops (swapaxes, expand_as,
// type_as, new_zeros). Movement is one gather: every output element's source offset (or none,
// for constant padding), computed per dimension, then copied in the tensor's own type.
#pragma once

#include <cmath>
#include <cstring>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/kernels/misc.hpp"
#include "npusim/target/reference/kernels/shape.hpp"

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

// The source offset of every output element when output index o_d reads input index
// map[d][o_d] (-1: outside) along each dimension.
inline std::vector<std::int64_t> offsets(const Shape& in, const std::vector<std::vector<std::int64_t>>& map) {
  const Strides st = contiguous_strides(in);
  Shape out;
  for (const auto& m : map) out.push_back(static_cast<std::int64_t>(m.size()));
  std::vector<std::int64_t> r(uidx(numel(out)));
  std::vector<std::int64_t> idx(out.size(), 0);
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < out.size() && o >= 0; ++d) {
      const std::int64_t s = map[d][uidx(idx[d])];
      o = s < 0 ? -1 : o + s * st[d];
    }
    r[i] = o;
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

inline std::int64_t floor_mod(std::int64_t a, std::int64_t n) { return ((a % n) + n) % n; }

}  // namespace ref

template <>
struct kernel<ops::Pad, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Pad::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    const Shape& s = x.shape();
    const auto mode = ops::Pad::mode(a);
    const auto p = ops::Pad::per_dim(a, s.size());
    std::vector<std::vector<std::int64_t>> map(s.size());
    for (std::size_t d = 0; d < s.size(); ++d) {
      const std::int64_t n = s[d], l = p[d].first, len = n + p[d].first + p[d].second;
      for (std::int64_t o = 0; o < len; ++o) {
        std::int64_t i = o - l;
        if (i < 0 || i >= n) {
          switch (mode) {
            case ops::Pad::Mode::constant: i = -1; break;
            case ops::Pad::Mode::reflect: i = i < 0 ? -i : 2 * (n - 1) - i; break;
            case ops::Pad::Mode::replicate: i = i < 0 ? 0 : n - 1; break;
            case ops::Pad::Mode::circular: i = ref::floor_mod(i, n); break;
          }
        }
        map[d].push_back(i);
      }
    }
    args.out[0] = ref::gather(x, args.out_specs[0].shape, ref::offsets(s, map), a.value.value_or(0.0));
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
    if (x.numel() == 0) {
      args.out[0] = x.clone();
      return;
    }
    // No dims: the flattened tensor rolls.
    const Shape s = a.dims.empty() ? Shape{x.numel()} : x.shape();
    std::vector<std::vector<std::int64_t>> map(s.size());
    for (std::size_t d = 0; d < s.size(); ++d)
      for (std::int64_t o = 0; o < s[d]; ++o) map[d].push_back(o);
    for (std::size_t k = 0; k < a.shifts.size(); ++k) {
      const auto d = a.dims.empty() ? 0 : ref::uidx(normalize_dim(a.dims[k], static_cast<std::int64_t>(s.size())));
      for (std::int64_t o = 0; o < s[d]; ++o) map[d][ref::uidx(o)] = ref::floor_mod(map[d][ref::uidx(o)] - a.shifts[k], s[d]);
    }
    args.out[0] = ref::gather(x.reshaped(s), s, ref::offsets(s, map)).reshaped(x.shape());
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
    // Where each output dimension comes from: the broadcast index (-1 - its position in B) or a
    // kept dimension of x.
    std::vector<std::int64_t> from;
    const auto nb = static_cast<std::int64_t>(l.index_shape.size());
    auto push_b = [&] {
      for (std::int64_t i = 0; i < nb; ++i) from.push_back(-1 - i);
    };
    if (!l.adjacent) push_b();
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (l.adjacent && d == l.first) push_b();
      if (l.source[d] == 0) from.push_back(static_cast<std::int64_t>(d));
    }
    std::vector<Strides> is;  // per index input: strides over B
    for (std::size_t k = 1; k < args.in.size(); ++k) is.push_back(broadcast_strides(args.x(k).shape(), l.index_shape));
    const Shape& os = l.out;
    std::vector<std::int64_t> src(ref::uidx(numel(os))), idx(os.size(), 0), b(ref::uidx(nb), 0);
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
  static void run(const ops::LinalgVectorNorm::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    const Shape& s = x.shape();
    const std::vector<bool> red = ops::LinalgVectorNorm::reduced(a, s.size());
    // x laid out [kept..., reduced...]: each output is one row of `inner` values.
    Shape ps, ks;
    Strides st;
    const Strides cs = contiguous_strides(s);
    std::int64_t inner = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t d = 0; d < s.size(); ++d)
        if (red[d] == (pass == 1)) {
          ps.push_back(s[d]), st.push_back(cs[d]);
          (pass == 0 ? ks.push_back(s[d]) : void(inner *= s[d]));
        }
    const Tensor p = ref::strided_copy(x, ps, st);
    Tensor& y = args.alloc(0);
    const double ord = a.ord.value;
    const float* v = p.data<float>();
    for (std::int64_t o = 0; o < y.numel(); ++o) {
      double acc = std::isinf(ord) ? (ord > 0 ? 0.0 : INFINITY) : 0.0;
      for (std::int64_t i = 0; i < inner; ++i) {
        const double e = std::fabs(static_cast<double>(v[o * inner + i]));
        if (std::isinf(ord)) acc = ord > 0 ? std::max(acc, e) : std::min(acc, e);
        else if (ord == 0) acc += e != 0 ? 1.0 : 0.0;
        else if (ord == 1) acc += e;
        else if (ord == 2) acc += e * e;
        else acc += std::pow(e, ord);
      }
      if (!std::isinf(ord) && ord != 0 && ord != 1) acc = ord == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / ord);
      y.data<float>()[o] = static_cast<float>(acc);
    }
  }
};

template <>
struct kernel<ops::MaskedFill, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::MaskedFill::Attrs& a, ref::Args& args) {
    const Shape& os = args.out_specs[0].shape;
    const Tensor x = ref::strided_copy(args.x(0), os, broadcast_strides(args.x(0).shape(), os));
    const Tensor m = ref::strided_copy(args.x(1), os, broadcast_strides(args.x(1).shape(), os));
    double value = a.value ? a.value->value : 0.0;
    if (args.in.size() == 3) value = args.x(2).to(DType::f32).data<float>()[0];
    std::vector<std::int64_t> src(ref::uidx(m.numel()));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = m.data<bool>()[i] ? -1 : static_cast<std::int64_t>(i);
    args.out[0] = ref::gather(x, os, src, value);
  }
};

namespace ref {
// src broadcast to `shape` and converted to the runtime type of `to`.
inline Tensor broadcast_to(const Tensor& src, const Shape& shape, DType to) {
  return strided_copy(src, shape, broadcast_strides(src.shape(), shape)).to(runtime_dtype(to));
}
}  // namespace ref

template <>
struct kernel<ops::Copy, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Copy::Attrs&, ref::Args& args) {
    args.out[0] = ref::broadcast_to(args.x(1), args.out_specs[0].shape, args.out_specs[0].dtype);
  }
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
    Tensor y = x.clone();
    const Tensor src = args.x(1).to(x.dtype());
    const auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    const ops::SliceRange r = ops::clamp_slice(x.shape()[d], a.start, a.end, a.step);
    Strides st = contiguous_strides(x.shape());
    Shape vs = x.shape();
    vs[d] = r.length;
    const std::int64_t base = r.start * st[d];
    st[d] *= r.step;
    std::array<Strides, 2> both{st, contiguous_strides(vs)};
    const std::size_t es = dtype_size(x.dtype());
    auto* dst = static_cast<std::byte*>(y.raw());
    const auto* s = static_cast<const std::byte*>(src.raw());
    ref::strided_for_each<2>(vs, both, [&](const std::array<std::int64_t, 2>& o) {
      std::memcpy(dst + (base + o[0]) * static_cast<std::int64_t>(es), s + o[1] * static_cast<std::int64_t>(es), es);
    });
    args.out[0] = y;
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
  static void run(const ops::ExpandAs::Attrs&, ref::Args& args) {
    const Shape& os = args.out_specs[0].shape;
    args.out[0] = ref::strided_copy(args.x(), os, broadcast_strides(args.x().shape(), os));
  }
};

template <>
struct kernel<ops::RepeatInterleave, ReferenceTarget> {
  static constexpr bool provided = true;
  // out[outer, i * r + j, inner] = x[outer, i, inner] for j < r, with x seen as [outer, n, inner].
  static void run(const ops::RepeatInterleave::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor y = args.alloc(0);
    const Shape& os = args.out_specs[0].shape;
    const std::size_t d = ops::RepeatInterleave::axis(a, os.size());
    std::int64_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < d; ++k) outer *= os[k];
    for (std::size_t k = d + 1; k < os.size(); ++k) inner *= os[k];
    const std::int64_t r = a.repeats, n = r ? os[d] / r : 0;
    const std::size_t es = dtype_size(x.dtype());
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(y.raw());
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < r; ++j)
          std::memcpy(dst + static_cast<std::size_t>(((o * n + i) * r + j) * inner) * es, src + static_cast<std::size_t>((o * n + i) * inner) * es,
                      static_cast<std::size_t>(inner) * es);
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
