// Affine int8 ops (docs/quantization.md, "Affine int8"): real = scale * (q - zero_point).
//
//   quantize_per_tensor / dequantize_per_tensor   float <-> int8 at a float island's edges; the
//       names and meaning of PyTorch's quantized_decomposed ops (what PT2E quantization exports)
//   qmax_pool2d                                     max pooling of int8 codes (the input's parameters)
//   qcat                                            concatenation, each input rescaled to the output's parameters
//   qconv2d, qlinear, qadd                          npusim's integer kernels: int8 in, int8 out, an
//       int32 accumulator requantized by TFLite's fixed-point multiplier (core/quant.hpp), so
//       every target computes the same bits; the activation after them (ReLU, ReLU6) is the
//       output clamp [out_min, out_max]
//
// `npusim quantize` writes these (passes/quantize_int8.hpp); no export contains the q* ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include "npusim/core/quant.hpp"
#include "npusim/ops/conv.hpp"
#include "npusim/ops/op_base.hpp"
#include "npusim/ops/pool.hpp"
#include "npusim/ops/shape.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

namespace detail {
inline void check_affine(double scale, std::int64_t zero_point, std::int64_t qmin, std::int64_t qmax, std::string_view what) {
  const std::string w(what);
  if (!(scale > 0.0) || !std::isfinite(scale)) throw unsupported_attr(w + "scale", std::to_string(scale), "a positive finite number");
  if (qmin < -128 || qmax > 127 || qmin > qmax)
    throw unsupported_attr(w + "quant_min/quant_max", std::to_string(qmin) + ".." + std::to_string(qmax), "a range inside -128..127 (int8)");
  if (zero_point < -128 || zero_point > 127) throw unsupported_attr(w + "zero_point", std::to_string(zero_point), "a value in -128..127");
}
inline void expect_int8(const TensorSpec& t, std::string_view op, std::string_view role) {
  if (t.dtype != DType::i8)
    throw Error(ErrorCode::dtype, std::string(op) + " " + std::string(role) + " must be int8", {.expected = "int8", .found = std::string(dtype_name(t.dtype))});
}
}  // namespace detail

// clamp(round_half_even(x * (1 / scale)) + zero_point, quant_min, quant_max), float in, int8 out.
struct QuantizePerTensor {
  static constexpr std::string_view id = "quantize_per_tensor";
  static constexpr std::array aten{"quantized_decomposed.quantize_per_tensor.default"sv};
  static constexpr OpClass op_class = OpClass::quantization;
  struct Attrs {
    double scale = 1.0;
    std::int64_t zero_point = 0, quant_min = -128, quant_max = 127;
    DType dtype = DType::i8;
    template <class V> void visit(V& v) {
      v("scale", scale), v("zero_point", zero_point), v("quant_min", quant_min), v("quant_max", quant_max), v("dtype", dtype);
    }
    void check() const {
      detail::check_affine(scale, zero_point, quant_min, quant_max, "");
      if (dtype != DType::i8) throw unsupported_attr("dtype", std::string(dtype_name(dtype)), "torch.int8");
    }
    quant::Affine affine() const {
      return {static_cast<float>(scale), static_cast<std::int32_t>(zero_point), static_cast<std::int32_t>(quant_min),
              static_cast<std::int32_t>(quant_max)};
    }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 1, 1, id);
    expect_floating(in[0], id, "input");
    return {{in[0].shape, DType::i8}};
  }
};

