// Indexing and rotary kernels of the OpenCL target: embedding and index_select (row gathers),
// index.Tensor (advanced indexing: swin's and maxvit's relative-position gathers), index_copy (the
// KV-cache write, in place when planned so), the rotary HOP and the rotary pattern, and rope_kv (a
// decode step's two rotaries and its two cache writes as one launch).
// Indices are checked on the device: the first out of range fails the run with the reference's
// error (Binder::index_check).
#pragma once

#include <array>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
inline void gather_rows(Binder& b, ir::TensorId x, ir::TensorId idx, ir::TensorId y, std::size_t d, const char* what, bool negatives) {
  const Shape& s = b.shape(x);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t n = b.numel(idx);
  const cl_int code = b.index_check(b.node(), idx, what, s[d], negatives);
  b.launch1d(b.program("generic", ocl::cl_source::generic), "gather_rows", outer * n * inner, 256, b.typed(x), b.typed(idx), b.typed(y),
             static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(n), static_cast<cl_long>(inner), negatives, b.errors(), code);
}

// The rotary kernels' shape descriptor: rank, x's shape, then cos's and sin's strides broadcast to it.
inline cl_mem rotary_desc(Binder& b, ir::TensorId x, ir::TensorId cos, ir::TensorId sin) {
  const Shape& xs = b.shape(x);
  Strides cs = broadcast_strides(b.shape(cos), xs), ss = broadcast_strides(b.shape(sin), xs);
  I64 d{static_cast<std::int64_t>(xs.size())};
  d.insert(d.end(), xs.begin(), xs.end());
  d.insert(d.end(), cs.begin(), cs.end());
  d.insert(d.end(), ss.begin(), ss.end());
  return b.desc(d);
}
}  // namespace ocl

template <>
struct kernel<ops::Embedding, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::gather_rows(b, b.node().inputs.at(0), b.node().inputs.at(1), b.out(), 0, "embedding", false); }
};

template <>
struct kernel<ops::IndexSelect, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::IndexSelect>().dim, static_cast<std::int64_t>(b.shape(x).size())));
    ocl::gather_rows(b, x, b.node().inputs.at(1), b.out(), d, "index_select", true);
  }
};

// index.Tensor: one launch. The descriptor gives each output dimension its stride in x (a kept
// dimension) or in each index tensor (a dimension of the broadcast index shape B); the indices are
// read on the device, each checked against the dimension it indexes.
template <>
struct kernel<ops::IndexTensor, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr std::size_t max_indices = 4;  // gather_index's index arguments
  static void bind(ocl::Binder& b) {
    const ir::Node& n = b.node();
    const ir::TensorId x = n.inputs.at(0), y = b.out();
    ops::Specs specs;
    for (ir::TensorId t : n.inputs) specs.push_back({b.shape(t), b.g().tensor(t).dtype});
    const ops::IndexTensor::Layout l = ops::IndexTensor::layout(b.attrs<ops::IndexTensor>(), specs);
    const Shape& s = b.shape(x);
    const Strides xs = contiguous_strides(s);
    const std::vector<std::int64_t>& from = l.from;  // per output dimension: a kept dimension of x, or -1 - j for B's j
    const Shape& os = l.out;
    const std::size_t r = os.size();
    ocl::I64 desc{static_cast<std::int64_t>(r), 0};
    desc.insert(desc.end(), os.begin(), os.end());
    for (std::size_t d = 0; d < r; ++d) desc.push_back(from[d] >= 0 ? xs[static_cast<std::size_t>(from[d])] : 0);
    std::array<ocl::Typed, max_indices> idx{b.none(), b.none(), b.none(), b.none()};
    std::array<cl_int, max_indices> code{};
    std::size_t k = 0;
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (l.source[d] == 0) continue;
      if (k == max_indices) b.unsupported("index with more than 4 index tensors");
      const ir::TensorId t = n.inputs.at(l.source[d]);
      const Strides st = broadcast_strides(b.shape(t), l.index_shape);
      for (std::size_t o = 0; o < r; ++o) desc.push_back(from[o] < 0 ? st[static_cast<std::size_t>(-1 - from[o])] : 0);
      desc.push_back(s[d]);
      desc.push_back(xs[d]);
      idx[k] = b.typed(t);
      code[k] = b.index_check(n, t, "index", s[d], true);
      ++k;
    }
    desc[1] = static_cast<std::int64_t>(k);
    const std::int64_t count = numel(os);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "gather_index", count, 256, b.typed(x), b.typed(y), idx[0], idx[1], idx[2], idx[3],
               b.desc(desc), static_cast<cl_long>(count), b.errors(), code[0], code[1], code[2], code[3]);
  }
};

