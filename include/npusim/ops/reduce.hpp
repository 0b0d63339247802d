// Reductions over dims and softmax.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// Output shape of a reduction over `dims` (empty = all dims).
inline Shape reduced_shape(const Shape& s, const Ints& dims, bool keepdim, std::vector<bool>* mask = nullptr) {
  std::vector<bool> red(s.size(), dims.empty());
  for (auto d : normalize_dims(dims, s.size()))
    if (!s.empty()) red[static_cast<std::size_t>(d)] = true;
  Shape o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!red[i]) o.push_back(s[i]);
    else if (keepdim) o.push_back(1);
  }
  if (mask) *mask = red;
  return o;
}

template <class Derived>
struct DimReduction {
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    std::optional<Ints> dim;
    bool keepdim = false;
    std::optional<DType> dtype;
    template <class V> void visit(V& v) {
      v("dim", dim), v("keepdim", keepdim);
      if constexpr (Derived::has_dtype) v("dtype", dtype);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, Derived::id);
    DType dt = a.dtype.value_or(in[0].dtype);
    if (Derived::id == std::string_view("mean")) expect_floating({in[0].shape, dt}, "mean input");
    if (Derived::id == std::string_view("sum") && !a.dtype && !is_floating(dt)) dt = DType::i64;
    return {{reduced_shape(in[0].shape, a.dim.value_or(Ints{}), a.keepdim), dt}};
  }
};
struct Mean : DimReduction<Mean> {
  static constexpr std::string_view id = "mean";
  static constexpr std::array aten{"aten.mean.dim"sv, "aten.mean.default"sv};
  static constexpr bool has_dtype = true;
};
struct Sum : DimReduction<Sum> {
  static constexpr std::string_view id = "sum";
  static constexpr std::array aten{"aten.sum.dim_IntList"sv, "aten.sum.default"sv};
  static constexpr bool has_dtype = true;
};
struct Amax : DimReduction<Amax> {
  static constexpr std::string_view id = "amax";
  static constexpr std::array aten{"aten.amax.default"sv};
  static constexpr bool has_dtype = false;
};
struct Amin : DimReduction<Amin> {
  static constexpr std::string_view id = "amin";
  static constexpr std::array aten{"aten.amin.default"sv};
  static constexpr bool has_dtype = false;
};

// argmax/argmin(self, dim=None, keepdim=False): first index of the extreme value.
template <class Derived>
struct ArgReduction {
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    std::optional<std::int64_t> dim;
    bool keepdim = false;
    template <class V> void visit(V& v) { v("dim", dim), v("keepdim", keepdim); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, Derived::id);
    if (!a.dim) return {{a.keepdim ? Shape(in[0].shape.size(), 1) : Shape{}, DType::i64}};
    return {{reduced_shape(in[0].shape, {*a.dim}, a.keepdim), DType::i64}};
  }
};
struct Argmax : ArgReduction<Argmax> {
  static constexpr std::string_view id = "argmax";
  static constexpr std::array aten{"aten.argmax.default"sv};
};
struct Argmin : ArgReduction<Argmin> {
  static constexpr std::string_view id = "argmin";
  static constexpr std::array aten{"aten.argmin.default"sv};
};

// softmax.int(self, dim, dtype=None); _softmax(self, dim, half_to_float); log_softmax likewise.
template <class Derived>
struct SoftmaxLike {
  static constexpr OpClass op_class = OpClass::reduction;
  struct Attrs {
    std::int64_t dim = -1;
    std::optional<DType> dtype;
    bool half_to_float = false;
    template <class V> void visit(V& v) { v("dim", dim), v("dtype", dtype), v("half_to_float", half_to_float); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, Derived::id);
    normalize_dim(a.dim, static_cast<std::int64_t>(in[0].shape.size()));
    DType dt = a.dtype.value_or(a.half_to_float ? DType::f32 : in[0].dtype);
    expect_floating({in[0].shape, dt}, Derived::id, "output");
    return {{in[0].shape, dt}};
  }
};
struct Softmax : SoftmaxLike<Softmax> {
  static constexpr std::string_view id = "softmax";
  static constexpr std::array aten{"aten.softmax.int"sv, "aten._softmax.default"sv};
  static constexpr bool log = false;
};
struct LogSoftmax : SoftmaxLike<LogSoftmax> {
  static constexpr std::string_view id = "log_softmax";
  static constexpr std::array aten{"aten.log_softmax.int"sv, "aten._log_softmax.default"sv};
  static constexpr bool log = true;
};

}  // namespace npusim::inline NPUSIM_ABI::ops