// (float(q) - zero_point) * scale in float32.
struct DequantizePerTensor {
  static constexpr std::string_view id = "dequantize_per_tensor";
  static constexpr std::array aten{"quantized_decomposed.dequantize_per_tensor.default"sv};
  static constexpr OpClass op_class = OpClass::quantization;
  // quantize_per_tensor's parameters, and the float type of the result.
  struct Attrs : QuantizePerTensor::Attrs {
    std::optional<DType> out_dtype;
    template <class V> void visit(V& v) { QuantizePerTensor::Attrs::visit(v), v("out_dtype", out_dtype); }
    void check() const {
      QuantizePerTensor::Attrs::check();
      if (out_dtype && !is_floating(*out_dtype)) throw unsupported_attr("out_dtype", std::string(dtype_name(*out_dtype)), "a float type");
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    detail::expect_int8(in[0], id, "input");
    return {{in[0].shape, a.out_dtype.value_or(DType::f32)}};
  }
};

// What the integer ops share: the input's and the output's affine parameters and the output clamp.
struct QuantOutAttrs {
  double x_scale = 1.0, out_scale = 1.0;
  std::int64_t x_zero_point = 0, out_zero_point = 0, out_min = -128, out_max = 127;
  template <class V> void visit(V& v) {
    v("x_scale", x_scale), v("x_zero_point", x_zero_point), v("out_scale", out_scale), v("out_zero_point", out_zero_point),
        v("out_min", out_min), v("out_max", out_max);
  }
  void check() const {
    detail::check_affine(x_scale, x_zero_point, -128, 127, "x_");
    detail::check_affine(out_scale, out_zero_point, out_min, out_max, "out_");
  }
  quant::Affine out_affine() const {
    return {static_cast<float>(out_scale), static_cast<std::int32_t>(out_zero_point), static_cast<std::int32_t>(out_min),
            static_cast<std::int32_t>(out_max)};
  }
};

namespace detail {
// A qconv2d/qlinear's weight scales (f32 [Cout]) and bias (int32 [Cout]).
inline void check_channel_params(InSpecs in, std::int64_t cout, std::string_view op) {
  expect_arity(in, 3, 4, op);
  if (!(in[2].shape == Shape{cout}) || in[2].dtype != DType::f32)
    throw Error(ErrorCode::shape, std::string(op) + " weight scales", {.expected = "float32[" + std::to_string(cout) + "]", .found = to_string(in[2])});
  if (in.size() == 4 && (!(in[3].shape == Shape{cout}) || in[3].dtype != DType::i32))
    throw Error(ErrorCode::shape, std::string(op) + " bias", {.expected = "int32[" + std::to_string(cout) + "]", .found = to_string(in[3])});
}
}  // namespace detail

// Inputs: x int8 [N, C, H, W], weight int8 [Cout, C / groups, kh, kw] (symmetric, per output
// channel), weight scales f32 [Cout], bias int32 [Cout] (scale x_scale * w_scale[c]) optional.
// out = clamp(out_zero_point + M_c * sum((x - x_zero_point) * w) + bias), M_c = x_scale *
// w_scale[c] / out_scale as a fixed-point multiplier.
struct QConv2d {
  static constexpr std::string_view id = "qconv2d";
  static constexpr std::array aten{"npusim.qconv2d"sv};
  static constexpr OpClass op_class = OpClass::conv;
  // A convolution's geometry (conv2d's attributes and checks), then the quantization's.
  struct Attrs : Conv2d::Attrs, QuantOutAttrs {
    template <class V> void visit(V& v) { Conv2d::Attrs::visit(v), QuantOutAttrs::visit(v); }
    void check() { Conv2d::Attrs::check(), QuantOutAttrs::check(); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 3, 4, id);
    expect_rank(in[0], 4, 4, "qconv2d input");
    expect_rank(in[1], 4, 4, "qconv2d weight");
    detail::expect_int8(in[0], id, "input"), detail::expect_int8(in[1], id, "weight");
    const Shape &x = in[0].shape, &w = in[1].shape;
    if (x[1] % a.groups || w[0] % a.groups || w[1] != x[1] / a.groups)
      throw Error(ErrorCode::shape, "qconv2d channels do not match weight and groups",
                  {.expected = "weight [Cout, " + std::to_string(x[1] / a.groups) + ", kh, kw]", .found = to_string(w)});
    detail::check_channel_params(in, w[0], id);
    std::int64_t oh = window_output_size(x[2], w[2], a.stride[0], a.padding[0], a.dilation[0], false, id);
    std::int64_t ow = window_output_size(x[3], w[3], a.stride[1], a.padding[1], a.dilation[1], false, id);
    return {{{x[0], w[0], oh, ow}, DType::i8}};
  }
};

// Inputs: x int8 [..., K], weight int8 [N, K], weight scales f32 [N], bias int32 [N] optional.
struct QLinear {
  static constexpr std::string_view id = "qlinear";
  static constexpr std::array aten{"npusim.qlinear"sv};
  static constexpr OpClass op_class = OpClass::matmul;
  struct Attrs : QuantOutAttrs {
    template <class V> void visit(V& v) { QuantOutAttrs::visit(v); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 3, 4, id);
    expect_rank(in[0], 1, 8, "qlinear input");
    expect_rank(in[1], 2, 2, "qlinear weight");
    detail::expect_int8(in[0], id, "input"), detail::expect_int8(in[1], id, "weight");
    if (in[1].shape[1] != in[0].shape.back())
      throw Error(ErrorCode::shape, "qlinear weight does not match the input features",
                  {.expected = "[N, " + std::to_string(in[0].shape.back()) + "]", .found = to_string(in[1].shape)});
    detail::check_channel_params(in, in[1].shape[0], id);
    Shape o = in[0].shape;
    o.back() = in[1].shape[0];
    return {{o, DType::i8}};
  }
};

// a + b of two int8 tensors of one shape, each with its own parameters, as TFLite's integer add:
// both rescaled to 2^20 / (2 * max(a_scale, b_scale)) by fixed-point multipliers, summed, then
// requantized to the output's parameters and clamped.
struct QAdd {
  static constexpr std::string_view id = "qadd";
  static constexpr std::array aten{"npusim.qadd"sv};
  static constexpr OpClass op_class = OpClass::quantization;
  struct Attrs {
    double a_scale = 1.0, b_scale = 1.0, out_scale = 1.0;
    std::int64_t a_zero_point = 0, b_zero_point = 0, out_zero_point = 0, out_min = -128, out_max = 127;
    template <class V> void visit(V& v) {
      v("a_scale", a_scale), v("a_zero_point", a_zero_point), v("b_scale", b_scale), v("b_zero_point", b_zero_point),
          v("out_scale", out_scale), v("out_zero_point", out_zero_point), v("out_min", out_min), v("out_max", out_max);
    }
    void check() const {
      detail::check_affine(a_scale, a_zero_point, -128, 127, "a_");
      detail::check_affine(b_scale, b_zero_point, -128, 127, "b_");
      detail::check_affine(out_scale, out_zero_point, out_min, out_max, "out_");
    }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    detail::expect_int8(in[0], id, "input a"), detail::expect_int8(in[1], id, "input b");
    if (!(in[0].shape == in[1].shape))
      throw Error(ErrorCode::shape, "qadd inputs differ in shape", {.expected = to_string(in[0].shape), .found = to_string(in[1].shape)});
    return {{in[0].shape, DType::i8}};
  }
};

// max_pool2d of int8 codes: the maximum commutes with the affine map, so the output has the
// input's parameters and the pool needs none (the taps outside the input take no part, as the
// float op's -inf padding).
struct QMaxPool2d {
  static constexpr std::string_view id = "qmax_pool2d";
  static constexpr std::array aten{"npusim.qmax_pool2d"sv};
  static constexpr OpClass op_class = OpClass::pool;
  using Attrs = MaxPool2d::Attrs;
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    detail::expect_int8(in[0], id, "input");
    return MaxPool2d::infer(a, in);
  }
};

