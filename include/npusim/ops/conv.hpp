// 2-D convolution (NCHW), with stride, padding, dilation and groups.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct Conv2d {
  static constexpr std::string_view id = "conv2d";
  static constexpr std::array aten{"aten.conv2d.default"sv};
  static constexpr OpClass op_class = OpClass::conv;
  struct Attrs {
    Ints stride{1, 1}, padding{0, 0}, dilation{1, 1};
    std::int64_t groups = 1;
    template <class V> void visit(V& v) { v("stride", stride), v("padding", padding), v("dilation", dilation), v("groups", groups); }
    void check() {
      auto pair = [](Ints& x, const char* nm) {
        if (x.size() == 1) x.push_back(x[0]);
        if (x.size() != 2) throw unsupported_attr(nm, to_string(x), "one or two integers");
      };
      pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation");
      for (auto s : stride) if (s <= 0) throw unsupported_attr("stride", to_string(stride), "positive values");
      for (auto d : dilation) if (d <= 0) throw unsupported_attr("dilation", to_string(dilation), "positive values");
      for (auto p : padding) if (p < 0) throw unsupported_attr("padding", to_string(padding), "non-negative values");
      if (groups <= 0) throw unsupported_attr("groups", std::to_string(groups), "a positive integer");
    }
  };
  static std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 3, id);
    expect_rank(in[0], 4, 4, "conv2d input");
    expect_rank(in[1], 4, 4, "conv2d weight");
    const Shape &x = in[0].shape, &w = in[1].shape;
    if (x[1] % a.groups || w[0] % a.groups || w[1] * a.groups != x[1])
      throw Error(ErrorCode::shape, "conv2d channels do not match weight and groups",
                  {.expected = "weight [Cout, " + std::to_string(x[1] / a.groups) + ", kh, kw]", .found = to_string(w)});
    if (in.size() == 3 && !(in[2].shape == Shape{w[0]}))
      throw Error(ErrorCode::shape, "conv2d bias size", {.expected = "[" + std::to_string(w[0]) + "]", .found = to_string(in[2].shape)});
    std::int64_t oh = out_size(x[2], w[2], a.stride[0], a.padding[0], a.dilation[0]);
    std::int64_t ow = out_size(x[3], w[3], a.stride[1], a.padding[1], a.dilation[1]);
    if (oh <= 0 || ow <= 0) throw Error(ErrorCode::shape, "conv2d output would be empty", {.found = to_string(x)});
    return {{{x[0], w[0], oh, ow}, promote_types(in[0], in[1])}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
