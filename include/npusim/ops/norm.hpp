// Normalisations: batch norm (inference form), layer norm.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

// batch_norm(x, weight?, bias?, running_mean?, running_var?, training, momentum, eps, cudnn_enabled).
// torch_ir skips None tensors, so the input count tells what is present: 5 = all, 3 = no affine.
struct BatchNorm {
  static constexpr std::string_view id = "batch_norm";
  static constexpr std::array aten{"aten.batch_norm.default"sv};
  static constexpr OpClass op_class = OpClass::normalization;
  struct Attrs {
    bool training = false;
    double momentum = 0.1, eps = 1e-5;
    bool cudnn_enabled = true;
    template <class V> void visit(V& v) { v("training", training), v("momentum", momentum), v("eps", eps), v("cudnn_enabled", cudnn_enabled); }
    void check() const {
      if (training) throw unsupported_attr("training", "true", "false (inference with running statistics)");
    }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    if (in.size() != 5 && in.size() != 3)
      throw Error(ErrorCode::graph, "batch_norm needs x, [weight, bias,] running_mean, running_var",
                  {.expected = "3 or 5 tensor inputs", .found = std::to_string(in.size())});
    expect_rank(in[0], 2, 5, "batch_norm input");
    std::int64_t c = in[0].shape[1];
    for (std::size_t i = 1; i < in.size(); ++i)
      if (!(in[i].shape == Shape{c})) throw Error(ErrorCode::shape, "batch_norm parameter size", {.expected = "[" + std::to_string(c) + "]", .found = to_string(in[i].shape)});
    return {in[0]};
  }
};

// layer_norm(x, normalized_shape, weight?, bias?, eps). 2 inputs = weight only.
struct LayerNorm {
  static constexpr std::string_view id = "layer_norm";
  static constexpr std::array aten{"aten.layer_norm.default"sv};
  static constexpr OpClass op_class = OpClass::normalization;
  struct Attrs {
    Ints normalized_shape;
    double eps = 1e-5;
    bool cudnn_enable = true;
    template <class V> void visit(V& v) { v("normalized_shape", normalized_shape), v("eps", eps), v("cudnn_enable", cudnn_enable); }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 3, id);
    const Shape& x = in[0].shape;
    if (a.normalized_shape.empty() || a.normalized_shape.size() > x.size() ||
        !std::equal(a.normalized_shape.begin(), a.normalized_shape.end(), x.end() - static_cast<std::ptrdiff_t>(a.normalized_shape.size())))
      throw Error(ErrorCode::shape, "layer_norm normalized_shape does not match the trailing input dims",
                  {.expected = to_string(a.normalized_shape), .found = to_string(x)});
    for (std::size_t i = 1; i < in.size(); ++i)
      if (in[i].shape != Shape(a.normalized_shape.begin(), a.normalized_shape.end()))
        throw Error(ErrorCode::shape, "layer_norm parameter shape", {.expected = to_string(a.normalized_shape), .found = to_string(in[i].shape)});
    return {in[0]};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
