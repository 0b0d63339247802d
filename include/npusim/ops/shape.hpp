// Shape and data-movement ops: views (zero-copy reinterpretations), layout changes, slicing,
// concatenation and splitting, and the metadata-only ops (getitem, assert, dropout, to.dtype).
#pragma once

#include <algorithm>
#include <limits>

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// -1 resolution for view/reshape sizes.
inline Shape resolve_view_shape(const Ints& size, std::int64_t total) {
  Shape s(size.begin(), size.end());
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer_at >= 0) throw Error(ErrorCode::attr, "more than one -1 in view/reshape size");
      infer_at = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw Error(ErrorCode::attr, "negative size in view/reshape", {.found = to_string(s)});
    } else if (__builtin_mul_overflow(known, s[i], &known)) {  // no tensor holds 2^63 elements
      throw Error(ErrorCode::shape, "view/reshape size overflows int64", {.expected = std::to_string(total) + " elements", .found = to_string(s)});
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      throw Error(ErrorCode::shape, "cannot infer -1 in view/reshape", {.expected = "a size dividing " + std::to_string(total), .found = to_string(s)});
    s[static_cast<std::size_t>(infer_at)] = total / known;
  }
  if (checked_numel(s) != total)
    throw Error(ErrorCode::shape, "view/reshape changes the element count", {.expected = std::to_string(total) + " elements", .found = to_string(s)});
  return s;
}

template <class Derived>
struct ViewLike {
  static constexpr OpClass op_class = OpClass::view;
};

