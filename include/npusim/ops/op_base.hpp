// What every op policy shares: tensor specs for shape/dtype inference, op classes for the
// compiler, PyTorch type promotion, and small checking helpers. An op policy is a stateless struct:
//
//   struct Relu {
//     static constexpr std::string_view id = "relu";
//     static constexpr std::array aten{"aten.relu.default"sv, "aten.relu_.default"sv};
//     static constexpr OpClass op_class = OpClass::elementwise;
//     using Attrs = NoAttrs;
//     static std::vector<TensorSpec> infer(const Attrs&, std::span<const TensorSpec> in);
//   };
//
// The first ATen name is the canonical one (in-place variants normalise to it).
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/core/shape.hpp"
#include "npusim/ops/attrs.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

using namespace std::string_view_literals;
using npusim::to_string;

struct TensorSpec {
  Shape shape;
  DType dtype = DType::f32;
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

inline std::string to_string(const TensorSpec& t) { return std::string(dtype_name(t.dtype)) + to_string(t.shape); }

enum class OpClass : std::uint8_t {
  elementwise,  // pointwise, broadcasting
  view,         // zero-copy reinterpretation (reshape, unsqueeze, alias, getitem, ...)
  movement,     // data movement (transpose, permute, slice, cat, expand, ...)
  reduction,    // reductions and softmax
  normalization,
  matmul,
  conv,
  pool,
  indexing,
  attention,
  creation,
  quantization,  // affine int8: quantize, dequantize, integer elementwise (ops/quantized.hpp)
  noop,  // no outputs or pure metadata (assert, dropout in eval)
};

inline const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::elementwise: return "elementwise";
    case OpClass::view: return "view";
    case OpClass::movement: return "movement";
    case OpClass::reduction: return "reduction";
    case OpClass::normalization: return "normalization";
    case OpClass::matmul: return "matmul";
    case OpClass::conv: return "conv";
    case OpClass::pool: return "pool";
    case OpClass::indexing: return "indexing";
    case OpClass::attention: return "attention";
    case OpClass::creation: return "creation";
    case OpClass::quantization: return "quantization";
    case OpClass::noop: return "noop";
  }
  return "?";
}

struct NoAttrs {
  template <class V>
  void visit(V&) {}
};

using Specs = std::vector<TensorSpec>;
using InSpecs = std::span<const TensorSpec>;

