// Definitions for npusim/target/cpu/kernels/movement.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/movement.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_copy(Ctx& c, ir::TensorId in, ir::TensorId out, const Shape& shape, const Strides& src_st, std::int64_t src_off) {
  if (c.storage(in) != c.storage(out)) c.unsupported("copy between different storage types");
  CopyPlan p{c.ptr(in), c.ptr(out), shape, src_st, contiguous_strides(shape), src_off, 0, dtype_size(c.storage(in))};
  simplify(p);
  return [p] { run_copy(p); };
}

NPUSIM_FUNC Fn bind_map_gather(Ctx& c, ir::TensorId x, ir::TensorId y, const ops::SourceMap& m, double fill) {
  if (c.storage(x) != c.storage(y)) c.unsupported("gather between different storage types");
  const Strides st = contiguous_strides(m.in);
  std::vector<std::vector<std::int64_t>> off = m.map;
  for (std::size_t d = 0; d < off.size(); ++d)
    for (auto& i : off[d]) i = i < 0 ? -1 : i * st[d];
  const Shape os = m.out();
  const std::int64_t inner = os.back(), rows = inner ? numel(os) / inner : 0;
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dt = c.storage(y);
  return [=] {
    visit_dtype(dt, [&]<class T>() {
      const T* p = reinterpret_cast<const T*>(px);
      T* q = reinterpret_cast<T*>(py);
      const T f = convert_scalar<T>(fill);
      const std::vector<std::int64_t>& last = off.back();
      parallel_for(rows, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(inner, 1)), [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          std::int64_t rem = r, base = 0;
          for (std::size_t d = os.size() - 1; d-- > 0 && base >= 0;) {
            const std::int64_t o = off[d][static_cast<std::size_t>(rem % os[d])];
            rem /= os[d];
            base = o < 0 ? -1 : base + o;
          }
          T* row = q + r * inner;
          if (base < 0) std::fill(row, row + inner, f);
          else
            for (std::int64_t j = 0; j < inner; ++j) row[j] = last[static_cast<std::size_t>(j)] < 0 ? f : p[base + last[static_cast<std::size_t>(j)]];
        }
      });
    });
  };
}

