// Writes: copy_, zero_, fill, masked_fill, and slice_scatter (the functional form of a write
// through a slice view).
//
// The exported graph keeps in-place writes as nodes (swin's attention mask: new_zeros, then
// `mask[h0:h1, w0:w1] = k` as slice -> slice -> copy_; swin v2: `bias[n:2n].zero_()`), and later
// nodes read the written base tensor, not the write's output. Each policy here is functional: its
// output is the value the written tensor has afterwards (copy_: src broadcast and cast to self's
// shape and dtype; zero_: zeros). passes::functionalize_writes turns a write through a chain of
// slices into slice_scatter nodes that rebuild the base and rewires the later readers of the base
// (and of the views) to the new values; the interpreter applies the same pass.
#pragma once

#include "npusim/ops/op_base.hpp"
#include "npusim/ops/shape.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// copy_(self, src, non_blocking): self's shape and dtype, src's values (broadcast, cast). Also
// fill_.Tensor(self, value): the same with a 0-d value (`t[a:b] = v[0]` may trace to either).
struct Copy {
  static constexpr std::string_view id = "copy";
  static constexpr std::array aten{"aten.copy.default"sv, "aten.copy_.default"sv, "aten.fill.Tensor"sv, "aten.fill_.Tensor"sv};
  static constexpr OpClass op_class = OpClass::movement;
  struct Attrs {
    bool non_blocking = false;
    template <class V> void visit(V& v) { v("non_blocking", non_blocking); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    if (broadcast_shapes(in[0].shape, in[1].shape) != in[0].shape)
      throw Error(ErrorCode::shape, "copy_: the source does not broadcast to the destination",
                  {.expected = "broadcastable to " + to_string(in[0].shape), .found = to_string(in[1].shape)});
    return {in[0]};
  }
};

// zero_(self): zeros of self's shape and dtype.
struct Zero {
  static constexpr std::string_view id = "zero";
  static constexpr std::array aten{"aten.zero.default"sv, "aten.zero_.default"sv};
  static constexpr OpClass op_class = OpClass::creation;
  static constexpr double value = 0.0;
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {in[0]};
  }
};

// fill.Scalar(self, value): self's shape and dtype, every element `value`.
struct Fill {
  static constexpr std::string_view id = "fill";
  static constexpr std::array aten{"aten.fill.Scalar"sv, "aten.fill_.Scalar"sv};
  static constexpr OpClass op_class = OpClass::creation;
  struct Attrs {
    Scalar value;
    template <class V> void visit(V& v) { v("value", value); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    return {in[0]};
  }
};

// masked_fill.Scalar(self, mask, value) / masked_fill.Tensor(self, mask, value as a 0-d tensor):
// where mask (bool, broadcast) is true, value, else self; the shape is self and mask broadcast.
struct MaskedFill {
  static constexpr std::string_view id = "masked_fill";
  static constexpr std::array aten{"aten.masked_fill.Scalar"sv, "aten.masked_fill_.Scalar"sv, "aten.masked_fill.Tensor"sv,
                                   "aten.masked_fill_.Tensor"sv};
  static constexpr OpClass op_class = OpClass::elementwise;
  struct Attrs {
    std::optional<Scalar> value;  // absent in the .Tensor overload: the third input
    template <class V> void visit(V& v) { v("value", value); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 3, id);
    if (in[1].dtype != DType::boolean)
      throw Error(ErrorCode::dtype, "masked_fill mask must be a bool tensor", {.expected = "bool", .found = to_string(in[1])});
    if (in.size() == 3 && !in[2].shape.empty())
      throw Error(ErrorCode::shape, "masked_fill value must be a 0-d tensor", {.expected = "shape []", .found = to_string(in[2])});
    if (in.size() == 2 && !a.value)
      throw Error(ErrorCode::attr, "masked_fill has no value", {.expected = "attribute 'value' or a third input"});
    return {{broadcast_shapes(in[0].shape, in[1].shape), in[0].dtype}};
  }
};

// slice_scatter(self, src, dim, start, end, step): self with self[start:end:step] along dim
// replaced by src (cast to self's dtype).
struct SliceScatter {
  static constexpr std::string_view id = "slice_scatter";
  static constexpr std::array aten{"aten.slice_scatter.default"sv};
  static constexpr OpClass op_class = OpClass::movement;
  using Attrs = Slice::Attrs;
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 2, id);
    const TensorSpec self[] = {in[0]};
    const Shape want = Slice::infer(a, self)[0].shape;
    if (in[1].shape != want)
      throw Error(ErrorCode::shape, "slice_scatter source shape differs from the slice's", {.expected = to_string(want), .found = to_string(in[1].shape)});
    return {in[0]};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
