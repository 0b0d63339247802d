// einsum(equation, tensors): any equation torch.einsum accepts. The equation is parsed once into
// labels per operand dimension (an ellipsis becomes labels of its own, right-aligned across the
// operands), which shape inference and every kernel read:
//
//   - letters a-z and A-Z, spaces ignored, an optional "->" output;
//   - implicit output: the ellipsis dimensions, then every label seen exactly once, in ASCII order
//     (upper case first, as torch);
//   - a label repeated inside one operand takes that operand's diagonal;
//   - a label of size 1 broadcasts against the same label of another size (as torch);
//   - an explicit output without "..." sums the ellipsis dimensions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct EinsumSpec {
  static constexpr int letters = 52;        // a-z then A-Z; ellipsis dimension k is label letters + k
  std::vector<std::vector<int>> in;         // label of every operand dimension
  std::vector<int> out;                     // labels of the output dimensions
  std::vector<std::int64_t> size;           // size of each label (broadcast); 0 where unused
  std::vector<bool> used;                   // label appears somewhere

  // Labels that occur in the operands or in the output, in label order.
  std::vector<int> labels() const {
    std::vector<int> r;
    for (std::size_t l = 0; l < used.size(); ++l)
      if (used[l]) r.push_back(static_cast<int>(l));
    return r;
  }
  Shape out_shape() const {
    Shape s;
    for (int l : out) s.push_back(size[static_cast<std::size_t>(l)]);
    return s;
  }
};

namespace detail {
inline int einsum_letter(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}
[[noreturn]] inline void einsum_error(const std::string& eq, std::string what, std::string expected = {}) {
  throw Error(ErrorCode::attr, "einsum equation '" + eq + "': " + what, {.expected = std::move(expected), .found = eq});
}
// One term: letters (label ids) with -1 for the ellipsis; spaces dropped.
inline std::vector<int> einsum_term(const std::string& eq, const std::string& t) {
  std::vector<int> r;
  bool ell = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (t.compare(i, 3, "...") != 0) einsum_error(eq, "a '.' that is not part of an ellipsis \"...\"");
      if (ell) einsum_error(eq, "more than one ellipsis in one term");
      ell = true, r.push_back(-1), i += 2;
      continue;
    }
    const int l = einsum_letter(c);
    if (l < 0) einsum_error(eq, std::string("invalid subscript '") + c + "'", "letters a-z, A-Z, \"...\", ',' and \"->\"");
    r.push_back(l);
  }
  return r;
}
}  // namespace detail

// Parses `eq` for operands of these shapes; errors name the equation.
inline EinsumSpec parse_einsum(const std::string& eq, const std::vector<Shape>& shapes) {
  using detail::einsum_error;
  if (shapes.empty()) einsum_error(eq, "no operands", "at least one tensor");
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (std::size_t at = 0;;) {
    const auto comma = lhs.find(',', at);
    terms.push_back(detail::einsum_term(eq, lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() != shapes.size())
    einsum_error(eq, "the number of terms differs from the number of operands", std::to_string(shapes.size()) + " terms");
  // Ellipsis widths, and the widest.
  std::size_t ell_dims = 0;
  std::vector<std::size_t> ell_of(terms.size(), 0);
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const auto& t = terms[k];
    const bool has_ell = std::find(t.begin(), t.end(), -1) != t.end();
    const std::size_t named = t.size() - (has_ell ? 1 : 0);
    const std::size_t rank = shapes[k].size();
    if (has_ell ? rank < named : rank != named)
      einsum_error(eq, "operand " + std::to_string(k) + " has " + std::to_string(rank) + " dimensions, its term names " + std::to_string(named),
                   "a term with one subscript per dimension");
    ell_of[k] = has_ell ? rank - named : 0;
    ell_dims = std::max(ell_dims, ell_of[k]);
  }
  EinsumSpec s;
  const std::size_t nlabels = static_cast<std::size_t>(EinsumSpec::letters) + ell_dims;
  s.size.assign(nlabels, 0);
  s.used.assign(nlabels, false);
  std::vector<int> count(nlabels, 0);
  for (std::size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> dims;
    for (int l : terms[k]) {
      if (l >= 0) {
        dims.push_back(l);
        continue;
      }
      for (std::size_t e = ell_dims - ell_of[k]; e < ell_dims; ++e) dims.push_back(EinsumSpec::letters + static_cast<int>(e));
    }
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const auto l = static_cast<std::size_t>(dims[d]);
      const std::int64_t n = shapes[k][d];
      if (s.used[l] && s.size[l] != n && s.size[l] != 1 && n != 1)
        throw Error(ErrorCode::shape, "einsum equation '" + eq + "': subscript sizes disagree across operands",
                    {.expected = "size " + std::to_string(s.size[l]) + " (or 1)", .found = "operand " + std::to_string(k) + " dimension " + std::to_string(d) + " of " + std::to_string(n)});
      if (!s.used[l] || s.size[l] == 1) s.size[l] = n;
      s.used[l] = true;
      ++count[l];
    }
    // A repeated label inside one term (a diagonal) needs equal sizes there: no broadcasting.
    for (std::size_t d = 0; d < dims.size(); ++d)
      for (std::size_t e = d + 1; e < dims.size(); ++e)
        if (dims[d] == dims[e] && shapes[k][d] != shapes[k][e])
          throw Error(ErrorCode::shape, "einsum equation '" + eq + "': a diagonal over dimensions of different sizes",
                      {.found = "operand " + std::to_string(k) + " dimensions " + std::to_string(d) + " and " + std::to_string(e)});
    s.in.push_back(std::move(dims));
  }
  if (arrow == std::string::npos) {
    for (std::size_t e = 0; e < ell_dims; ++e) s.out.push_back(EinsumSpec::letters + static_cast<int>(e));
    // ASCII order: upper case (labels 26..51) before lower case (0..25).
    for (int l = 26; l < 52; ++l)
      if (count[static_cast<std::size_t>(l)] == 1) s.out.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (count[static_cast<std::size_t>(l)] == 1) s.out.push_back(l);
  } else {
    const std::vector<int> rhs = detail::einsum_term(eq, eq.substr(arrow + 2));
    for (int l : rhs) {
      if (l < 0) {
        for (std::size_t e = 0; e < ell_dims; ++e) s.out.push_back(EinsumSpec::letters + static_cast<int>(e));
        continue;
      }
      if (!s.used[static_cast<std::size_t>(l)]) einsum_error(eq, "an output subscript that no operand has");
      if (std::find(s.out.begin(), s.out.end(), l) != s.out.end()) einsum_error(eq, "an output subscript given twice");
      s.out.push_back(l);
    }
  }
  return s;
}

