// Pooling over NCHW: max, average, adaptive average (PyTorch window rules, ceil_mode included).
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

inline void expand_pair(Ints& x, const char* name, bool allow_empty = false) {
  if (allow_empty && x.empty()) return;
  if (x.size() == 1) x.push_back(x[0]);
  if (x.size() != 2) throw unsupported_attr(name, to_string(x), "one or two integers");
}

// PyTorch's pool2d_shape_check: positive kernel, stride and dilation, padding in [0, kernel / 2]
// (and every value at most 2^31).
inline void check_pool_window(const Ints& kernel, const Ints& stride, const Ints& padding, const Ints* dilation) {
  expect_window_attr(kernel, 1, "kernel_size"), expect_window_attr(stride, 1, "stride"), expect_window_attr(padding, 0, "padding");
  if (dilation) expect_window_attr(*dilation, 1, "dilation");
  for (int i = 0; i < 2; ++i)
    if (padding[i] > kernel[i] / 2) throw unsupported_attr("padding", to_string(padding), "at most half the kernel size");
}

struct MaxPool2d {
  static constexpr std::string_view id = "max_pool2d";
  static constexpr std::array aten{"aten.max_pool2d.default"sv};
  static constexpr OpClass op_class = OpClass::pool;
  struct Attrs {
    Ints kernel_size, stride, padding{0, 0}, dilation{1, 1};
    bool ceil_mode = false;
    template <class V> void visit(V& v) { v("kernel_size", kernel_size), v("stride", stride), v("padding", padding), v("dilation", dilation), v("ceil_mode", ceil_mode); }
    void check() {
      expand_pair(kernel_size, "kernel_size");
      if (stride.empty()) stride = kernel_size;  // schema default: stride = kernel_size
      expand_pair(stride, "stride"), expand_pair(padding, "padding"), expand_pair(dilation, "dilation");
      check_pool_window(kernel_size, stride, padding, &dilation);
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    expect_rank(in[0], 4, 4, "max_pool2d input");
    const Shape& x = in[0].shape;
    Shape o{x[0], x[1], window_output_size(x[2], a.kernel_size[0], a.stride[0], a.padding[0], a.dilation[0], a.ceil_mode, id),
            window_output_size(x[3], a.kernel_size[1], a.stride[1], a.padding[1], a.dilation[1], a.ceil_mode, id)};
    return {{o, in[0].dtype}};
  }
};

struct AvgPool2d {
  static constexpr std::string_view id = "avg_pool2d";
  static constexpr std::array aten{"aten.avg_pool2d.default"sv};
  static constexpr OpClass op_class = OpClass::pool;
  struct Attrs {
    Ints kernel_size, stride, padding{0, 0};
    bool ceil_mode = false, count_include_pad = true;
    std::optional<std::int64_t> divisor_override;
    template <class V> void visit(V& v) {
      v("kernel_size", kernel_size), v("stride", stride), v("padding", padding), v("ceil_mode", ceil_mode);
      v("count_include_pad", count_include_pad), v("divisor_override", divisor_override);
    }
    void check() {
      expand_pair(kernel_size, "kernel_size");
      if (stride.empty()) stride = kernel_size;
      expand_pair(stride, "stride"), expand_pair(padding, "padding");
      check_pool_window(kernel_size, stride, padding, nullptr);
      if (divisor_override && *divisor_override <= 0) throw unsupported_attr("divisor_override", std::to_string(*divisor_override), "a positive integer");
    }
  };
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    expect_rank(in[0], 4, 4, "avg_pool2d input");
    const Shape& x = in[0].shape;
    Shape o{x[0], x[1], window_output_size(x[2], a.kernel_size[0], a.stride[0], a.padding[0], 1, a.ceil_mode, id),
            window_output_size(x[3], a.kernel_size[1], a.stride[1], a.padding[1], 1, a.ceil_mode, id)};
    return {{o, in[0].dtype}};
  }
};

struct AdaptiveAvgPool2d {
  static constexpr std::string_view id = "adaptive_avg_pool2d";
  static constexpr std::array aten{"aten.adaptive_avg_pool2d.default"sv};
  static constexpr OpClass op_class = OpClass::pool;
  struct Attrs {
    Ints output_size;
    template <class V> void visit(V& v) { v("output_size", output_size); }
    void check() {
      expand_pair(output_size, "output_size");
      expect_window_attr(output_size, 1, "output_size");
    }
  };
  // Window [floor(i*in/out), ceil((i+1)*in/out)).
  static std::int64_t start(std::int64_t i, std::int64_t in, std::int64_t out) { return (i * in) / out; }
  static std::int64_t end(std::int64_t i, std::int64_t in, std::int64_t out) { return ((i + 1) * in + out - 1) / out; }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 1, 1, id);
    expect_rank(in[0], 3, 4, "adaptive_avg_pool2d input");
    Shape o = in[0].shape;
    if (o[o.size() - 2] < 1 || o[o.size() - 1] < 1)
      throw Error(ErrorCode::shape, "adaptive_avg_pool2d input has an empty spatial dimension", {.found = to_string(o)});
    o[o.size() - 2] = a.output_size[0];
    o[o.size() - 1] = a.output_size[1];
    return {{o, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