// index_copy: out = self with rows at `index` replaced. When the executor gave the output self's
// storage (a KV cache read by nothing else), only the new rows are written.
template <>
struct kernel<ops::IndexCopy, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    const ir::TensorId self = in.at(0), idx = in.at(1), src = in.at(2), y = b.out();
    const Shape& s = b.shape(self);
    if (!(b.ref(self) == b.ref(y))) ocl::copy_all(b, self, y);
    if (s.empty()) b.unsupported("index_copy of a 0-d tensor");
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::IndexCopy>().dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const std::int64_t n = b.numel(idx);
    const cl_int code = b.index_check(b.node(), idx, "index_copy", s[d], true);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "scatter_rows", outer * n * inner, 256, b.typed(src), b.typed(idx), b.typed(y),
               static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(n), static_cast<cl_long>(inner), b.errors(), code);
  }
};

template <>
struct kernel<ops::RotaryHop, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId inv = b.node().inputs.at(0), pos = b.node().inputs.at(1);
    const std::int64_t half = b.numel(inv), tokens = b.numel(pos);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rotary_embedding", tokens * half, 64, b.typed(inv), b.typed(pos), b.typed(b.out(0)),
               b.typed(b.out(1)), static_cast<cl_long>(tokens), static_cast<cl_long>(half));
  }
};

template <>
struct kernel<fusion::Rotary, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), c = b.in(1), s = b.in(2);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rotary", b.numel(x), 256, b.typed(x), b.typed(c), b.typed(s), b.typed(b.out()),
               ocl::rotary_desc(b, x, c, s), static_cast<cl_long>(b.numel(x)));
  }
};

// transpose -> rotary (fusion::TransposedRotary): the rotary reads x through the transpose's strides,
// so the transposed copy is never made.
template <>
struct kernel<fusion::TransposedRotary, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), c = b.in(1), s = b.in(2), y = b.out();
    const Shape& ys = b.shape(y);
    Strides xs = contiguous_strides(b.shape(x));
    const auto d0 = static_cast<std::size_t>(b.k().int_param("dim0", -1)), d1 = static_cast<std::size_t>(b.k().int_param("dim1", -1));
    if (xs.size() != ys.size() || d0 >= xs.size() || d1 >= xs.size() || d0 == d1) b.unsupported("transposed_rotary without its dims (npusim bug)");
    std::swap(xs[d0], xs[d1]);
    const Strides cs = broadcast_strides(b.shape(c), ys), ss = broadcast_strides(b.shape(s), ys);
    ocl::I64 d{static_cast<std::int64_t>(ys.size())};
    for (const Strides* v : {&ys, &cs, &ss, static_cast<const Strides*>(&xs)}) d.insert(d.end(), v->begin(), v->end());
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rotary_strided", b.numel(y), 256, b.typed(x), b.typed(c), b.typed(s), b.typed(y),
               b.desc(d), static_cast<cl_long>(b.numel(y)));
  }
};

// rotary(q), rotary(k) -> index_copy(K, k'), index_copy(V, v) (fusion::RopeKv): one launch that
// rotates q and writes the new K/V rows into the caches (planned in place: the pattern asks for
// caches only their write reads).
template <>
struct kernel<fusion::RopeKv, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const ir::TensorId xq = b.in(0), cos = b.in(1), sin = b.in(2), xk = b.in(3), v = b.in(4), pos = b.in(5), kc = b.in(6), vc = b.in(7);
    const ir::Node *ck = nullptr, *cv = nullptr;
    for (auto ni : k.nodes) {
      const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
      if (ops::find_op(n.op_type) != ops::op_index_v<ops::IndexCopy>) continue;
      (n.inputs.at(0) == kc ? ck : cv) = &n;
    }
    if (!ck || !cv || cv->inputs.at(0) != vc) b.unsupported("rope_kv without its two cache writes (npusim bug)");
    ir::TensorId q = ir::no_tensor;
    for (auto t : k.outputs)
      if (t != ck->outputs[0] && t != cv->outputs[0]) q = t;
    if (q == ir::no_tensor || !(b.ref(ck->outputs[0]) == b.ref(kc)) || !(b.ref(cv->outputs[0]) == b.ref(vc)))
      b.unsupported("rope_kv whose caches are not written in place (npusim bug)");
    const Shape &ks = b.shape(xk), &cache = b.shape(kc);
    const std::int64_t nq = b.shape(xq).empty() ? 0 : b.numel(xq), nk = npusim::numel(ks);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rope_kv", nq + 2 * nk, 256, b.typed(xq), b.typed(q), b.typed(xk), b.typed(v), b.typed(cos),
               b.typed(sin), b.typed(ck->outputs[0]), b.typed(cv->outputs[0]), b.typed(pos), ocl::rotary_desc(b, xq, cos, sin),
               ocl::rotary_desc(b, xk, cos, sin), static_cast<cl_long>(nq), static_cast<cl_long>(nk), static_cast<cl_long>(nk),
               static_cast<cl_long>(cache[2]), static_cast<cl_long>(ks[2]), static_cast<cl_long>(ks[3]), b.errors(),
               b.index_check(*ck, pos, "index_copy", cache[2], true));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