// How one pair of operands contracts, shared by the reference kernel and the compiler's lowering
// (passes/lower_einsum.hpp): a label of both is kept (batch) when a later operand or the output
// still needs it, else summed (contracted); a_only and b_only are each operand's own. A size-1
// label broadcasts to the other operand's size. The operands are laid out as
// [batch, a_only, contracted] and [batch, contracted, b_only]; per batch their product is
// [a_only, b_only], the result's layout [batch, a_only, b_only].
struct Contraction {
  std::vector<int> batch, a_only, contracted, b_only;
  std::map<int, std::int64_t> sizes;

  std::int64_t product(const std::vector<int>& labels) const {
    std::int64_t n = 1;
    for (int l : labels) n *= sizes.at(l);
    return n;
  }
  Shape shape_of(const std::vector<int>& labels) const {
    Shape s;
    for (int l : labels) s.push_back(sizes.at(l));
    return s;
  }
  static std::vector<int> join(std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int> r;
    for (const auto* p : parts) r.insert(r.end(), p->begin(), p->end());
    return r;
  }
  std::vector<int> a_order() const { return join({&batch, &a_only, &contracted}); }
  std::vector<int> b_order() const { return join({&batch, &contracted, &b_only}); }
  std::vector<int> out_order() const { return join({&batch, &a_only, &b_only}); }
};

// a_labels[i] names a_shape[i] (likewise b); `later`: the labels still needed after this pair.
inline Contraction contraction(const std::vector<int>& a_labels, const Shape& a_shape, const std::vector<int>& b_labels, const Shape& b_shape,
                               const std::vector<int>& later) {
  auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  auto size_in = [](const std::vector<int>& labels, const Shape& shape, int l) -> std::int64_t {
    auto it = std::find(labels.begin(), labels.end(), l);
    return it == labels.end() ? 1 : shape[static_cast<std::size_t>(it - labels.begin())];
  };
  Contraction c;
  for (int l : a_labels) (has(b_labels, l) ? (has(later, l) ? c.batch : c.contracted) : c.a_only).push_back(l);
  for (int l : b_labels)
    if (!has(a_labels, l)) c.b_only.push_back(l);
  for (const auto* labels : {&a_labels, &b_labels})
    for (int l : *labels) {
      const std::int64_t x = size_in(a_labels, a_shape, l), y = size_in(b_labels, b_shape, l);
      c.sizes[l] = x == 1 ? y : x;
    }
  return c;
}

struct Einsum {
  static constexpr std::string_view id = "einsum";
  static constexpr std::array aten{"aten.einsum.default"sv};
  // Not `matmul`: the NPU model and the checks read a matmul node's operands as matmul's (a, b).
  // The compiler lowers einsum to matmul nodes (passes/lower_einsum.hpp; a diagonal to a stepped
  // slice) unless a dimension is empty.
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    std::string equation;
    std::optional<Ints> path;  // torch's contraction order hint: the result does not depend on it
    template <class V> void visit(V& v) { v("equation", equation), v("path", path); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    if (in.empty()) expect_arity(in, 1, 1 << 16, id);
    std::vector<Shape> shapes;
    for (const TensorSpec& t : in) {
      expect_floating(t, id, "operand");
      if (t.dtype != in[0].dtype)
        throw Error(ErrorCode::dtype, "einsum operands must have one dtype", {.expected = std::string(dtype_name(in[0].dtype)), .found = to_string(t)});
      shapes.push_back(t.shape);
    }
    const EinsumSpec s = parse_einsum(a.equation, shapes);
    Shape o = s.out_shape();
    checked_numel(o);
    return {{o, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
