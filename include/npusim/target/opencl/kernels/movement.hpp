// Movement kernels of the OpenCL target: every copy is one strided-copy launch (with dtype
// conversion): to_dtype, transposes and permutes, expand, slice, select, cat, chunk/split/unbind,
// slice_scatter; pad and roll gather through per-dimension index maps (ops::SourceMap).
// Views and no-ops move no bytes (the planner gives views their source's storage).
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {

using I64 = std::vector<std::int64_t>;
inline I64 to_i64(const Strides& s) { return I64(s.begin(), s.end()); }

// ---- strided copies --------------------------------------------------------------------------------
inline void copy(Binder& b, TensorRef src, TensorRef dst, const Shape& shape, const Strides& sst, std::int64_t soff, const Strides& dst_st,
                 std::int64_t doff) {
  I64 d{static_cast<std::int64_t>(shape.size()), soff, doff};
  d.insert(d.end(), shape.begin(), shape.end());
  d.insert(d.end(), sst.begin(), sst.end());
  d.insert(d.end(), dst_st.begin(), dst_st.end());
  const std::int64_t n = npusim::numel(shape);
  if (n == 0) return;
  b.launch1d(b.program("generic", ocl::cl_source::generic), "copy_strided", n, 256, Ptr{src}, dt_code(src.dtype), Ptr{dst}, dt_code(dst.dtype), b.desc(d),
             static_cast<cl_long>(n));
}
// Whole-tensor copy (with dtype conversion).
inline void copy_all(Binder& b, ir::TensorId from, ir::TensorId to) {
  const Shape& s = b.shape(to);
  copy(b, b.ref(from), b.ref(to), s, contiguous_strides(s), 0, contiguous_strides(s), 0);
}

// Copies [start, start + len*step) of dim d of x into `to` (shaped like the slice, or squeezed).
inline void slice_to(Binder& b, ir::TensorId x, std::size_t d, std::int64_t start, std::int64_t len, std::int64_t step, ir::TensorId to) {
  Shape s = b.shape(x);
  Strides st = contiguous_strides(s);
  const std::int64_t off = start * st[d];
  s[d] = len, st[d] *= step;
  ocl::copy(b, b.ref(x), b.ref(to), s, st, off, contiguous_strides(s), 0);
}
}  // namespace ocl

template <class Op>
  requires(std::is_same_v<Op, ops::Pad> || std::is_same_v<Op, ops::Roll>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0), y = b.out();
    const ops::SourceMap m = Op::source_map(a, b.shape(x));
    double fill = 0;
    if constexpr (std::is_same_v<Op, ops::Pad>) fill = a.value.value_or(0.0);
    const Shape os = m.out();
    const Strides st = contiguous_strides(m.in);
    const auto r = static_cast<std::int64_t>(os.size());
    ocl::I64 d{r};
    d.insert(d.end(), os.begin(), os.end());
    d.insert(d.end(), st.begin(), st.end());
    std::int64_t at = 0;
    for (const auto& v : m.map) d.push_back(at), at += static_cast<std::int64_t>(v.size());
    for (const auto& v : m.map) d.insert(d.end(), v.begin(), v.end());
    const std::int64_t n = npusim::numel(os);
    if (n == 0) return;
    b.launch1d(b.program("generic", ocl::cl_source::generic), "gather_map", n, 256, b.typed(x), b.typed(y), b.desc(d), static_cast<cl_long>(n),
               static_cast<cl_float>(fill));
  }
};

template <>
struct kernel<ops::ToDtype, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::copy_all(b, b.node().inputs.at(0), b.out()); }
};

// Views and no-ops move no bytes (the planner gives views their source's storage).
template <class Op>
  requires(meta::contains_v<Op, ops::view_ops> || std::is_same_v<Op, ops::AssertMetadata>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    if (b.k().kind != "view" && !b.k().outputs.empty() && std::is_same_v<Op, ops::GetItem>) b.unsupported("getitem outside a view kernel");
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Transpose> || std::is_same_v<Op, ops::TransposeT> || std::is_same_v<Op, ops::Permute>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& xs = b.shape(x);
    ops::Ints p = Op::perm(b.attrs<Op>(), xs.size());
    Strides cs = contiguous_strides(xs), st(p.size());
    Shape os(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) st[i] = cs[static_cast<std::size_t>(p[i])], os[i] = xs[static_cast<std::size_t>(p[i])];
    ocl::copy(b, b.ref(x), b.ref(b.out()), os, st, 0, contiguous_strides(os), 0);
  }
};

template <>
struct kernel<ops::Expand, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& os = b.shape(b.out());
    ocl::copy(b, b.ref(x), b.ref(b.out()), os, broadcast_strides(b.shape(x), os), 0, contiguous_strides(os), 0);
  }
};

template <>
struct kernel<ops::Slice, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::Slice>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    ops::SliceRange r = ops::clamp_slice(b.shape(x)[d], a.start, a.end, a.step);
    ocl::slice_to(b, x, d, r.start, r.length, r.step, b.out());
  }
};

template <>
struct kernel<ops::Select, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::Select>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    ocl::slice_to(b, x, d, ops::Select::resolved_index(a, b.shape(x)[d]), 1, 1, b.out());
  }
};

template <>
struct kernel<ops::Cat, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Shape& os = b.shape(b.out());
    if (npusim::numel(os) == 0) return;
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::Cat>().dim, static_cast<std::int64_t>(os.size())));
    const Strides ost = contiguous_strides(os);
    std::int64_t at = 0;
    for (ir::TensorId t : b.node().inputs) {
      if (ops::Cat::skipped({b.shape(t), DType::f32})) continue;
      ocl::copy(b, b.ref(t), b.ref(b.out()), b.shape(t), contiguous_strides(b.shape(t)), 0, ost, at * ost[d]);
      at += b.shape(t)[d];
    }
  }
};

// slice_scatter: self copied whole, then src (the slice's shape) written over self[start:end:step]
// along dim, the slice's strides on the destination side; both copies convert dtypes as torch's
// copy_ does (two launches of copy_strided: no program of its own).
template <>
struct kernel<ops::SliceScatter, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::SliceScatter>();
    const ir::TensorId x = b.node().inputs.at(0), src = b.node().inputs.at(1), y = b.out();
    const Shape& xs = b.shape(x);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(xs.size())));
    const ops::SliceRange r = ops::clamp_slice(xs[d], a.start, a.end, a.step);
    ocl::copy_all(b, x, y);
    if (r.length == 0) return;
    Shape s = xs;
    s[d] = r.length;
    Strides yst = contiguous_strides(xs);
    const std::int64_t off = r.start * yst[d];
    yst[d] *= r.step;
    ocl::copy(b, b.ref(src), b.ref(y), s, contiguous_strides(s), 0, yst, off);
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Chunk> || std::is_same_v<Op, ops::Split> || std::is_same_v<Op, ops::Unbind>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    const auto& outs = b.node().outputs;
    std::int64_t at = 0;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      std::int64_t len = 1;
      if constexpr (!std::is_same_v<Op, ops::Unbind>) len = Op::sizes(a, b.shape(x)[d]).at(k);
      if (len > 0) ocl::slice_to(b, x, d, at, len, 1, outs[k]);
      at += len;
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
