// The window ops of shifted-window attention and friends: pad (constant, reflect, replicate,
// circular), roll, advanced indexing (index.Tensor) and the vector norm of F.normalize.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// Where a gathering movement op (pad, roll) reads: output index o of dimension d reads input index
// map[d][o] of `in` (the input's shape as the map sees it), or nothing (-1: constant padding's
// fill value). The CPU and OpenCL kernels gather through it; the reference computes its own way.
struct SourceMap {
  Shape in;
  std::vector<std::vector<std::int64_t>> map;
  Shape out() const {
    Shape o;
    for (const auto& m : map) o.push_back(static_cast<std::int64_t>(m.size()));
    return o;
  }
  // A rank-0 tensor as one element of rank 1 (kernels then need no rank-0 case).
  SourceMap& at_least_1d() {
    if (map.empty()) in = {1}, map = {{0}};
    return *this;
  }
  static std::int64_t floor_mod(std::int64_t a, std::int64_t n) { return ((a % n) + n) % n; }
};

// pad(self, pad, mode="constant", value=None): pad = (left, right) pairs from the last dimension
// backwards. Constant padding may be negative (a crop); the other modes need 0 <= pad (reflect:
// pad < size, circular: pad <= size), as F.pad.
struct Pad {
  static constexpr std::string_view id = "pad";
  static constexpr std::array aten{"aten.pad.default"sv, "aten.constant_pad_nd.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  enum class Mode : std::uint8_t { constant, reflect, replicate, circular };
  struct Attrs {
    Ints pad;
    std::string mode = "constant";
    std::optional<double> value;
    template <class V> void visit(V& v) { v("pad", pad), v("mode", mode), v("value", value); }
    void check() const {
      if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
        throw Error(ErrorCode::attr, "pad mode npusim does not know", {.expected = "constant, reflect, replicate or circular", .found = mode});
      if (pad.size() % 2 != 0) throw Error(ErrorCode::attr, "pad takes (left, right) pairs", {.expected = "an even length", .found = to_string(pad)});
      expect_window_attr_signed(pad);
    }
    static void expect_window_attr_signed(const Ints& p) {
      for (auto x : p)
        if (x < -(std::int64_t{1} << 31) || x > (std::int64_t{1} << 31))
          throw Error(ErrorCode::attr, "pad has a value npusim does not implement", {.expected = "|pad| <= 2^31", .found = to_string(p)});
    }
  };
  static Mode mode(const Attrs& a) {
    return a.mode == "reflect" ? Mode::reflect : a.mode == "replicate" ? Mode::replicate : a.mode == "circular" ? Mode::circular : Mode::constant;
  }
  // The (left, right) padding of every dimension of a rank-r tensor.
  static std::vector<std::pair<std::int64_t, std::int64_t>> per_dim(const Attrs& a, std::size_t r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> p(r, {0, 0});
    for (std::size_t k = 0; 2 * k < a.pad.size(); ++k) p[r - 1 - k] = {a.pad[2 * k], a.pad[2 * k + 1]};
    return p;
  }
  // The input index each output index reads, per dimension (infer has checked the sizes).
  static SourceMap source_map(const Attrs& a, const Shape& s) {
    const Mode m = mode(a);
    const auto p = per_dim(a, s.size());
    SourceMap r{s, std::vector<std::vector<std::int64_t>>(s.size())};
    for (std::size_t d = 0; d < s.size(); ++d) {
      const std::int64_t n = s[d], l = p[d].first, len = n + p[d].first + p[d].second;
      for (std::int64_t o = 0; o < len; ++o) {
        std::int64_t i = o - l;
        if (i < 0 || i >= n) {
          switch (m) {
            case Mode::constant: i = -1; break;
            case Mode::reflect: i = i < 0 ? -i : 2 * (n - 1) - i; break;
            case Mode::replicate: i = i < 0 ? 0 : n - 1; break;
            case Mode::circular: i = SourceMap::floor_mod(i, n); break;
          }
        }
        r.map[d].push_back(i);
      }
    }
    return r.at_least_1d();
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    const Shape& s = in[0].shape;
    if (a.pad.size() / 2 > s.size())
      throw Error(ErrorCode::shape, "pad names more dimensions than the input has", {.expected = "<= " + std::to_string(s.size()) + " pairs", .found = to_string(a.pad)});
    const Mode m = mode(a);
    if (m != Mode::constant && a.value && *a.value != 0.0)
      throw Error(ErrorCode::attr, "pad: a value is only meaningful in constant mode", {.found = a.mode});
    auto p = per_dim(a, s.size());
    Shape o = s;
    for (std::size_t d = 0; d < s.size(); ++d) {
      auto [l, r] = p[d];
      if (m != Mode::constant && (l != 0 || r != 0)) {
        if (l < 0 || r < 0) throw Error(ErrorCode::attr, "pad: negative padding in " + a.mode + " mode", {.found = to_string(a.pad)});
        const std::int64_t lim = m == Mode::reflect ? s[d] - 1 : m == Mode::circular ? s[d] : INT64_MAX;
        if (s[d] == 0 || l > lim || r > lim)
          throw Error(ErrorCode::shape, "pad: " + a.mode + " padding larger than the dimension allows",
                      {.expected = "padding <= " + std::to_string(lim) + " for dimension " + std::to_string(d), .found = to_string(a.pad)});
      }
      o[d] = s[d] + l + r;
      if (o[d] < 0) throw Error(ErrorCode::shape, "pad: a negative output size", {.found = "dimension " + std::to_string(d) + " of " + to_string(s) + " padded by " + to_string(a.pad)});
    }
    checked_numel(o);
    return {{o, in[0].dtype}};
  }
};

// The mode-specific spellings of pad: reflection_padNd(self, padding), replication_padNd(self,
// padding), _pad_circular(self, pad). What F.pad calls for those modes where aten.pad is
// decomposed; canonicalize_aliases rewrites them into aten.pad.
template <class Derived>
struct PadAlias {
  static constexpr OpClass op_class = OpClass::movement;
  template <class A>  // Derived::Attrs (Derived is incomplete here)
  static Pad::Attrs pad(const A& a) {
    Pad::Attrs p;
    p.pad = a.padding, p.mode = Derived::mode;
    p.check();
    return p;
  }
  template <class A>
  static Specs infer(const A& a, InSpecs in) {
    expect_arity(in, 1, 1, Derived::id);
    return Pad::infer(pad(a), in);
  }
};
struct ReflectionPad : PadAlias<ReflectionPad> {
  static constexpr std::string_view id = "reflection_pad";
  static constexpr std::array aten{"aten.reflection_pad1d.default"sv, "aten.reflection_pad2d.default"sv, "aten.reflection_pad3d.default"sv};
  static constexpr const char* mode = "reflect";
  struct Attrs {
    Ints padding;
    template <class V> void visit(V& v) { v("padding", padding); }
  };
};
struct ReplicationPad : PadAlias<ReplicationPad> {
  static constexpr std::string_view id = "replication_pad";
  static constexpr std::array aten{"aten.replication_pad1d.default"sv, "aten.replication_pad2d.default"sv, "aten.replication_pad3d.default"sv};
  static constexpr const char* mode = "replicate";
  using Attrs = ReflectionPad::Attrs;
};
struct CircularPad : PadAlias<CircularPad> {
  static constexpr std::string_view id = "pad_circular";
  static constexpr std::array aten{"aten._pad_circular.default"sv};
  static constexpr const char* mode = "circular";
  struct Attrs {
    Ints padding;  // ATen's name: pad
    template <class V> void visit(V& v) { v("pad", padding); }
  };
};

// roll(self, shifts, dims=[]): out[i] = self[(i - shift) mod n] along each dim; with no dims, the
// flattened tensor rolls by the single shift.
struct Roll {
  static constexpr std::string_view id = "roll";
  static constexpr std::array aten{"aten.roll.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    Ints shifts, dims;
    template <class V> void visit(V& v) { v("shifts", shifts), v("dims", dims); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    if (a.dims.empty() ? a.shifts.size() != 1 : a.shifts.size() != a.dims.size())
      throw Error(ErrorCode::attr, "roll: shifts and dims disagree",
                  {.expected = a.dims.empty() ? "one shift" : std::to_string(a.dims.size()) + " shifts", .found = to_string(a.shifts)});
    for (auto d : a.dims) indexed_axis(d, in[0].shape, id);
    return {in[0]};
  }
  // The input index each output index reads, per dimension; with no dims, of the flattened tensor.
  static SourceMap source_map(const Attrs& a, const Shape& shape) {
    const Shape s = a.dims.empty() ? Shape{npusim::numel(shape)} : shape;
    SourceMap r{s, std::vector<std::vector<std::int64_t>>(s.size())};
    for (std::size_t d = 0; d < s.size(); ++d)
      for (std::int64_t o = 0; o < s[d]; ++o) r.map[d].push_back(o);
    for (std::size_t k = 0; k < a.shifts.size(); ++k) {
      const auto d = a.dims.empty() ? 0 : static_cast<std::size_t>(normalize_dim(a.dims[k], static_cast<std::int64_t>(s.size())));
      for (auto& i : r.map[d]) i = SourceMap::floor_mod(i - a.shifts[k], s[d]);
    }
    return r.at_least_1d();
  }
};

// index.Tensor(self, indices): advanced indexing, self[idx0, None, idx2, ...]. The IR lists the
// non-None index tensors as inputs after self; `_tensor_list_none_masks` says where the Nones
// were. Integer indices broadcast together to one shape B; if they are adjacent, B replaces
// their dimensions in place, else it comes first (NumPy's rule). Bool masks give data-dependent
// shapes, which a static graph cannot have: refused.
struct IndexTensor {
  static constexpr std::string_view id = "index_tensor";
  static constexpr std::array aten{"aten.index.Tensor"sv, "aten._unsafe_index.Tensor"sv};
  static constexpr OpClass op_class = OpClass::indexing;
  struct Attrs {
    Ints _tensor_list_sizes;
    NoneMasks _tensor_list_none_masks;
    template <class V> void visit(V& v) { v("_tensor_list_sizes", _tensor_list_sizes), v("_tensor_list_none_masks", _tensor_list_none_masks); }
  };
  // For each indexed position of self: the input that indexes it (>= 1), or 0 for a None.
  struct Layout {
    std::vector<std::size_t> source;  // per self dimension: input index, 0 = kept (None or beyond)
    Shape index_shape;                // B
    bool adjacent = true;             // B stays in place (else first)
    std::size_t first = 0;            // first indexed dimension
    Shape out;
    // Per output dimension: the kept dimension of self it is (>= 0), or -1 - j for dimension j of B.
    std::vector<std::int64_t> from;
  };
  static Layout layout(const Attrs& a, InSpecs in) {
    const std::size_t nidx = in.size() - 1;
    std::vector<bool> mask;
    if (!a._tensor_list_none_masks.empty()) {
      mask = a._tensor_list_none_masks.front();
      std::size_t present = 0;
      for (bool m : mask) present += m ? 0 : 1;
      if (present != nidx)
        throw Error(ErrorCode::attr, "index: _tensor_list_none_masks does not match the index inputs",
                    {.expected = std::to_string(nidx) + " non-None entries", .found = std::to_string(present)});
    } else {
      mask.assign(nidx, false);
    }
    const Shape& s = in[0].shape;
    if (mask.size() > s.size())
      throw Error(ErrorCode::shape, "index: too many indices for the tensor", {.expected = "<= " + std::to_string(s.size()), .found = std::to_string(mask.size())});
    if (nidx == 0) throw Error(ErrorCode::graph, "index: no index tensor", {.expected = "at least one"});
    Layout l;
    l.source.assign(s.size(), 0);
    std::size_t k = 1, last = 0;
    bool seen = false;
    for (std::size_t d = 0; d < mask.size(); ++d) {
      if (mask[d]) continue;
      const TensorSpec& t = in[k];
      if (t.dtype == DType::boolean || t.dtype == DType::u8)
        throw Error(ErrorCode::unsupported, "index: a boolean mask index gives a data-dependent shape", {.expected = "integer index tensors", .found = to_string(t)});
      if (!is_integral(t.dtype)) throw Error(ErrorCode::dtype, "index tensors must be integers", {.expected = "int64/int32", .found = to_string(t)});
      l.index_shape = k == 1 ? t.shape : broadcast_shapes(l.index_shape, t.shape);
      if (seen && d != last + 1) l.adjacent = false;
      if (!seen) l.first = d;
      seen = true, last = d, l.source[d] = k++;
    }
    // B in place of the indexed dimensions when they are adjacent, else first (NumPy's placement).
    auto push_b = [&] {
      for (std::size_t j = 0; j < l.index_shape.size(); ++j) l.out.push_back(l.index_shape[j]), l.from.push_back(-1 - static_cast<std::int64_t>(j));
    };
    if (!l.adjacent) push_b();
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (l.adjacent && d == l.first) push_b();
      if (l.source[d] == 0) l.out.push_back(s[d]), l.from.push_back(static_cast<std::int64_t>(d));
    }
    checked_numel(l.out);
    return l;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 65, id);
    return {{layout(a, in).out, in[0].dtype}};
  }
};

// linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None): (sum |x|^ord)^(1/ord)
// over dim (all when None); ord inf / -inf: max / min of |x|; ord 0: the count of non-zeros.
struct LinalgVectorNorm {
  static constexpr std::string_view id = "linalg_vector_norm";
  static constexpr std::array aten{"aten.linalg_vector_norm.default"sv};
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    Scalar ord{2.0, true};
    std::optional<Ints> dim;
    bool keepdim = false;
    std::optional<DType> dtype;
    template <class V> void visit(V& v) { v("ord", ord), v("dim", dim), v("keepdim", keepdim), v("dtype", dtype); }
  };
  // The reduced axes of a rank-r input, sorted, unique.
  static std::vector<bool> reduced(const Attrs& a, std::size_t r) {
    std::vector<bool> red(r, !a.dim || a.dim->empty());
    if (a.dim && r > 0)
      for (auto d : *a.dim) {
        auto k = static_cast<std::size_t>(normalize_dim(d, static_cast<std::int64_t>(r)));
        if (red[k]) throw Error(ErrorCode::attr, "linalg_vector_norm: a dimension given twice", {.found = to_string(*a.dim)});
        red[k] = true;
      }
    return red;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    expect_floating(in[0], id, "input");
    const Shape& s = in[0].shape;
    std::vector<bool> red = reduced(a, s.size());
    Shape o;
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (red[d] && s[d] == 0 && a.ord.value < 0)
        throw Error(ErrorCode::shape, "linalg_vector_norm of negative order over an empty dimension", {.found = to_string(s)});
      if (!red[d]) o.push_back(s[d]);
      else if (a.keepdim) o.push_back(1);
    }
    return {{o, a.dtype.value_or(in[0].dtype)}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
