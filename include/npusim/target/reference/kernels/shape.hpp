// Reference kernels: views alias their input; movement ops copy through strides.
#pragma once

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"

namespace npusim::inline NPUSIM_ABI {

// Views: same storage, the output's shape (the op's inference already checked it).
template <class Op>
  requires(meta::contains_v<Op, ops::view_ops> && !std::is_same_v<Op, ops::GetItem>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs&, ref::Args& args) { args.alias(0, args.x()); }
};

template <>
struct kernel<ops::GetItem, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::GetItem::Attrs& a, ref::Args& args) { args.alias(0, args.x(ref::uidx(a.index))); }
};

template <>
struct kernel<ops::AssertMetadata, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::AssertMetadata::Attrs&, ref::Args&) {}
};

namespace ref {
template <class Op>
void permute_copy(const typename Op::Attrs& a, Args& args) {
  const Tensor& x = args.x();
  ops::Ints p = Op::perm(a, x.rank());
  Strides cs = contiguous_strides(x.shape()), st(p.size());
  Shape os(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) st[i] = cs[uidx(p[i])], os[i] = x.shape()[uidx(p[i])];
  args.out[0] = strided_copy(x, os, st);
}

// Slice [start, start + len*step) of dim d as a strided view copied out.
inline Tensor slice_copy(const Tensor& x, std::size_t d, std::int64_t start, std::int64_t len, std::int64_t step) {
  Strides st = contiguous_strides(x.shape());
  Shape os = x.shape();
  os[d] = len;
  std::int64_t off = start * st[d];
  st[d] *= step;
  return strided_copy(x, os, st, off);
}
}  // namespace ref

template <class Op>
  requires(std::is_same_v<Op, ops::Transpose> || std::is_same_v<Op, ops::TransposeT> || std::is_same_v<Op, ops::Permute>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) { ref::permute_copy<Op>(a, args); }
};

template <>
struct kernel<ops::Expand, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Expand::Attrs&, ref::Args& args) {
    const Shape& os = args.out_specs[0].shape;
    args.out[0] = ref::strided_copy(args.x(), os, broadcast_strides(args.x().shape(), os));
  }
};

template <>
struct kernel<ops::Slice, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Slice::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    ops::SliceRange r = ops::clamp_slice(x.shape()[d], a.start, a.end, a.step);
    args.out[0] = ref::slice_copy(x, d, r.start, r.length, r.step);
  }
};

template <>
struct kernel<ops::Select, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Select::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    std::int64_t i = ops::Select::resolved_index(a, x.shape()[d]);
    args.out[0] = ref::slice_copy(x, d, i, 1, 1).reshaped(args.out_specs[0].shape);
  }
};

template <>
struct kernel<ops::Cat, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Cat::Attrs& a, ref::Args& args) {
    Tensor& y = args.alloc(0);
    if (y.numel() == 0) return;
    const Shape& os = y.shape();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(os.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= os[i];
    for (std::size_t i = d + 1; i < os.size(); ++i) inner *= os[i];
    const std::size_t es = dtype_size(y.dtype());
    auto* dst = static_cast<std::byte*>(y.raw());
    std::int64_t at = 0;
    for (std::size_t k = 0; k < args.in.size(); ++k) {
      if (ops::Cat::skipped(args.in_specs[k])) continue;
      Tensor x = args.x(k).to(y.dtype());
      const auto* src = static_cast<const std::byte*>(x.raw());
      const std::int64_t len = x.shape()[d];
      const auto block = static_cast<std::size_t>(len * inner) * es;
      for (std::int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + (static_cast<std::size_t>(o * os[d] + at) * static_cast<std::size_t>(inner)) * es, src + static_cast<std::size_t>(o) * block, block);
      at += len;
    }
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Chunk> || std::is_same_v<Op, ops::Split>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    std::int64_t at = 0;
    ops::Ints sizes = Op::sizes(a, x.shape()[d]);
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      args.out[k] = ref::slice_copy(x, d, at, sizes[k], 1);
      at += sizes[k];
    }
  }
};

template <>
struct kernel<ops::Unbind, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Unbind::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(x.rank())));
    for (std::int64_t k = 0; k < x.shape()[d]; ++k)
      args.out[ref::uidx(k)] = ref::slice_copy(x, d, k, 1, 1).reshaped(args.out_specs[ref::uidx(k)].shape);
  }
};

}  // namespace npusim::inline NPUSIM_ABI
