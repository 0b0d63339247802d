// Matrix kernels of the OpenCL target: linear, matmul (plain, transposed, grouped-query), addmm, and
// the fused linears, as layouts of a product (ocl::Gemm) that one chooser binds on the best of the
// target's paths (kernels/gemm/: GEMV over packed or float weights, tensor cores, 64x64 tiles).
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/kernels/gemm/candidates.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
// Batched matmul a @ B where B(k, n) of batch z = b[boff(z) + k*sbk + n*sbn]; batch dims broadcast
// (at most two after merging contiguous ones); `group` maps a's dim -3 onto b's by division.
// Its strides and batches from the shapes alone (as stored: bs_stored is B before any transpose), the
// operands' buffers left unset; nullopt for more than two non-contiguous batch dims.
inline std::optional<Gemm> matmul_layout(const Shape& as, const Shape& bs_stored, bool b_transposed, std::int64_t group = 1) {
  Shape bs = bs_stored;
  if (b_transposed && bs.size() >= 2) std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  if (group > 1) bs[bs.size() - 3] *= group;
  ops::MatmulShapes s = ops::matmul_shapes(as, bs);
  Gemm g;
  g.M = s.m, g.N = s.n, g.K = s.k;
  g.sam = s.a_vec ? 0 : s.k, g.sak = 1;
  const std::int64_t bn_phys = b_transposed ? (s.b_vec ? 1 : s.k) : 1, bk_phys = b_transposed ? 1 : (s.b_vec ? 1 : s.n);
  g.sbk = bk_phys, g.sbn = bn_phys;
  if (s.b_vec) g.sbk = 1, g.sbn = 0;
  g.scm = s.n, g.scn = 1;
  // Batch strides in elements, broadcast (0) where a dim is 1.
  Shape ab(as.begin(), as.end() - (s.a_vec ? 1 : 2)), bb(bs_stored.begin(), bs_stored.end() - (s.b_vec ? 1 : 2));
  Strides sa = broadcast_strides(ab, s.batch), sc = contiguous_strides(s.batch);
  Shape bb_logical = bb;
  if (group > 1) bb_logical.back() *= group;
  Strides sb = broadcast_strides(bb_logical, s.batch);
  if (group > 1) {  // physical strides of b's batch (its head dim has H/group entries), 0 where broadcast
    Strides real = contiguous_strides(bb);
    const std::size_t off = s.batch.size() - bb.size();
    for (std::size_t i = 0; i < bb.size(); ++i)
      if (sb[off + i] != 0) sb[off + i] = real[i];
  }
  const std::int64_t am = s.a_vec ? s.k : s.m * s.k, bm = s.b_vec ? s.k : s.k * s.n, cm = s.m * s.n;
  std::vector<std::array<std::int64_t, 4>> dims;  // size, sa, sb, sc (elements)
  for (std::size_t i = 0; i < s.batch.size(); ++i) dims.push_back({s.batch[i], sa[i] * am, sb[i] * bm, sc[i] * cm});
  std::vector<std::array<std::int64_t, 4>> merged;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i][0] == 1) continue;
    const bool last_grouped = group > 1 && i + 1 == dims.size();
    if (!merged.empty() && !last_grouped) {
      auto& m = merged.back();
      if (m[1] == dims[i][1] * dims[i][0] && m[2] == dims[i][2] * dims[i][0] && m[3] == dims[i][3] * dims[i][0]) {
        m = {m[0] * dims[i][0], dims[i][1], dims[i][2], dims[i][3]};
        continue;
      }
    }
    merged.push_back(dims[i]);
  }
  if (merged.size() > 2) return std::nullopt;
  while (merged.size() < 2) merged.insert(merged.begin(), {1, 0, 0, 0});
  g.nb0 = merged[0][0], g.sa0 = merged[0][1], g.sb0 = merged[0][2], g.sc0 = merged[0][3];
  g.nb1 = merged[1][0], g.sa1 = merged[1][1], g.sb1 = merged[1][2], g.sc1 = merged[1][3];
  if (group > 1) g.bdiv = group, g.sb1 = merged[1][2];
  return g;
}
inline void bind_matmul(Binder& b, ir::TensorId ta, ir::TensorId tb, ir::TensorId tc, bool b_transposed, std::int64_t group = 1) {
  std::optional<Gemm> g = matmul_layout(b.shape(ta), b.shape(tb), b_transposed, group);
  if (!g) b.unsupported("matmul with more than two non-contiguous batch dims");
  g->a = b.ref(ta), g->b = b.ref(tb), g->c = b.ref(tc);
  bind_gemm(b, *g);
}