NPUSIM_FUNC std::vector<Fn> bind_movement(Ctx& c) {
  const ir::Node& n = c.node();
  const auto op = ops::require_op(n);
  const ir::TensorId x = n.inputs.at(0);
  const Shape& xs = c.shape(x);
  const Strides cs = contiguous_strides(xs);
  auto dim_of = [&](std::int64_t d) { return static_cast<std::size_t>(normalize_dim(d, static_cast<std::int64_t>(xs.size()))); };
  std::vector<Fn> fns;
  auto permuted = [&](const ops::Ints& perm) {
    Strides st(perm.size());
    Shape s(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) st[i] = cs[static_cast<std::size_t>(perm[i])], s[i] = xs[static_cast<std::size_t>(perm[i])];
    fns.push_back(bind_copy(c, x, n.outputs[0], s, st, 0));
  };
  auto slice_out = [&](ir::TensorId out, std::size_t d, std::int64_t start, std::int64_t step) {
    Strides st = cs;
    st[d] *= step;
    fns.push_back(bind_copy(c, x, out, c.shape(out).size() == xs.size() ? c.shape(out) : [&] {
      Shape s = xs;
      s[d] = 1;
      return s;
    }(), st, start * cs[d]));
  };
  if (op == ops::op_index_v<ops::Transpose>) permuted(ops::Transpose::perm(c.attrs<ops::Transpose>(), xs.size()));
  else if (op == ops::op_index_v<ops::TransposeT>) permuted(ops::TransposeT::perm({}, xs.size()));
  else if (op == ops::op_index_v<ops::Permute>) permuted(ops::Permute::perm(c.attrs<ops::Permute>(), xs.size()));
  else if (op == ops::op_index_v<ops::Expand>) fns.push_back(bind_copy(c, x, n.outputs[0], c.shape(n.outputs[0]), broadcast_strides(xs, c.shape(n.outputs[0])), 0));
  else if (op == ops::op_index_v<ops::Slice>) {
    auto a = c.attrs<ops::Slice>();
    auto d = dim_of(a.dim);
    auto r = ops::clamp_slice(xs[d], a.start, a.end, a.step);
    slice_out(n.outputs[0], d, r.start, r.step);
  } else if (op == ops::op_index_v<ops::Select>) {
    auto a = c.attrs<ops::Select>();
    auto d = dim_of(a.dim);
    slice_out(n.outputs[0], d, ops::Select::resolved_index(a, xs[d]), 1);
  } else if (op == ops::op_index_v<ops::Chunk> || op == ops::op_index_v<ops::Split>) {
    std::size_t d;
    ops::Ints sizes;
    if (op == ops::op_index_v<ops::Chunk>) {
      auto a = c.attrs<ops::Chunk>();
      d = dim_of(a.dim), sizes = ops::Chunk::sizes(a, xs[d]);
    } else {
      auto a = c.attrs<ops::Split>();
      d = dim_of(a.dim), sizes = ops::Split::sizes(a, xs[d]);
    }
    std::int64_t at = 0;
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (c.addr(n.outputs[k])) slice_out(n.outputs[k], d, at, 1);
      at += sizes[k];
    }
  } else if (op == ops::op_index_v<ops::Unbind>) {
    auto d = dim_of(c.attrs<ops::Unbind>().dim);
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      if (c.addr(n.outputs[k])) slice_out(n.outputs[k], d, static_cast<std::int64_t>(k), 1);
  } else if (op == ops::op_index_v<ops::Cat>) {
    auto a = c.attrs<ops::Cat>();
    const ir::TensorId out = n.outputs[0];
    const Shape& os = c.shape(out);
    if (numel(os) > 0) {
      const std::size_t d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(os.size())));
      const Strides ost = contiguous_strides(os);
      std::int64_t at = 0;
      for (ir::TensorId t : n.inputs) {
        if (ops::Cat::skipped({c.shape(t), c.g.tensor(t).dtype})) continue;
        if (c.storage(t) != c.storage(out)) c.unsupported("cat of different storage types");
        CopyPlan p{c.ptr(t), c.ptr(out), c.shape(t), contiguous_strides(c.shape(t)), ost, 0, at * ost[d], dtype_size(c.storage(out))};
        simplify(p);
        fns.push_back([p] { run_copy(p); });
        at += c.shape(t)[d];
      }
    }
  } else if (op == ops::op_index_v<ops::SliceScatter>) {
    // self copied whole, then src (the slice's shape, contiguous as every stored tensor is) written
    // over self[start:end:step] along dim: the slice's strides are on the destination side.
    auto a = c.attrs<ops::SliceScatter>();
    auto d = dim_of(a.dim);
    auto r = ops::clamp_slice(xs[d], a.start, a.end, a.step);
    const ir::TensorId src = n.inputs.at(1), y = n.outputs[0];
    fns.push_back(bind_copy(c, x, y, xs, cs, 0));
    if (r.length > 0) {
      if (c.storage(src) != c.storage(y)) c.unsupported("slice_scatter of a source stored in another type (refuse() sends it to the fallback)");
      Shape s = xs;
      s[d] = r.length;
      Strides yst = cs;
      yst[d] *= r.step;
      CopyPlan p{c.ptr(src), c.ptr(y), s, contiguous_strides(s), yst, 0, r.start * cs[d], dtype_size(c.storage(y))};
      simplify(p);
      fns.push_back([p] { run_copy(p); });
    }
  } else if (op == ops::op_index_v<ops::Pad>) {
    auto a = c.attrs<ops::Pad>();
    fns.push_back(bind_map_gather(c, x, n.outputs[0], ops::Pad::source_map(a, xs), a.value.value_or(0.0)));
  } else if (op == ops::op_index_v<ops::Roll>) {
    fns.push_back(bind_map_gather(c, x, n.outputs[0], ops::Roll::source_map(c.attrs<ops::Roll>(), xs), 0.0));
  } else {
    // A view op not planned as zero-copy (its input or output lives elsewhere): a plain copy.
    fns.push_back(bind_copy(c, x, n.outputs[0], c.shape(n.outputs[0]), contiguous_strides(c.shape(n.outputs[0])), 0));
  }
  return fns;
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