// cat of int8 tensors, each with its own parameters: every input rescaled to the output's
// (out_zero_point + (q - zero_point_i) * scale_i / out_scale, as a fixed-point multiplier), then
// concatenated along dim; inputs with the output's parameters are copied as they are.
struct QCat {
  static constexpr std::string_view id = "qcat";
  static constexpr std::array aten{"npusim.qcat"sv};
  static constexpr OpClass op_class = OpClass::quantization;
  struct Attrs {
    std::int64_t dim = 0;
    std::vector<double> scales;
    Ints zero_points;
    double out_scale = 1.0;
    std::int64_t out_zero_point = 0;
    template <class V> void visit(V& v) {
      v("dim", dim), v("scales", scales), v("zero_points", zero_points), v("out_scale", out_scale), v("out_zero_point", out_zero_point);
    }
    void check() const {
      if (scales.size() != zero_points.size()) throw unsupported_attr("scales", std::to_string(scales.size()) + " value(s)", "one scale per zero point");
      for (std::size_t i = 0; i < scales.size(); ++i) detail::check_affine(scales[i], zero_points[i], -128, 127, "");
      detail::check_affine(out_scale, out_zero_point, -128, 127, "out_");
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    if (in.size() != a.scales.size())
      throw Error(ErrorCode::graph, "qcat has one scale and zero point per input", {.expected = std::to_string(a.scales.size()), .found = std::to_string(in.size())});
    for (const auto& t : in) detail::expect_int8(t, id, "input");
    return Cat::infer(Cat::Attrs{a.dim}, in);
  }
};

// ---- the integer arithmetic every target's kernels share ------------------------------------------

// qconv2d/qlinear requantization of one output channel: M = x_scale * w_scale / out_scale.
inline quant::FixedPointMultiplier channel_multiplier(double x_scale, float w_scale, double out_scale) {
  return quant::quantize_multiplier(static_cast<double>(static_cast<float>(x_scale)) * static_cast<double>(w_scale) /
                                    static_cast<double>(static_cast<float>(out_scale)));
}

// acc (int32, bias included) -> the output code.
inline std::int8_t requantize(std::int32_t acc, quant::FixedPointMultiplier m, std::int32_t out_zero_point, std::int32_t out_min,
                              std::int32_t out_max) {
  const std::int64_t v = std::int64_t{quant::multiply_by_quantized_multiplier(acc, m)} + out_zero_point;
  return static_cast<std::int8_t>(std::clamp<std::int64_t>(v, out_min, out_max));
}

// TFLite's int8 add (reference_integer_ops::AddElementwise) with its parameters precomputed.
// qcat's rescaling of input i: code -> out_zero_point + (code - zero_point_i) * M_i, clamped.
struct QCatRescale {
  quant::FixedPointMultiplier m;
  std::int32_t zero_point = 0, out_zero_point = 0;
  bool identity = false;  // the output's parameters: a copy
  std::int8_t operator()(std::int32_t q) const {
    if (identity) return static_cast<std::int8_t>(q);
    const std::int64_t v = std::int64_t{quant::multiply_by_quantized_multiplier(q - zero_point, m)} + out_zero_point;
    return static_cast<std::int8_t>(std::clamp<std::int64_t>(v, -128, 127));
  }
};
inline std::vector<QCatRescale> qcat_rescales(const QCat::Attrs& a) {
  std::vector<QCatRescale> r;
  const double os = static_cast<float>(a.out_scale);
  for (std::size_t i = 0; i < a.scales.size(); ++i) {
    QCatRescale q;
    q.zero_point = static_cast<std::int32_t>(a.zero_points[i]), q.out_zero_point = static_cast<std::int32_t>(a.out_zero_point);
    q.identity = static_cast<float>(a.scales[i]) == static_cast<float>(a.out_scale) && a.zero_points[i] == a.out_zero_point;
    q.m = quant::quantize_multiplier(static_cast<double>(static_cast<float>(a.scales[i])) / os);
    r.push_back(q);
  }
  return r;
}

// The (outer, inner) split of a cat along dim: outer = product of dims before it, inner = after.
inline std::pair<std::int64_t, std::int64_t> cat_split(const Shape& out, std::int64_t dim) {
  const auto d = static_cast<std::size_t>(normalize_dim(dim, static_cast<std::int64_t>(out.size())));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= out[i];
  for (std::size_t i = d + 1; i < out.size(); ++i) inner *= out[i];
  return {outer, inner};
}

struct QAddParams {
  static constexpr int left_shift = 20;
  std::int32_t a_offset, b_offset, out_offset, out_min, out_max;
  quant::FixedPointMultiplier a_mult, b_mult, out_mult;

