// Indexing: embedding lookup, index_copy (the functional KV-cache write), index_select.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): the last three only
// matter for training, so any value is accepted.
struct Embedding {
  static constexpr std::string_view id = "embedding";
  static constexpr std::array aten{"aten.embedding.default"sv};
  static constexpr OpClass op_class = OpClass::indexing;
  struct Attrs {
    std::int64_t padding_idx = -1;
    bool scale_grad_by_freq = false, sparse = false;
    template <class V> void visit(V& v) { v("padding_idx", padding_idx), v("scale_grad_by_freq", scale_grad_by_freq), v("sparse", sparse); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    expect_rank(in[0], 2, 2, "embedding weight");
    if (!is_integral(in[1].dtype))
      throw Error(ErrorCode::dtype, "embedding indices must be integers", {.expected = "int64/int32", .found = std::string(dtype_name(in[1].dtype))});
    Shape o = in[1].shape;
    o.push_back(in[0].shape[1]);
    return {{o, in[0].dtype}};
  }
};

// index_copy(self, index, source, dim): self with self.select(dim, index[i]) = source.select(dim, i).
struct IndexCopy {
  static constexpr std::string_view id = "index_copy";
  static constexpr std::array aten{"aten.index_copy.default"sv, "aten.index_copy_.default"sv};
  static constexpr OpClass op_class = OpClass::indexing;
  struct Attrs {
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 3, 3, id);
    const Shape &self = in[0].shape, &idx = in[1].shape, &src = in[2].shape;
    if (!is_integral(in[1].dtype) || idx.size() > 1)
      throw Error(ErrorCode::dtype, "index_copy index must be a 1-D integer tensor", {.found = to_string(in[1])});
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(self.size())));
    std::int64_t n = idx.empty() ? 1 : idx[0];
    Shape want = self;
    if (!want.empty()) want[d] = n;
    if (src != want) throw Error(ErrorCode::shape, "index_copy source shape", {.expected = to_string(want), .found = to_string(src)});
    // As ATen's index_copy_: "self and source expected to have the same dtype".
    if (in[2].dtype != in[0].dtype)
      throw Error(ErrorCode::dtype, "index_copy source dtype differs from self's", {.expected = std::string(dtype_name(in[0].dtype)),
                                                                                    .found = std::string(dtype_name(in[2].dtype))});
    return {in[0]};
  }
};

// The error every target gives for an index outside [-size, size), or [0, size) for an op that
// takes no negative index (embedding): the reference target's message, the range as expected.
inline Error index_out_of_range(std::string_view what, std::int64_t index, std::int64_t size, bool negatives = true) {
  return Error(ErrorCode::runtime, std::string(what) + " index out of range",
               {.expected = "[" + std::to_string(negatives ? -size : 0) + ", " + std::to_string(size - 1) + "]", .found = std::to_string(index)});
}

struct IndexSelect {
  static constexpr std::string_view id = "index_select";
  static constexpr std::array aten{"aten.index_select.default"sv};
  static constexpr OpClass op_class = OpClass::indexing;
  struct Attrs {
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 2, id);
    if (!is_integral(in[1].dtype) || in[1].shape.size() > 1)
      throw Error(ErrorCode::dtype, "index_select index must be a 1-D integer tensor", {.found = to_string(in[1])});
    Shape o = in[0].shape;
    auto d = indexed_axis(a.dim, o, id);
    o[d] = in[1].shape.empty() ? 1 : in[1].shape[0];
    return {{o, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
