// The ops a mixture-of-experts decoder adds to a dense one, as transformers' `batched_mm` experts
// export them (docs/moe.md): topk (the router's choice), zeros_like (the
// accumulator) and index_add (each expert's weighted output added back to its token's row).
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices). npusim always returns the k
// elements in order (largest first, or smallest first when largest=false); among equal values the
// lower index comes first, and NaN counts as larger than any number (as PyTorch's sort). sorted=false
// lets PyTorch return them in any order, so the sorted order is one of its answers.
struct TopK {
  static constexpr std::string_view id = "topk";
  static constexpr std::array aten{"aten.topk.default"sv};
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    std::optional<std::int64_t> k;
    std::int64_t dim = -1;
    bool largest = true, sorted = true;
    template <class V> void visit(V& v) { v("k", k), v("dim", dim), v("largest", largest), v("sorted", sorted); }
    void check() const {
      if (!k) throw Error(ErrorCode::attr, "topk needs its 'k' attribute", {.expected = "an integer k >= 0", .found = "none"});
      if (*k < 0) throw unsupported_attr("k", std::to_string(*k), "k >= 0");
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape o = in[0].shape;
    const std::size_t d = indexed_axis(a.dim, o, id);
    if (*a.k > o[d])
      throw Error(ErrorCode::shape, "topk k is larger than the dimension it selects from",
                  {.expected = "k <= " + std::to_string(o[d]), .found = "k = " + std::to_string(*a.k)});
    o[d] = *a.k;
    return {{o, in[0].dtype}, {o, DType::i64}};
  }
};

// zeros_like(self, dtype=None, ...): zeros of self's shape, in `dtype` or self's. Its values never
// depend on self's, so it is a creation op with one (shape-giving) input.
struct ZerosLike {
  static constexpr std::string_view id = "zeros_like";
  static constexpr std::array aten{"aten.zeros_like.default"sv};
  static constexpr OpClass op_class = OpClass::creation;
  static constexpr double value = 0.0;
  struct Attrs {
    std::optional<DType> dtype;
    Ignored layout, device, pin_memory, memory_format;
    template <class V> void visit(V& v) {
      v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory), v("memory_format", memory_format);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {{in[0].shape, a.dtype.value_or(in[0].dtype)}};
  }
};

// index_add(self, dim, index, source, alpha=1): self with self.select(dim, index[i]) +=
// alpha * source.select(dim, i) for every i, repeated indices summing (in order of i).
struct IndexAdd {
  static constexpr std::string_view id = "index_add";
  static constexpr std::array aten{"aten.index_add.default"sv, "aten.index_add_.default"sv};
  static constexpr OpClass op_class = OpClass::indexing;
  struct Attrs {
    std::int64_t dim = 0;
    Scalar alpha{1.0, true};
    template <class V> void visit(V& v) { v("dim", dim), v("alpha", alpha); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 3, 3, id);
    const Shape &self = in[0].shape, &idx = in[1].shape, &src = in[2].shape;
    if (!is_integral(in[1].dtype) || in[1].dtype == DType::boolean || idx.size() > 1)
      throw Error(ErrorCode::dtype, "index_add index must be a 1-D integer tensor", {.found = to_string(in[1])});
    const std::size_t d = indexed_axis(a.dim, self, id);
    Shape want = self;
    want[d] = idx.empty() ? 1 : idx[0];
    if (src != want) throw Error(ErrorCode::shape, "index_add source shape", {.expected = to_string(want), .found = to_string(src)});
    // As ATen's index_add_: "self (...) and source (...) must have the same scalar type".
    if (in[2].dtype != in[0].dtype)
      throw Error(ErrorCode::dtype, "index_add source dtype differs from self's",
                  {.expected = std::string(dtype_name(in[0].dtype)), .found = std::string(dtype_name(in[2].dtype))});
    if (!is_floating(in[0].dtype) && !a.alpha.is_integral)
      throw Error(ErrorCode::dtype, "index_add of an integer tensor with a fractional alpha", {.found = to_string(in[0])});
    return {in[0]};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
