// Tensor creation from attrs: full, zeros/ones, arange, scalar_tensor.
#pragma once

#include <cmath>

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct CreationAttrsBase {
  std::optional<DType> dtype;
  Ignored layout, device, pin_memory;
};

struct Full {
  static constexpr std::string_view id = "full";
  static constexpr std::array aten{"aten.full.default"sv};
  static constexpr OpClass op_class = OpClass::creation;
  struct Attrs : CreationAttrsBase {
    Ints size;
    Scalar fill_value;
    template <class V> void visit(V& v) {
      v("size", size), v("fill_value", fill_value), v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 0, 0, id);
    DType dt = a.dtype.value_or(a.fill_value.is_integral ? DType::i64 : DType::f32);
    Shape s(a.size.begin(), a.size.end());
    checked_numel(s);
    return {{s, dt}};
  }
};

template <class Derived>
struct ConstantFill {
  static constexpr OpClass op_class = OpClass::creation;
  struct Attrs : CreationAttrsBase {
    Ints size;
    template <class V> void visit(V& v) { v("size", size), v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 0, 0, Derived::id);
    Shape s(a.size.begin(), a.size.end());
    checked_numel(s);
    return {{s, a.dtype.value_or(DType::f32)}};
  }
};
struct Zeros : ConstantFill<Zeros> {
  static constexpr std::string_view id = "zeros";
  static constexpr std::array aten{"aten.zeros.default"sv};
  static constexpr double value = 0.0;
};
struct Ones : ConstantFill<Ones> {
  static constexpr std::string_view id = "ones";
  static constexpr std::array aten{"aten.ones.default"sv};
  static constexpr double value = 1.0;
};

// arange(end) / arange.start(start, end) / arange.start_step(start, end, step).
struct Arange {
  static constexpr std::string_view id = "arange";
  static constexpr std::array aten{"aten.arange.default"sv, "aten.arange.start"sv, "aten.arange.start_step"sv};
  static constexpr OpClass op_class = OpClass::creation;
  struct Attrs : CreationAttrsBase {
    Scalar start{0.0, true}, end{0.0, true}, step{1.0, true};
    template <class V> void visit(V& v) {
      v("start", start), v("end", end), v("step", step), v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory);
    }
    void check() const {
      if (step.value == 0) throw unsupported_attr("step", "0", "a non-zero step");
    }
  };
  static std::int64_t length(const Attrs& a) {
    double n = std::ceil((a.end.value - a.start.value) / a.step.value);
    if (n > 1e12) throw Error(ErrorCode::resource, "arange length is too large", {.found = std::to_string(n)});
    return n > 0 ? static_cast<std::int64_t>(n) : 0;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 0, 0, id);
    bool integral = a.start.is_integral && a.end.is_integral && a.step.is_integral;
    return {{{length(a)}, a.dtype.value_or(integral ? DType::i64 : DType::f32)}};
  }
};

struct ScalarTensor {
  static constexpr std::string_view id = "scalar_tensor";
  static constexpr std::array aten{"aten.scalar_tensor.default"sv};
  static constexpr OpClass op_class = OpClass::creation;
  struct Attrs : CreationAttrsBase {
    Scalar s;
    template <class V> void visit(V& v) { v("s", s), v("dtype", dtype), v("layout", layout), v("device", device), v("pin_memory", pin_memory); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 0, 0, id);
    return {{{}, a.dtype.value_or(DType::f32)}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