  explicit QAddParams(const QAdd::Attrs& a) {
    const double as = static_cast<float>(a.a_scale), bs = static_cast<float>(a.b_scale), os = static_cast<float>(a.out_scale);
    const double twice_max = 2.0 * std::max(as, bs);
    a_mult = quant::quantize_multiplier(as / twice_max);
    b_mult = quant::quantize_multiplier(bs / twice_max);
    out_mult = quant::quantize_multiplier(twice_max / (static_cast<double>(1 << left_shift) * os));
    a_offset = static_cast<std::int32_t>(-a.a_zero_point), b_offset = static_cast<std::int32_t>(-a.b_zero_point);
    out_offset = static_cast<std::int32_t>(a.out_zero_point);
    out_min = static_cast<std::int32_t>(a.out_min), out_max = static_cast<std::int32_t>(a.out_max);
  }
  std::int8_t operator()(std::int32_t qa, std::int32_t qb) const {
    const std::int32_t sa = quant::multiply_by_quantized_multiplier((qa + a_offset) * (1 << left_shift), a_mult);
    const std::int32_t sb = quant::multiply_by_quantized_multiplier((qb + b_offset) * (1 << left_shift), b_mult);
    const std::int32_t r = quant::multiply_by_quantized_multiplier(sa + sb, out_mult) + out_offset;
    return static_cast<std::int8_t>(std::clamp(r, out_min, out_max));
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
