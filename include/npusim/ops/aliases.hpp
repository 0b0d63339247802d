// Ops that are another registered op under other arguments: swapaxes (transpose), expand_as
// (expand to the other tensor's shape), type_as (a cast to the other tensor's dtype), new_zeros
// (zeros). Each has its own policy and reference kernel, so the interpreter runs the IR as written;
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

}  // namespace npusim::inline NPUSIM_ABI::ops
