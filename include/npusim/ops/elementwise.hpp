// Pointwise ops. Each policy also carries its scalar math (`fn`), which is the definition of the
// op's semantics: the reference target applies it directly, faster targets must agree with it.
#pragma once

#include <cmath>
#include <optional>

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// ---- unary ----------------------------------------------------------------------------------------
template <class Derived>
struct UnaryOp {
  static constexpr OpClass op_class = OpClass::elementwise;
  static constexpr int arity = 1;
  static constexpr bool integer_ok = false;  // may the input be an integer tensor?
  template <class A>
  static Specs infer(const A&, InSpecs in) {
    expect_arity(in, 1, 1, Derived::id);
    if (!Derived::integer_ok) expect_floating(in[0], Derived::id, "input");
    return {in[0]};
  }
};

struct Relu : UnaryOp<Relu> {
  static constexpr std::string_view id = "relu";
  static constexpr std::array aten{"aten.relu.default"sv, "aten.relu_.default"sv};
  static constexpr bool integer_ok = true;
  using Attrs = NoAttrs;
  template <class T> static T fn(const Attrs&, T x) { return x > T(0) ? x : T(0); }
};
struct Silu : UnaryOp<Silu> {
  static constexpr std::string_view id = "silu";
  static constexpr std::array aten{"aten.silu.default"sv, "aten.silu_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return x / (1.0f + std::exp(-x)); }
};
struct Neg : UnaryOp<Neg> {
  static constexpr std::string_view id = "neg";
  static constexpr std::array aten{"aten.neg.default"sv, "aten.neg_.default"sv};
  static constexpr bool integer_ok = true;
  using Attrs = NoAttrs;
  template <class T> static T fn(const Attrs&, T x) { return -x; }
};
struct Abs : UnaryOp<Abs> {
  static constexpr std::string_view id = "abs";
  static constexpr std::array aten{"aten.abs.default"sv, "aten.abs_.default"sv};
  static constexpr bool integer_ok = true;
  using Attrs = NoAttrs;
  template <class T> static T fn(const Attrs&, T x) { return x < T(0) ? -x : x; }
};
struct Rsqrt : UnaryOp<Rsqrt> {
  static constexpr std::string_view id = "rsqrt";
  static constexpr std::array aten{"aten.rsqrt.default"sv, "aten.rsqrt_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return 1.0f / std::sqrt(x); }
};
struct Sqrt : UnaryOp<Sqrt> {
  static constexpr std::string_view id = "sqrt";
  static constexpr std::array aten{"aten.sqrt.default"sv, "aten.sqrt_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::sqrt(x); }
};
struct Reciprocal : UnaryOp<Reciprocal> {
  static constexpr std::string_view id = "reciprocal";
  static constexpr std::array aten{"aten.reciprocal.default"sv, "aten.reciprocal_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return 1.0f / x; }
};
struct Cos : UnaryOp<Cos> {
  static constexpr std::string_view id = "cos";
  static constexpr std::array aten{"aten.cos.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::cos(x); }
};
struct Sin : UnaryOp<Sin> {
  static constexpr std::string_view id = "sin";
  static constexpr std::array aten{"aten.sin.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::sin(x); }
};
struct Exp : UnaryOp<Exp> {
  static constexpr std::string_view id = "exp";
  static constexpr std::array aten{"aten.exp.default"sv, "aten.exp_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::exp(x); }
};
struct Log : UnaryOp<Log> {
  static constexpr std::string_view id = "log";
  static constexpr std::array aten{"aten.log.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::log(x); }
};
struct Tanh : UnaryOp<Tanh> {
  static constexpr std::string_view id = "tanh";
  static constexpr std::array aten{"aten.tanh.default"sv, "aten.tanh_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::tanh(x); }
};
struct Erf : UnaryOp<Erf> {
  static constexpr std::string_view id = "erf";
  static constexpr std::array aten{"aten.erf.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::erf(x); }
};
struct Sigmoid : UnaryOp<Sigmoid> {
  static constexpr std::string_view id = "sigmoid";
  static constexpr std::array aten{"aten.sigmoid.default"sv, "aten.sigmoid_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return 1.0f / (1.0f + std::exp(-x)); }
};
struct Gelu : UnaryOp<Gelu> {
  static constexpr std::string_view id = "gelu";
  static constexpr std::array aten{"aten.gelu.default"sv, "aten.gelu_.default"sv};
  struct Attrs {
    std::string approximate = "none";
    template <class V> void visit(V& v) { v("approximate", approximate); }
    void check() const {
      if (approximate != "none" && approximate != "tanh") throw unsupported_attr("approximate", approximate, "\"none\" or \"tanh\"");
    }
  };
  static float fn(const Attrs& a, float x) {
    if (a.approximate == "tanh") {
      const float k = 0.7978845608028654f;  // sqrt(2/pi)
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    }
    return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
  }
};
struct Hardtanh : UnaryOp<Hardtanh> {
  static constexpr std::string_view id = "hardtanh";
  static constexpr std::array aten{"aten.hardtanh.default"sv, "aten.hardtanh_.default"sv};
  struct Attrs {
    double min_val = -1.0, max_val = 1.0;
    template <class V> void visit(V& v) { v("min_val", min_val), v("max_val", max_val); }
  };
  static float fn(const Attrs& a, float x) {
    return std::min(std::max(x, static_cast<float>(a.min_val)), static_cast<float>(a.max_val));
  }
};
struct Hardswish : UnaryOp<Hardswish> {
  static constexpr std::string_view id = "hardswish";
  static constexpr std::array aten{"aten.hardswish.default"sv, "aten.hardswish_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
};
struct Hardsigmoid : UnaryOp<Hardsigmoid> {
  static constexpr std::string_view id = "hardsigmoid";
  static constexpr std::array aten{"aten.hardsigmoid.default"sv, "aten.hardsigmoid_.default"sv};
  using Attrs = NoAttrs;
  static float fn(const Attrs&, float x) { return std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
};
struct LeakyRelu : UnaryOp<LeakyRelu> {
  static constexpr std::string_view id = "leaky_relu";
  static constexpr std::array aten{"aten.leaky_relu.default"sv, "aten.leaky_relu_.default"sv};
  struct Attrs {
    double negative_slope = 0.01;
    template <class V> void visit(V& v) { v("negative_slope", negative_slope); }
  };
  static float fn(const Attrs& a, float x) { return x > 0 ? x : x * static_cast<float>(a.negative_slope); }
};
struct Clamp : UnaryOp<Clamp> {
  static constexpr std::string_view id = "clamp";
  static constexpr std::array aten{"aten.clamp.default"sv, "aten.clamp_.default"sv};
  static constexpr bool integer_ok = true;
  struct Attrs {
    std::optional<Scalar> min, max;
    template <class V> void visit(V& v) { v("min", min), v("max", max); }
  };
  template <class T> static T fn(const Attrs& a, T x) {
    if (a.min && x < static_cast<T>(a.min->value)) x = static_cast<T>(a.min->value);
    if (a.max && x > static_cast<T>(a.max->value)) x = static_cast<T>(a.max->value);
    return x;
  }
};
struct ClampMin : UnaryOp<ClampMin> {
  static constexpr std::string_view id = "clamp_min";
  static constexpr std::array aten{"aten.clamp_min.default"sv, "aten.clamp_min_.default"sv};
  static constexpr bool integer_ok = true;
  struct Attrs {
    Scalar min;
    template <class V> void visit(V& v) { v("min", min); }
  };
  template <class T> static T fn(const Attrs& a, T x) { return x < static_cast<T>(a.min.value) ? static_cast<T>(a.min.value) : x; }
};
struct PowScalar : UnaryOp<PowScalar> {
  static constexpr std::string_view id = "pow_scalar";
  static constexpr std::array aten{"aten.pow.Tensor_Scalar"sv};
  struct Attrs {
    Scalar exponent{1.0, true};
    template <class V> void visit(V& v) { v("exponent", exponent); }
  };
  static float fn(const Attrs& a, float x) {
    if (a.exponent.value == 2.0) return x * x;  // exact, like ATen's square fast path
    if (a.exponent.value == 0.5) return std::sqrt(x);
    if (a.exponent.value == -1.0) return 1.0f / x;
    return std::pow(x, static_cast<float>(a.exponent.value));
  }
};

// ---- binary (tensor op tensor, or tensor op attrs.other) -------------------------------------------
struct BinaryAttrs {
  std::optional<Scalar> other;  // scalar operand when the node has one tensor input
  Scalar alpha{1.0, true};      // add/sub/rsub only; other ops never visit it
};

template <class Derived, bool HasAlpha, bool IsCompare = false>
struct BinaryOp {
  static constexpr OpClass op_class = OpClass::elementwise;
  static constexpr int arity = 2;
  static constexpr bool is_compare = IsCompare;
  struct Attrs : BinaryAttrs {
    template <class V> void visit(V& v) {
      v("other", other);
      if constexpr (HasAlpha) v("alpha", alpha);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 2, Derived::id);
    if (in.size() == 1) {
      if (!a.other)
        throw Error(ErrorCode::attr, std::string(Derived::id) + " with one tensor input needs attrs.other");
      DType t = promote_with_scalar(in[0].dtype, *a.other);
      return {{in[0].shape, IsCompare ? DType::boolean : t}};
    }
    if (a.other) throw Error(ErrorCode::attr, std::string(Derived::id) + " has two tensor inputs and attrs.other");
    return {{broadcast_shapes(in[0].shape, in[1].shape), IsCompare ? DType::boolean : promote_types(in[0], in[1])}};
  }
};

struct Add : BinaryOp<Add, true> {
  static constexpr std::string_view id = "add";
  static constexpr std::array aten{"aten.add.Tensor"sv, "aten.add_.Tensor"sv, "aten.add.Scalar"sv};
  template <class T> static T fn(const Attrs& at, T a, T b) { return at.alpha.value == 1.0 ? a + b : a + static_cast<T>(at.alpha.value) * b; }
};
struct Sub : BinaryOp<Sub, true> {
  static constexpr std::string_view id = "sub";
  static constexpr std::array aten{"aten.sub.Tensor"sv, "aten.sub_.Tensor"sv, "aten.sub.Scalar"sv};
  template <class T> static T fn(const Attrs& at, T a, T b) { return at.alpha.value == 1.0 ? a - b : a - static_cast<T>(at.alpha.value) * b; }
};
// rsub(self, other, alpha) = other - alpha * self
struct Rsub : BinaryOp<Rsub, true> {
  static constexpr std::string_view id = "rsub";
  static constexpr std::array aten{"aten.rsub.Scalar"sv, "aten.rsub.Tensor"sv};
  template <class T> static T fn(const Attrs& at, T a, T b) { return at.alpha.value == 1.0 ? b - a : b - static_cast<T>(at.alpha.value) * a; }
};
struct Mul : BinaryOp<Mul, false> {
  static constexpr std::string_view id = "mul";
  static constexpr std::array aten{"aten.mul.Tensor"sv, "aten.mul_.Tensor"sv, "aten.mul.Scalar"sv};
  template <class T> static T fn(const Attrs&, T a, T b) { return a * b; }
};
struct Div : BinaryOp<Div, false> {
  static constexpr std::string_view id = "div";
  static constexpr std::array aten{"aten.div.Tensor"sv, "aten.div_.Tensor"sv, "aten.div.Scalar"sv};
  // True division: integer inputs promote to float (PyTorch semantics), so no integer fn.
  static Specs infer(const Attrs& a, InSpecs in) {
    Specs s = BinaryOp::infer(a, in);
    if (!is_floating(s[0].dtype)) s[0].dtype = DType::f32;
    return s;
  }
  static float fn(const Attrs&, float a, float b) { return a / b; }
};
struct Maximum : BinaryOp<Maximum, false> {
  static constexpr std::string_view id = "maximum";
  static constexpr std::array aten{"aten.maximum.default"sv};
  template <class T> static T fn(const Attrs&, T a, T b) { return (a != a) ? a : (a > b ? a : b); }
};
struct Minimum : BinaryOp<Minimum, false> {
  static constexpr std::string_view id = "minimum";
  static constexpr std::array aten{"aten.minimum.default"sv};
  template <class T> static T fn(const Attrs&, T a, T b) { return (a != a) ? a : (a < b ? a : b); }
};
struct Gt : BinaryOp<Gt, false, true> {
  static constexpr std::string_view id = "gt";
  static constexpr std::array aten{"aten.gt.Scalar"sv, "aten.gt.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a > b; }
};
struct Lt : BinaryOp<Lt, false, true> {
  static constexpr std::string_view id = "lt";
  static constexpr std::array aten{"aten.lt.Scalar"sv, "aten.lt.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a < b; }
};
struct Ge : BinaryOp<Ge, false, true> {
  static constexpr std::string_view id = "ge";
  static constexpr std::array aten{"aten.ge.Scalar"sv, "aten.ge.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a >= b; }
};
struct Le : BinaryOp<Le, false, true> {
  static constexpr std::string_view id = "le";
  static constexpr std::array aten{"aten.le.Scalar"sv, "aten.le.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a <= b; }
};
struct Eq : BinaryOp<Eq, false, true> {
  static constexpr std::string_view id = "eq";
  static constexpr std::array aten{"aten.eq.Scalar"sv, "aten.eq.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a == b; }
};
struct Ne : BinaryOp<Ne, false, true> {
  static constexpr std::string_view id = "ne";
  static constexpr std::array aten{"aten.ne.Scalar"sv, "aten.ne.Tensor"sv};
  template <class T> static bool fn(const Attrs&, T a, T b) { return a != b; }
};

// where(cond, a, b)
struct Where {
  static constexpr std::string_view id = "where";
  static constexpr std::array aten{"aten.where.self"sv};
  static constexpr OpClass op_class = OpClass::elementwise;
  static constexpr int arity = 3;
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 3, 3, id);
    if (in[0].dtype != DType::boolean)
      throw Error(ErrorCode::dtype, "where condition must be bool", {.expected = "bool", .found = std::string(dtype_name(in[0].dtype))});
    return {{broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape), in[2].shape), promote_types(in[1], in[2])}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
