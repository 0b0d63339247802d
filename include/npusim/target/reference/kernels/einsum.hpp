// Reference kernel of einsum: the equation lowered to the matrix products it spells.
//
// 1. each operand: a repeated label becomes its diagonal (one strided copy), and the labels no
//    other operand and not the output has are summed out;
// 2. operands are folded left to right: for the running result A and the next operand B, the
//    labels both have are batch dimensions when a later operand or the output needs them, else
//    contracted; A is laid out [batch, A only, contracted], B [batch, contracted, B only]
//    (size-1 labels broadcast by stride 0), and one batched matrix product (Eigen) gives
//    [batch, A only, B only];
// 3. the result is summed over what the output drops and permuted into the output's order.
//
// tests/unit/ops/test_zoo_ops.cpp checks it against a direct sum over every label.
#pragma once

#include <algorithm>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/kernels/linalg.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ref::einsum {

// A contiguous float tensor whose dimension d carries label labels[d] (labels unique).
struct Term {
  Tensor t;
  std::vector<int> labels;
};

inline bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// The strides of `t` for a layout listed by labels; a label `t` lacks, or has at size 1 while the
// layout's size differs, reads with stride 0 (broadcast).
inline Strides strides_for(const Term& t, const std::vector<int>& order, const Shape& sizes) {
  const Strides cs = contiguous_strides(t.t.shape());
  Strides st;
  for (std::size_t i = 0; i < order.size(); ++i) {
    auto it = std::find(t.labels.begin(), t.labels.end(), order[i]);
    if (it == t.labels.end()) {
      st.push_back(0);
      continue;
    }
    const auto d = static_cast<std::size_t>(it - t.labels.begin());
    st.push_back(t.t.shape()[d] == 1 && sizes[i] != 1 ? 0 : cs[d]);
  }
  return st;
}

inline std::int64_t size_of(const Term& t, int l) {
  auto it = std::find(t.labels.begin(), t.labels.end(), l);
  return it == t.labels.end() ? 1 : t.t.shape()[static_cast<std::size_t>(it - t.labels.begin())];
}

// Sums `t` over every label `keep` rejects.
template <class Keep>
Term sum_out(const Term& t, Keep&& keep) {
  std::vector<int> kept, dropped;
  for (int l : t.labels) (keep(l) ? kept : dropped).push_back(l);
  if (dropped.empty()) return t;
  std::vector<int> order = kept;
  order.insert(order.end(), dropped.begin(), dropped.end());
  Shape sizes;
  for (int l : order) sizes.push_back(size_of(t, l));
  const Tensor p = strided_copy(t.t, sizes, strides_for(t, order, sizes));
  Shape ks;
  std::int64_t inner = 1;
  for (std::size_t i = 0; i < order.size(); ++i) (i < kept.size() ? ks.push_back(sizes[i]) : void(inner *= sizes[i]));
  Tensor r = Tensor::empty(DType::f32, ks);
  const float* src = p.data<float>();
  for (std::int64_t o = 0; o < r.numel(); ++o) {
    double s = 0;
    for (std::int64_t i = 0; i < inner; ++i) s += src[o * inner + i];
    r.data<float>()[o] = static_cast<float>(s);
  }
  return {r, kept};
}

// Operand k with its diagonals taken: unique labels, in first-occurrence order.
inline Term diagonal(const Tensor& x, const std::vector<int>& labels) {
  Term t;
  Shape s;
  Strides st;
  const Strides cs = contiguous_strides(x.shape());
  for (std::size_t d = 0; d < labels.size(); ++d) {
    auto it = std::find(t.labels.begin(), t.labels.end(), labels[d]);
    if (it != t.labels.end()) {
      st[static_cast<std::size_t>(it - t.labels.begin())] += cs[d];
      continue;
    }
    t.labels.push_back(labels[d]);
    s.push_back(x.shape()[d]);
    st.push_back(cs[d]);
  }
  t.t = strided_copy(x, s, st);
  return t;
}

// [batch, a only, b only] = sum over contracted of a[batch, a only, contracted] * b[batch, contracted, b only].
inline Term contract(const Term& a, const Term& b, const std::vector<int>& later) {
  const ops::Contraction c = ops::contraction(a.labels, a.t.shape(), b.labels, b.t.shape(), later);
  const std::vector<int> ao = c.a_order(), bo = c.b_order();
  const Shape as = c.shape_of(ao), bs = c.shape_of(bo);
  const Tensor A = strided_copy(a.t, as, strides_for(a, ao, as)), B = strided_copy(b.t, bs, strides_for(b, bo, bs));
  const std::int64_t nb = c.product(c.batch), m = c.product(c.a_only), k = c.product(c.contracted), n = c.product(c.b_only);
  Term r;
  r.labels = c.out_order();
  const Shape rs = c.shape_of(r.labels);
  r.t = Tensor::empty(DType::f32, rs);
  for (std::int64_t i = 0; i < nb; ++i) {
    ref::MapC MA(A.data<float>() + i * m * k, m, k), MB(B.data<float>() + i * k * n, k, n);
    ref::Map MY(r.t.data<float>() + i * m * n, m, n);
    if (k == 0) MY.setZero();
    else MY.noalias() = MA * MB;
  }
  return r;
}

}  // namespace ref::einsum

template <>
struct kernel<ops::Einsum, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Einsum::Attrs& a, ref::Args& args) {
    namespace E = ref::einsum;
    std::vector<Shape> shapes;
    for (const Tensor& t : args.in) shapes.push_back(t.shape());
    const ops::EinsumSpec s = ops::parse_einsum(a.equation, shapes);
    const std::size_t n = args.in.size();
    // Labels needed after operand k: those of operands k+1.. and of the output.
    std::vector<std::vector<int>> later(n, s.out);
    for (std::size_t k = n; k-- > 1;) {
      later[k - 1] = later[k];
      for (int l : s.in[k]) later[k - 1].push_back(l);
    }
    auto needed_beyond = [&](std::size_t k, int l) {
      if (E::has(s.out, l)) return true;
      for (std::size_t j = 0; j < n; ++j)
        if (j != k && E::has(s.in[j], l)) return true;
      return false;
    };
    E::Term cur;
    for (std::size_t k = 0; k < n; ++k) {
      E::Term t = E::sum_out(E::diagonal(args.x(k), s.in[k]), [&](int l) { return needed_beyond(k, l); });
      cur = k == 0 ? std::move(t) : E::contract(cur, t, later[k]);
      cur = E::sum_out(cur, [&](int l) { return E::has(later[k], l); });
    }
    const Shape os = s.out_shape();
    args.out[0] = ref::strided_copy(cur.t, os, E::strides_for(cur, s.out, os));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
