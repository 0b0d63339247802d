// Ops that are another registered op under other arguments: swapaxes (transpose), expand_as
// (expand to the other tensor's shape), type_as (a cast to the other tensor's dtype), new_zeros
// (zeros), repeat_interleave with an integer count (unsqueeze, expand, reshape). Each has its own policy and reference kernel, so the interpreter runs the IR as written;
// the compiler's first pass, passes::canonicalize_aliases, rewrites them into the op they stand
// for, so every target runs them with that op's kernel.
#pragma once

#include "npusim/ops/creation.hpp"
#include "npusim/ops/shape.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// swapaxes(self, axis0, axis1) and swapdims(self, dim0, dim1): transpose under other names.
struct Swapaxes {
  static constexpr std::string_view id = "swapaxes";
  static constexpr std::array aten{"aten.swapaxes.default"sv, "aten.swapdims.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t axis0 = 0, axis1 = 0;
    std::optional<std::int64_t> dim0, dim1;  // swapdims' names
    template <class V> void visit(V& v) { v("axis0", axis0), v("axis1", axis1), v("dim0", dim0), v("dim1", dim1); }
  };
  static Transpose::Attrs transpose(const Attrs& a) { return {a.dim0.value_or(a.axis0), a.dim1.value_or(a.axis1)}; }
  static Ints perm(const Attrs& a, std::size_t rank) { return Transpose::perm(transpose(a), rank); }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    const auto r = static_cast<std::int64_t>(in[0].shape.size());
    const Transpose::Attrs t = transpose(a);
    normalize_dim(t.dim0, r), normalize_dim(t.dim1, r);  // range checks
    return Transpose::infer(t, in);
  }
};

// expand_as(self, other): self broadcast to other's shape (other's values are not read).
struct ExpandAs {
  static constexpr std::string_view id = "expand_as";
  static constexpr std::array aten{"aten.expand_as.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    Expand::Attrs e;
    e.size.assign(in[1].shape.begin(), in[1].shape.end());
    return Expand::infer(e, in.first(1));
  }
};

// type_as(self, other): self cast to other's dtype (other's values are not read).
struct TypeAs {
  static constexpr std::string_view id = "type_as";
  static constexpr std::array aten{"aten.type_as.default"sv};
  static constexpr OpClass op_class = OpClass::movement;  // rewritten to a cast before any target sees it
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    return {{in[0].shape, in[1].dtype}};
  }
};

// new_zeros(self, size, dtype=None, ...): zeros of `size`, self's dtype unless given.
struct NewZeros {
  static constexpr std::string_view id = "new_zeros";
  static constexpr std::array aten{"aten.new_zeros.default"sv};
  static constexpr OpClass op_class = OpClass::creation;
  static constexpr double value = 0.0;
  struct Attrs : CreationAttrsBase {
    Ints size;
    template <class V> void visit(V& v) { v("size", size), v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    for (auto d : a.size)
      if (d < 0) throw Error(ErrorCode::attr, "new_zeros: a negative size", {.expected = "sizes >= 0", .found = to_string(a.size)});
    Shape s(a.size.begin(), a.size.end());
    checked_numel(s);
    return {{s, a.dtype.value_or(in[0].dtype)}};
  }
};

// repeat_interleave(self, repeats: int, dim=None, output_size=None): each element (each slice
// along dim) repeated `repeats` times in place; dim None flattens first. The MoE routing of
// transformers 5 repeats the token ids once per selected expert. A tensor of counts
// (aten.repeat_interleave.Tensor, data-dependent sizes) is not this op.
struct RepeatInterleave {
  static constexpr std::string_view id = "repeat_interleave";
  static constexpr std::array aten{"aten.repeat_interleave.self_int"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    std::int64_t repeats = 1;
    std::optional<std::int64_t> dim, output_size;
    template <class V> void visit(V& v) { v("repeats", repeats), v("dim", dim), v("output_size", output_size); }
  };
  // The dim the repeats go along, in the (flattened when dim is None) input.
  static std::size_t axis(const Attrs& a, std::size_t rank) {
    return a.dim ? static_cast<std::size_t>(normalize_dim(*a.dim, static_cast<std::int64_t>(rank))) : 0;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    if (a.repeats < 0) throw Error(ErrorCode::attr, "repeat_interleave: repeats must not be negative", {.expected = ">= 0", .found = std::to_string(a.repeats)});
    Shape s = a.dim ? in[0].shape : Shape{checked_numel(in[0].shape)};
    if (s.empty()) s = {1};  // a 0-d tensor with a dim: torch treats it as one element
    const std::size_t d = axis(a, s.size());
    s[d] *= a.repeats;
    checked_numel(s);
    if (a.output_size && *a.output_size != s[d])
      throw Error(ErrorCode::attr, "repeat_interleave: output_size disagrees with repeats", {.expected = std::to_string(s[d]), .found = std::to_string(*a.output_size)});
    return {{s, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