// y = x W^T (+ bias) over x's last dim; `read`: the tensor a reads instead of x (an RMSNorm's
// input where the GEMV normalises it itself; x then has no storage).
// A linear layer's product y = x W^T from the shapes alone (x [..., K], W [N, K]), the buffers unset.
inline Gemm linear_layout(const Shape& x, const Shape& w) {
  Gemm g;
  g.K = x.back(), g.N = w.at(0), g.M = g.K ? numel(x) / g.K : 0;
  g.sam = g.K, g.sak = 1, g.sbk = 1, g.sbn = g.K, g.scm = g.N, g.scn = 1;
  return g;
}
// addmm's bias + x W from the shapes alone (x [M, K], W [K, N]: read along N), the buffers unset.
inline Gemm addmm_layout(const Shape& x, const Shape& w) {
  Gemm g;
  g.M = x.at(0), g.K = x.at(1), g.N = w.at(1);
  g.sam = g.K, g.sak = 1, g.sbk = g.N, g.sbn = 1, g.scm = g.N, g.scn = 1;
  return g;
}

inline Gemm linear_gemm_into(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, TensorRef c,
                             std::optional<ir::TensorId> read = {}) {
  Gemm g = linear_layout(b.shape(x), b.shape(w));
  const PackedWeight* p = b.packed(w);
  g.a = b.ref(read ? *read : x), g.b = p ? p->blocks : b.ref(w), g.c = c;
  if (bias) g.bias = b.ref(*bias);
  if (p) g.wq = p->format, g.wdt = p->dtype;
  return g;
}
inline Gemm linear_gemm(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y,
                        std::optional<ir::TensorId> read = {}) {
  return linear_gemm_into(b, x, w, bias, b.ref(y), read);
}
inline void bind_linear(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y) {
  bind_gemm(b, linear_gemm(b, x, w, bias, y));
}
// A linear's weight as its kernel reads it: the packed blocks where it has them.
inline TensorRef weight_ref(const Binder& b, ir::TensorId w) {
  const PackedWeight* p = b.packed(w);
  return p ? p->blocks : b.ref(w);
}
inline std::optional<ir::TensorId> linear_bias(const ir::Node& n) { return n.inputs.size() > 2 ? std::optional(n.inputs[2]) : std::nullopt; }
// A fused kernel's GEMV (the patterns promise it fits: at most fusion::gemv_rows rows).
inline void bind_gemv(Binder& b, const Gemm& g) {
  if (!gemv_fits(g)) b.unsupported("a " + b.k().kind + " kernel that is no GEMV (npusim bug)");
  bind_gemm(b, g);
}
}  // namespace ocl

template <>
struct kernel<ops::Linear, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    ocl::bind_linear(b, in.at(0), in.at(1), in.size() > 2 ? std::optional(in[2]) : std::nullopt, b.out());
  }
};

template <>
struct kernel<ops::Matmul, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) { ocl::bind_matmul(b, b.node().inputs.at(0), b.node().inputs.at(1), b.out(), false); }
};

// addmm with alpha = beta = 1 and a 1-D bias (the refusal hook sends others to the fallback).
template <>
struct kernel<ops::Addmm, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    ocl::Gemm g = ocl::addmm_layout(b.shape(in.at(1)), b.shape(in.at(2)));
    g.a = b.ref(in[1]), g.b = b.ref(in[2]), g.c = b.ref(b.out());
    g.bias = b.ref(in[0]);
    ocl::bind_gemm(b, g);
  }
};

template <>
struct kernel<fusion::GqaMatmul, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) {
    ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), b.k().bool_param("trans_b"), b.k().int_param("group", 1));
  }
};

template <>
struct kernel<fusion::MatmulTransB, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) { ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), true); }
};

// linear -> add(residual) (fusion::LinearAdd): the residual in the GEMV/GEMM epilogue.
template <>
struct kernel<fusion::LinearAdd, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::any;
  static void bind(ocl::Binder& b) {
    const ir::Node& lin = *b.member<ops::Linear>();
    ocl::Gemm g = ocl::linear_gemm(b, lin.inputs[0], lin.inputs[1], ocl::linear_bias(lin), b.out());
    g.residual = b.ref(b.k().inputs.back());
    ocl::bind_gemm(b, g);
  }
};

// silu(linear(x, Wg)) * linear(x, Wu) (fusion::LinearSiluGate): one gated product reading both
// weights: the GEMV for a token, the tensor cores' gated tiles for a prefill, else the two
// products and silu_mul.
template <>
struct kernel<fusion::LinearSiluGate, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::grouped;
  static void bind(ocl::Binder& b) {
    ocl::Gemm g = ocl::linear_gemm(b, b.in(0), b.in(1), std::nullopt, b.out());
    g.up = ocl::weight_ref(b, b.in(2));
    ocl::bind_gemm(b, g);
  }
};