inline void expect_arity(InSpecs in, std::size_t lo, std::size_t hi, std::string_view op) {
  if (in.size() < lo || in.size() > hi)
    throw Error(ErrorCode::graph, std::string(op) + " takes " +
                                      (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                                      " tensor inputs",
                {.expected = std::to_string(lo) + (lo == hi ? "" : ".." + std::to_string(hi)), .found = std::to_string(in.size())});
}

inline void expect_rank(const TensorSpec& t, std::size_t lo, std::size_t hi, std::string_view what) {
  if (t.shape.size() < lo || t.shape.size() > hi)
    throw Error(ErrorCode::shape, std::string(what) + " has the wrong rank",
                {.expected = lo == hi ? "rank " + std::to_string(lo) : "rank " + std::to_string(lo) + ".." + std::to_string(hi),
                 .found = to_string(t.shape)});
}

namespace detail {
// Out of line and cold: inlined with a constant op name, GCC 13 reports a false -Warray-bounds in
// std::string's concatenation (the op policies pass their id).
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_not_floating(DType found, std::string_view op, std::string_view role) {
  std::string what(op);
  if (!role.empty()) what.append(" ").append(role);
  what.append(" must be a floating-point tensor");
  throw Error(ErrorCode::dtype, std::move(what), {.expected = "float32/float16/bfloat16", .found = std::string(dtype_name(found))});
}
}  // namespace detail

// `op` and `role` ("input", "output") name the tensor in the message.
inline void expect_floating(const TensorSpec& t, std::string_view op, std::string_view role) {
  if (!is_floating(t.dtype)) detail::throw_not_floating(t.dtype, op, role);
}
inline void expect_floating(const TensorSpec& t, std::string_view what) { expect_floating(t, what, {}); }

// PyTorch's result_type for two tensors: category (bool < int < float) first; in a category a
// dimensioned tensor wins over a 0-d one; otherwise the wider type (f16 with bf16 gives f32).
inline DType promote_types(const TensorSpec& a, const TensorSpec& b) {
  auto cat = [](DType t) { return t == DType::boolean ? 0 : is_floating(t) ? 2 : 1; };
  if (cat(a.dtype) != cat(b.dtype)) return cat(a.dtype) > cat(b.dtype) ? a.dtype : b.dtype;
  if (a.dtype == b.dtype) return a.dtype;
  bool a0 = a.shape.empty(), b0 = b.shape.empty();
  if (a0 != b0) return a0 ? b.dtype : a.dtype;
  if (is_floating(a.dtype)) {
    if (is_half(a.dtype) && is_half(b.dtype)) return DType::f32;
    return dtype_size(a.dtype) >= dtype_size(b.dtype) ? (is_half(a.dtype) ? b.dtype : a.dtype) : b.dtype;
  }
  return dtype_size(a.dtype) >= dtype_size(b.dtype) ? a.dtype : b.dtype;
}

// Tensor with a Python scalar: the tensor's dtype, except int/bool tensor with a float scalar.
inline DType promote_with_scalar(DType t, const Scalar& s) {
  if (!s.is_integral && !is_floating(t)) return DType::f32;
  if (t == DType::boolean && s.is_integral) return DType::i64;
  return t;
}

// Output length of a sliding window (convolution, pooling) as PyTorch computes it, in 128-bit
// arithmetic so that no attribute value can overflow it; an empty or oversized result is an error.
// Callers have checked kernel >= 1, stride >= 1, dilation >= 1 and padding >= 0.
inline std::int64_t window_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                       std::int64_t dilation, bool ceil_mode, std::string_view op) {
  __extension__ using wide = __int128;
  const wide num = wide{in} + 2 * wide{pad} - wide{dilation} * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  wide out = num < 0 ? 0 : num / stride + 1;
  if (ceil_mode && out > 0 && (out - 1) * stride >= wide{in} + pad) --out;  // the last window must start inside
  if (out < 1 || out > INT64_MAX)
    throw Error(ErrorCode::shape, std::string(op) + " output size would be " + (out < 1 ? "empty" : "too large"),
                {.found = "input " + std::to_string(in) + ", kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride) +
                          ", padding " + std::to_string(pad) + ", dilation " + std::to_string(dilation)});
  return static_cast<std::int64_t>(out);
}

// For Attrs::check() of window ops (kernel, stride, padding, dilation, sizes): every value in
// [min, 2^31], which keeps the kernels' index arithmetic far from int64 overflow.
inline void expect_window_attr(const Ints& v, std::int64_t min, const char* name) {
  constexpr std::int64_t max = std::int64_t{1} << 31;
  for (auto x : v)
    if (x < min || x > max)
      throw Error(ErrorCode::attr, "attribute '" + std::string(name) + "' has a value npusim does not implement",
                  {.expected = "values in [" + std::to_string(min) + ", " + std::to_string(max) + "]", .found = to_string(v)});
}

// The axis `dim` of a shape the op indexes by it: normalize_dim takes dim 0 / -1 of a 0-d tensor
// (as PyTorch's reductions do), but a 0-d tensor has no axis to index, so it is refused here.
inline std::size_t indexed_axis(std::int64_t dim, const Shape& s, std::string_view op) {
  if (s.empty()) throw Error(ErrorCode::shape, std::string(op) + " of a 0-d tensor", {.expected = "a tensor of rank >= 1", .found = "shape []"});
  return static_cast<std::size_t>(normalize_dim(dim, static_cast<std::int64_t>(s.size())));
}

// Ops with as many outputs as their attributes say (split, chunk, unbind): a count beyond any real
// graph is refused before a list of that many output specs is made.
inline constexpr std::int64_t max_op_outputs = std::int64_t{1} << 16;
inline void expect_output_count(std::int64_t count, std::string_view op) {
  if (count > max_op_outputs)
    throw Error(ErrorCode::attr, std::string(op) + " would produce more outputs than npusim takes",
                {.expected = "<= " + std::to_string(max_op_outputs), .found = std::to_string(count)});
}

inline Ints normalize_dims(const Ints& dims, std::size_t rank) {
  Ints r;
  for (auto d : dims) r.push_back(normalize_dim(d, static_cast<std::int64_t>(rank)));
  return r;
}

}  // namespace npusim::inline NPUSIM_ABI::ops
