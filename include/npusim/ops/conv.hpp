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
      expect_window_attr(stride, 1, "stride"), expect_window_attr(dilation, 1, "dilation"), expect_window_attr(padding, 0, "padding");
      if (groups <= 0) throw unsupported_attr("groups", std::to_string(groups), "a positive integer");
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 2, 3, id);
    expect_rank(in[0], 4, 4, "conv2d input");
    expect_rank(in[1], 4, 4, "conv2d weight");
    const Shape &x = in[0].shape, &w = in[1].shape;
    if (x[1] % a.groups || w[0] % a.groups || w[1] != x[1] / a.groups)
      throw Error(ErrorCode::shape, "conv2d channels do not match weight and groups",
                  {.expected = "weight [Cout, " + std::to_string(x[1] / a.groups) + ", kh, kw]", .found = to_string(w)});
    if (in.size() == 3 && !(in[2].shape == Shape{w[0]}))
      throw Error(ErrorCode::shape, "conv2d bias size", {.expected = "[" + std::to_string(w[0]) + "]", .found = to_string(in[2].shape)});
    if (w[2] < 1 || w[3] < 1) throw Error(ErrorCode::shape, "conv2d weight has an empty kernel", {.found = to_string(w)});
    std::int64_t oh = window_output_size(x[2], w[2], a.stride[0], a.padding[0], a.dilation[0], false, id);
    std::int64_t ow = window_output_size(x[3], w[3], a.stride[1], a.padding[1], a.dilation[1], false, id);
    return {{{x[0], w[0], oh, ow}, promote_types(in[0], in[1])}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
