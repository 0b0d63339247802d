// xtensor over the reference target's tensors: ref::xt_of(t) is an xt::adapt view of a tensor's
// own buffer, with its shape (row-major: the reference's tensors are contiguous), no copy. Kernels
// then say what they compute with xtensor's views (view, broadcast), reducers (norm_*,
// amax) and builders (roll, repeat, where). Only the reference target's kernel headers include
// this: xtensor stays out of the compiler, the other targets and the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>

#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::ref {

using XShape = std::vector<std::size_t>;

inline XShape xshape(const Shape& s) { return XShape(s.begin(), s.end()); }

// The tensor's elements as an xtensor expression of its shape (writable for a non-const tensor).
template <class T>
auto xt_of(Tensor& t) {
  return xt::adapt(t.data<T>(), static_cast<std::size_t>(t.numel()), xt::no_ownership(), xshape(t.shape()));
}
template <class T>
auto xt_of(const Tensor& t) {
  return xt::adapt(t.data<T>(), static_cast<std::size_t>(t.numel()), xt::no_ownership(), xshape(t.shape()));
}

// Calls f.template operator()<T>() for the element type of a reference tensor: float, int64 or
// bool (ref::runtime_dtype), so each kernel is instantiated for those three only.
template <class F>
decltype(auto) visit_runtime(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::i64: return f.template operator()<std::int64_t>();
    case DType::boolean: return f.template operator()<bool>();
    default: throw Error(ErrorCode::dtype, "reference kernel on a tensor that is not float32, int64 or bool", {.found = std::string(dtype_name(t))});
  }
}

// Calls f.template operator()<U>() with the unsigned integer type of the element size: movement
// moves bits, whatever the dtype (the reference also carries int8 and uint8 tensors).
template <class F>
decltype(auto) visit_bits(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: return f.template operator()<std::uint8_t>();
    case 2: return f.template operator()<std::uint16_t>();
    case 4: return f.template operator()<std::uint32_t>();
    case 8: return f.template operator()<std::uint64_t>();
    default: throw Error(ErrorCode::dtype, "reference movement of an element of unusual size", {.found = std::string(dtype_name(t))});
  }
}
// The tensor's elements as bits of their size U (visit_bits).
template <class U>
auto xt_bits(Tensor& t) {
  return xt::adapt(static_cast<U*>(t.raw()), static_cast<std::size_t>(t.numel()), xt::no_ownership(), xshape(t.shape()));
}
template <class U>
auto xt_bits(const Tensor& t) {
  return xt::adapt(static_cast<const U*>(t.raw()), static_cast<std::size_t>(t.numel()), xt::no_ownership(), xshape(t.shape()));
}

}  // namespace npusim::inline NPUSIM_ABI::ref