struct View : ViewLike<View> {
  static constexpr std::string_view id = "view";
  static constexpr std::array aten{"aten.view.default"sv, "aten._unsafe_view.default"sv};
  struct Attrs {
    Ints size;
    template <class V> void visit(V& v) { v("size", size); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {{resolve_view_shape(a.size, numel(in[0].shape)), in[0].dtype}};
  }
};
struct Reshape : ViewLike<Reshape> {
  static constexpr std::string_view id = "reshape";
  static constexpr std::array aten{"aten.reshape.default"sv};
  struct Attrs {
    Ints shape;
    template <class V> void visit(V& v) { v("shape", shape); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {{resolve_view_shape(a.shape, numel(in[0].shape)), in[0].dtype}};
  }
};
struct Flatten : ViewLike<Flatten> {
  static constexpr std::string_view id = "flatten";
  static constexpr std::array aten{"aten.flatten.using_ints"sv};
  struct Attrs {
    std::int64_t start_dim = 0, end_dim = -1;
    template <class V> void visit(V& v) { v("start_dim", start_dim), v("end_dim", end_dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    const Shape& s = in[0].shape;
    if (s.empty()) return {{{1}, in[0].dtype}};
    auto r = static_cast<std::int64_t>(s.size());
    std::int64_t b = normalize_dim(a.start_dim, r, "start_dim"), e = normalize_dim(a.end_dim, r, "end_dim");
    if (b > e) throw Error(ErrorCode::attr, "flatten start_dim after end_dim");
    Shape o(s.begin(), s.begin() + b);
    std::int64_t m = 1;
    for (auto i = b; i <= e; ++i) m *= s[static_cast<std::size_t>(i)];
    o.push_back(m);
    o.insert(o.end(), s.begin() + e + 1, s.end());
    return {{o, in[0].dtype}};
  }
};
struct Unflatten : ViewLike<Unflatten> {
  static constexpr std::string_view id = "unflatten";
  static constexpr std::array aten{"aten.unflatten.int"sv};
  struct Attrs {
    std::int64_t dim = 0;
    Ints sizes;
    template <class V> void visit(V& v) { v("dim", dim), v("sizes", sizes); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape s = in[0].shape;
    auto d = indexed_axis(a.dim, s, id);
    Shape part = resolve_view_shape(a.sizes, s[d]);
    Shape o(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d));
    o.insert(o.end(), part.begin(), part.end());
    o.insert(o.end(), s.begin() + static_cast<std::ptrdiff_t>(d) + 1, s.end());
    return {{o, in[0].dtype}};
  }
};
struct Unsqueeze : ViewLike<Unsqueeze> {
  static constexpr std::string_view id = "unsqueeze";
  static constexpr std::array aten{"aten.unsqueeze.default"sv};
  struct Attrs {
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape s = in[0].shape;
    auto d = normalize_dim(a.dim, static_cast<std::int64_t>(s.size()) + 1);
    s.insert(s.begin() + d, 1);
    return {{s, in[0].dtype}};
  }
};
struct Squeeze : ViewLike<Squeeze> {
  static constexpr std::string_view id = "squeeze";
  static constexpr std::array aten{"aten.squeeze.dim"sv, "aten.squeeze.dims"sv, "aten.squeeze.default"sv};
  struct Attrs {
    std::optional<Ints> dim;  // none: every size-1 dim
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    const Shape& s = in[0].shape;
    std::vector<bool> drop(s.size(), false);
    if (!a.dim) {
      for (std::size_t i = 0; i < s.size(); ++i) drop[i] = s[i] == 1;
    } else {
      for (auto d : *a.dim) {
        if (s.empty()) continue;
        auto k = static_cast<std::size_t>(normalize_dim(d, static_cast<std::int64_t>(s.size())));
        drop[k] = s[k] == 1;
      }
    }
    Shape o;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!drop[i]) o.push_back(s[i]);
    return {{o, in[0].dtype}};
  }
};
// Identity views: same shape, same storage.
struct Alias : ViewLike<Alias> {
  static constexpr std::string_view id = "alias";
  static constexpr std::array aten{"aten.alias.default"sv, "aten.detach.default"sv, "aten.detach_.default"sv,
                                   "aten.lift_fresh_copy.default"sv};
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {in[0]};
  }
};
struct Contiguous : ViewLike<Contiguous> {
  static constexpr std::string_view id = "contiguous";
  static constexpr std::array aten{"aten.contiguous.default"sv, "aten.clone.default"sv};
  struct Attrs {
    std::optional<std::string> memory_format;  // logical semantics are the same for every format
    template <class V> void visit(V& v) { v("memory_format", memory_format); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {in[0]};
  }
};
// dropout in eval mode (train=false) or with p=0 is the identity; training dropout is refused.
struct Dropout : ViewLike<Dropout> {
  static constexpr std::string_view id = "dropout";
  static constexpr std::array aten{"aten.dropout.default"sv, "aten.dropout_.default"sv};
  struct Attrs {
    double p = 0.5;
    std::optional<bool> train;
    template <class V> void visit(V& v) { v("p", p), v("train", train); }
    void check() const {
      if (train.value_or(true) && p != 0.0)
        throw unsupported_attr("train", "true (p=" + std::to_string(p) + ")", "train=false or p=0 (inference)");
    }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {in[0]};
  }
};
// getitem(producer outputs..., index): picks one output of a multi-output node.
struct GetItem : ViewLike<GetItem> {
  static constexpr std::string_view id = "getitem";
  static constexpr std::array aten{"<built-in function getitem>"sv};
  struct Attrs {
    std::int64_t index = 0;
    template <class V> void visit(V& v) { v("index", index); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    if (in.empty()) throw Error(ErrorCode::graph, "getitem has no inputs");
    if (a.index < 0 || a.index >= static_cast<std::int64_t>(in.size()))
      throw Error(ErrorCode::attr, "getitem index out of range", {.expected = "< " + std::to_string(in.size()), .found = std::to_string(a.index)});
    return {in[static_cast<std::size_t>(a.index)]};
  }
};
// _assert_tensor_metadata: a check torch.export leaves behind; no outputs.
struct AssertMetadata {
  static constexpr std::string_view id = "assert_tensor_metadata";
  static constexpr std::array aten{"aten._assert_tensor_metadata.default"sv};
  static constexpr OpClass op_class = OpClass::noop;
  struct Attrs {
    std::optional<Ints> size, stride;
    std::optional<DType> dtype;
    Ignored device, layout;
    template <class V> void visit(V& v) { v("size", size), v("stride", stride), v("dtype", dtype), v("device", device), v("layout", layout); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    if (a.dtype && *a.dtype != in[0].dtype)
      throw Error(ErrorCode::dtype, "_assert_tensor_metadata fails: dtype differs",
                  {.expected = std::string(dtype_name(*a.dtype)), .found = std::string(dtype_name(in[0].dtype))});
    if (a.size && Shape(a.size->begin(), a.size->end()) != in[0].shape)
      throw Error(ErrorCode::shape, "_assert_tensor_metadata fails: size differs", {.expected = to_string(*a.size), .found = to_string(in[0].shape)});
    return {};
  }
};
// to.dtype / _to_copy: a real cast.
struct ToDtype {
  static constexpr std::string_view id = "to_dtype";
  static constexpr std::array aten{"aten.to.dtype"sv, "aten._to_copy.default"sv, "aten.to.dtype_layout"sv};
  static constexpr OpClass op_class = OpClass::elementwise;
  struct Attrs {
    std::optional<DType> dtype;
    bool non_blocking = false, copy = false;
    std::optional<std::string> memory_format;
    Ignored layout, device, pin_memory;
    template <class V> void visit(V& v) {
      v("dtype", dtype), v("non_blocking", non_blocking), v("copy", copy), v("memory_format", memory_format);
      v("layout", layout), v("device", device), v("pin_memory", pin_memory);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {{in[0].shape, a.dtype.value_or(in[0].dtype)}};
  }
};

// ---- layout changes -------------------------------------------------------------------------------
struct Transpose {
  static constexpr std::string_view id = "transpose";
  static constexpr std::array aten{"aten.transpose.int"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t dim0 = 0, dim1 = 1;
    template <class V> void visit(V& v) { v("dim0", dim0), v("dim1", dim1); }
  };
  static Ints perm(const Attrs& a, std::size_t rank) {
    Ints p(rank);
    for (std::size_t i = 0; i < rank; ++i) p[i] = static_cast<std::int64_t>(i);
    if (rank == 0) return p;
    auto r = static_cast<std::int64_t>(rank);
    std::swap(p[static_cast<std::size_t>(normalize_dim(a.dim0, r))], p[static_cast<std::size_t>(normalize_dim(a.dim1, r))]);
    return p;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Ints p = perm(a, in[0].shape.size());
    Shape o(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) o[i] = in[0].shape[static_cast<std::size_t>(p[i])];
    return {{o, in[0].dtype}};
  }
};
struct TransposeT {  // aten.t: 2-D transpose (identity for rank < 2)
  static constexpr std::string_view id = "t";
  static constexpr std::array aten{"aten.t.default"sv, "aten.numpy_T.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  using Attrs = NoAttrs;
  static Ints perm(const Attrs&, std::size_t rank) {
    if (rank < 2) return rank == 1 ? Ints{0} : Ints{};
    if (rank != 2) throw Error(ErrorCode::shape, "t() expects a tensor of rank <= 2", {.found = "rank " + std::to_string(rank)});
    return {1, 0};
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Ints p = perm(a, in[0].shape.size());
    Shape o(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) o[i] = in[0].shape[static_cast<std::size_t>(p[i])];
    return {{o, in[0].dtype}};
  }
};
struct Permute {
  static constexpr std::string_view id = "permute";
  static constexpr std::array aten{"aten.permute.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    Ints dims;
    template <class V> void visit(V& v) { v("dims", dims); }
  };
  static Ints perm(const Attrs& a, std::size_t rank) {
    if (a.dims.size() != rank) throw Error(ErrorCode::attr, "permute dims do not match the rank", {.expected = std::to_string(rank) + " dims", .found = to_string(a.dims)});
    Ints p = normalize_dims(a.dims, rank);
    std::vector<bool> seen(rank, false);
    for (auto d : p) {
      if (seen[static_cast<std::size_t>(d)]) throw Error(ErrorCode::attr, "permute dims repeat a dimension", {.found = to_string(a.dims)});
      seen[static_cast<std::size_t>(d)] = true;
    }
    return p;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Ints p = perm(a, in[0].shape.size());
    Shape o(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) o[i] = in[0].shape[static_cast<std::size_t>(p[i])];
    return {{o, in[0].dtype}};
  }
};
struct Expand {
  static constexpr std::string_view id = "expand";
  static constexpr std::array aten{"aten.expand.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    Ints size;
    bool implicit = false;
    template <class V> void visit(V& v) { v("size", size), v("implicit", implicit); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    const Shape& s = in[0].shape;
    if (a.size.size() < s.size()) throw Error(ErrorCode::shape, "expand to fewer dimensions", {.expected = ">= " + std::to_string(s.size()) + " dims", .found = to_string(a.size)});
    Shape o(a.size.size());
    std::size_t off = a.size.size() - s.size();
    for (std::size_t i = 0; i < o.size(); ++i) {
      std::int64_t want = a.size[i];
      if (i < off) {
        if (want < 0) throw Error(ErrorCode::attr, "expand: -1 for a new leading dimension");
        o[i] = want;
        continue;
      }
      std::int64_t have = s[i - off];
      if (want == -1) want = have;
      if (have != want && have != 1)
        throw Error(ErrorCode::shape, "expand: size " + std::to_string(have) + " cannot become " + std::to_string(want),
                    {.expected = to_string(a.size), .found = to_string(s)});
      o[i] = want;
    }
    return {{o, in[0].dtype}};
  }
};

// ---- slicing ---------------------------------------------------------------------------------------
struct SliceRange {
  std::int64_t start, stop, step, length;
};
inline SliceRange clamp_slice(std::int64_t size, std::optional<std::int64_t> start, std::optional<std::int64_t> end, std::int64_t step) {
  if (step <= 0) throw Error(ErrorCode::attr, "slice step must be positive", {.found = std::to_string(step)});
  std::int64_t b = start.value_or(0), e = end.value_or(std::numeric_limits<std::int64_t>::max());
  if (b < 0) b += size;
  if (e < 0) e += size;
  b = std::clamp<std::int64_t>(b, 0, size);
  e = std::clamp<std::int64_t>(e, 0, size);
  std::int64_t len = e > b ? (e - b + step - 1) / step : 0;
  return {b, e, step, len};
}
struct Slice {
  static constexpr std::string_view id = "slice";
  static constexpr std::array aten{"aten.slice.Tensor"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t dim = 0;
    std::optional<std::int64_t> start, end = std::numeric_limits<std::int64_t>::max();
    std::int64_t step = 1;
    template <class V> void visit(V& v) { v("dim", dim), v("start", start), v("end", end), v("step", step); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape s = in[0].shape;
    auto d = indexed_axis(a.dim, s, id);
    s[d] = clamp_slice(s[d], a.start, a.end, a.step).length;
    return {{s, in[0].dtype}};
  }
};
struct Select {
  static constexpr std::string_view id = "select";
  static constexpr std::array aten{"aten.select.int"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t dim = 0, index = 0;
    template <class V> void visit(V& v) { v("dim", dim), v("index", index); }
  };
  static std::int64_t resolved_index(const Attrs& a, std::int64_t size) {
    std::int64_t i = a.index < 0 ? a.index + size : a.index;
    if (i < 0 || i >= size)
      throw Error(ErrorCode::attr, "select index out of range", {.expected = "[" + std::to_string(-size) + ", " + std::to_string(size - 1) + "]",
                                                                 .found = std::to_string(a.index)});
    return i;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape s = in[0].shape;
    auto d = indexed_axis(a.dim, s, id);
    resolved_index(a, s[d]);
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    return {{s, in[0].dtype}};
  }
};
struct Cat {
  static constexpr std::string_view id = "cat";
  static constexpr std::array aten{"aten.cat.default"sv, "aten.concat.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  // Legacy rule kept by ATen: 1-D empty tensors ([0]) are skipped.
  static bool skipped(const TensorSpec& t) { return t.shape.size() == 1 && t.shape[0] == 0; }
  static Specs infer(const Attrs& a, InSpecs in) {
    if (in.empty()) throw Error(ErrorCode::graph, "cat has no inputs");
    const TensorSpec* ref = nullptr;
    DType dt = in[0].dtype;
    for (const auto& t : in) {
      if (!ref && !skipped(t)) ref = &t;
      if (&t != &in[0]) dt = promote_types({{1}, dt}, {{1}, t.dtype});
    }
    if (!ref) return {{{0}, dt}};
    Shape o = ref->shape;
    auto d = indexed_axis(a.dim, o, id);
    o[d] = 0;
    for (const auto& t : in) {
      if (skipped(t)) continue;
      if (t.shape.size() != o.size()) throw Error(ErrorCode::shape, "cat inputs differ in rank", {.expected = to_string(ref->shape), .found = to_string(t.shape)});
      for (std::size_t i = 0; i < o.size(); ++i)
        if (i != d && t.shape[i] != ref->shape[i])
          throw Error(ErrorCode::shape, "cat inputs differ outside the cat dim", {.expected = to_string(ref->shape), .found = to_string(t.shape)});
      o[d] += t.shape[d];
    }
    return {{o, dt}};
  }
};
// Multi-output splits; getitem picks the pieces.
struct Chunk {
  static constexpr std::string_view id = "chunk";
  static constexpr std::array aten{"aten.chunk.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t chunks = 1, dim = 0;
    template <class V> void visit(V& v) { v("chunks", chunks), v("dim", dim); }
  };
  static Ints sizes(const Attrs& a, std::int64_t n) {
    if (a.chunks <= 0) throw Error(ErrorCode::attr, "chunk count must be positive");
    const std::int64_t each = n / a.chunks + (n % a.chunks != 0);  // ceil, without n + chunks overflowing
    Ints r;
    if (each == 0) return Ints(1, 0);
    expect_output_count(n / each + (n % each != 0), id);
    for (std::int64_t at = 0; at < n; at += each) r.push_back(std::min(each, n - at));
    return r;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    auto d = indexed_axis(a.dim, in[0].shape, id);
    Specs out;
    for (auto sz : sizes(a, in[0].shape[d])) {
      Shape s = in[0].shape;
      s[d] = sz;
      out.push_back({s, in[0].dtype});
    }
    return out;
  }
};
struct Split {
  static constexpr std::string_view id = "split";
  static constexpr std::array aten{"aten.split.Tensor"sv, "aten.split_with_sizes.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::optional<Ints> split_size, split_sizes;
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("split_size", split_size), v("split_sizes", split_sizes), v("dim", dim); }
  };
  static Ints sizes(const Attrs& a, std::int64_t n) {
    if (a.split_sizes) {
      expect_output_count(static_cast<std::int64_t>(a.split_sizes->size()), id);
      std::int64_t sum = 0;
      for (auto s : *a.split_sizes) {
        if (s < 0 || s > n - sum)  // sum stays <= n: no overflow
          throw Error(ErrorCode::attr, "split_sizes do not add up to the dim size", {.expected = std::to_string(n), .found = to_string(*a.split_sizes)});
        sum += s;
      }
      if (sum != n) throw Error(ErrorCode::attr, "split_sizes do not add up to the dim size", {.expected = std::to_string(n), .found = to_string(*a.split_sizes)});
      return *a.split_sizes;
    }
    if (!a.split_size || a.split_size->size() != 1 || (*a.split_size)[0] <= 0)
      throw Error(ErrorCode::attr, "split needs a positive split_size");
    std::int64_t each = (*a.split_size)[0];
    expect_output_count(n / each + (n % each != 0), id);
    Ints r;
    for (std::int64_t at = 0; at < n; at += each) r.push_back(std::min(each, n - at));
    if (r.empty()) r.push_back(0);
    return r;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    auto d = indexed_axis(a.dim, in[0].shape, id);
    Specs out;
    for (auto sz : sizes(a, in[0].shape[d])) {
      Shape s = in[0].shape;
      s[d] = sz;
      out.push_back({s, in[0].dtype});
    }
    return out;
  }
};
struct Unbind {
  static constexpr std::string_view id = "unbind";
  static constexpr std::array aten{"aten.unbind.int"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t dim = 0;
    template <class V> void visit(V& v) { v("dim", dim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    Shape s = in[0].shape;
    auto d = indexed_axis(a.dim, s, id);
    std::int64_t n = s[d];
    expect_output_count(n, id);
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    return Specs(static_cast<std::size_t>(n), {s, in[0].dtype});
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