namespace ocl {
// The product of a linear_group (fusion::LinearGroup, and the GEMV of fusion::LinearGroupRopeKv):
// one segment per linear in node order, the RMSNorm folded in when the kernel has it; out(i, y)
// gives where segment i's output y goes.
inline Gemm linear_group_gemm(Binder& b, const std::function<TensorRef(std::size_t, ir::TensorId)>& out) {
  const Kernel& k = b.k();
  std::vector<const ir::Node*> lins;
  for (auto ni : k.nodes)
    if (const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)]; ops::find_op(n.op_type) == ops::op_index_v<ops::Linear>) lins.push_back(&n);
  const bool norm = k.bool_param("has_norm");
  const ir::Node& first = *lins.at(0);
  const ir::TensorId h = first.inputs[0];
  Gemm g = linear_gemm_into(b, h, first.inputs[1], linear_bias(first), out(0, first.outputs[0]), norm ? std::optional(b.in(0)) : std::nullopt);
  for (std::size_t i = 1; i < lins.size(); ++i) {
    const ir::Node& l = *lins[i];
    g.more.push_back({weight_ref(b, l.inputs[1]), linear_bias(l) ? std::optional(b.ref(l.inputs[2])) : std::nullopt, out(i, l.outputs[0]),
                      b.shape(l.inputs[1]).at(0)});
  }
  if (norm) {
    // The norm's last node multiplies by its weight: the other operand's storage is where the
    // normalised value is rounded before that.
    const ir::Node& wmul = b.g().nodes.at(static_cast<std::size_t>(b.g().tensor(h).producer));
    const ir::TensorId mid = wmul.inputs.at(0) == b.in(1) ? wmul.inputs.at(1) : wmul.inputs.at(0);
    g.norm = Gemm::Norm{b.ref(b.in(1)), static_cast<float>(k.param("eps", 1e-6)), b.storage(mid)};
  }
  return g;
}
}  // namespace ocl

// [RMSNorm ->] up to three linears of one input (fusion::LinearGroup): one product with an output
// segment per linear (the GEMV for a few rows, the tensor cores' segmented tiles for a prefill,
// else one product per linear); with the norm (GEMV-sized only), each work-group reduces x's row
// itself while its first weight words are in flight.
template <>
struct kernel<fusion::LinearGroup, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::grouped;
  static void bind(ocl::Binder& b) {
    const ocl::Gemm g = ocl::linear_group_gemm(b, [&](std::size_t, ir::TensorId y) { return b.ref(y); });
    if (g.norm) return ocl::bind_gemv(b, g);
    ocl::bind_gemm(b, g);
  }
};

// [RMSNorm ->] q/k/v linears -> rope_kv (fusion::LinearGroupRopeKv): linear_group's GEMV, whose
// epilogue rotates q and k and writes k and v into the caches (gemv_rope). The projections are not
// stored: the first segment's output is the rotated q (in the projection's storage type, as
// rope_kv reads it), the others point at the caches, which the epilogue writes at the position.
template <>
struct kernel<fusion::LinearGroupRopeKv, OpenCLTarget> {
  static constexpr bool provided = true;
  static constexpr ocl::Product product = ocl::Product::gemv_only;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const std::int64_t at = k.int_param("rope_at", -1);  // cos, then sin, pos, k_cache, v_cache
    if (at < 0 || static_cast<std::size_t>(at) + 5 > k.inputs.size()) b.unsupported("linear_group_rope_kv without its rotary inputs (npusim bug)");
    const auto r0 = static_cast<std::size_t>(at);
    const ir::TensorId cos = b.in(r0), sin = b.in(r0 + 1), pos = b.in(r0 + 2), kc = b.in(r0 + 3), vc = b.in(r0 + 4);
    const ir::Node *ck = nullptr, *cv = nullptr;
    for (auto ni : k.nodes) {
      const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
      if (ops::find_op(n.op_type) == ops::op_index_v<ops::IndexCopy>) (n.inputs.at(0) == kc ? ck : cv) = &n;
    }
    if (!ck || !cv || cv->inputs.at(0) != vc || !(b.ref(ck->outputs[0]) == b.ref(kc)) || !(b.ref(cv->outputs[0]) == b.ref(vc)))
      b.unsupported("linear_group_rope_kv whose caches are not written in place (npusim bug)");
    ir::TensorId q = ir::no_tensor;
    for (auto t : k.outputs)
      if (t != ck->outputs[0] && t != cv->outputs[0]) q = t;
    const Shape& cache = b.shape(kc);
    const std::int64_t D = cache.at(3);
    if (q == ir::no_tensor || b.numel(cos) != D || b.numel(sin) != D || cache[0] != 1)
      b.unsupported("linear_group_rope_kv without one token's rotated q, cos and sin (npusim bug)");
    ocl::Gemm g = ocl::linear_group_gemm(b, [&](std::size_t i, ir::TensorId y) {
      const ocl::TensorRef r = b.ref(i == 0 ? q : i == 1 ? kc : vc);
      return ocl::TensorRef{r.mem, r.off, b.storage(y)};
    });
    g.rope = ocl::Gemm::Rope{b.ref(cos), b.ref(sin), b.ref(pos), b.ref(kc), b.ref(vc), b.ref(q), D, cache[2],
                             b.index_check(*ck, pos, "index_copy", cache[2], true)};
    ocl::bind_gemv(b, g);
  }
};

}  // namespace npusim::inline NPUSIM_ABI
