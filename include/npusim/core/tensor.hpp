// Host tensor: dtype + shape + shared, 64-byte aligned (or borrowed, e.g. mmap'ed) storage.
// Copying a Tensor shares the storage; clone() copies the bytes. Always contiguous, row-major.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "npusim/core/dtype.hpp"
#include "npusim/core/shape.hpp"

namespace npusim::inline NPUSIM_ABI {

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<half_t> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bfloat16_t> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Calls f.template operator()<T>() with the C++ element type of t.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f16: return f.template operator()<half_t>();
    case DType::bf16: return f.template operator()<bfloat16_t>();
    case DType::f64: return f.template operator()<double>();
    case DType::i64: return f.template operator()<std::int64_t>();
    case DType::i32: return f.template operator()<std::int32_t>();
    case DType::i16: return f.template operator()<std::int16_t>();
    case DType::i8: return f.template operator()<std::int8_t>();
    case DType::u8: return f.template operator()<std::uint8_t>();
    case DType::boolean: return f.template operator()<bool>();
  }
  throw Error(ErrorCode::dtype, "invalid dtype value");
}

template <class To, class From>
inline To convert_scalar(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (std::is_same_v<From, half_t> || std::is_same_v<From, bfloat16_t>) {
    return convert_scalar<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, half_t> || std::is_same_v<To, bfloat16_t>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// Element-wise conversion between any two dtypes (float -> int truncates, like torch .to()).
inline void convert_elements(DType from, const void* src, DType to, void* dst, std::int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * dtype_size(from));
    return;
  }
  if (from == DType::bf16 && to == DType::f32) {
    auto* s = static_cast<const std::uint16_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (std::int64_t i = 0; i < n; ++i) d[i] = bf16_bits_to_f32(s[i]);
    return;
  }
  visit_dtype(from, [&]<class S>() {
    visit_dtype(to, [&]<class D>() {
      auto* s = static_cast<const S*>(src);
      auto* d = static_cast<D*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i] = convert_scalar<D>(s[i]);
    });
  });
}

// The most bytes one tensor may hold (a format cap, far beyond any real tensor): every size
// computation from a shape goes through checked_nbytes, so no byte count wraps.
inline constexpr std::int64_t max_tensor_bytes = std::int64_t{1} << 46;  // 64 TiB

// Bytes of a `dtype` tensor of `shape`, with a resource error (never a wrapped count) beyond
// max_tensor_bytes or when the element count overflows.
inline std::int64_t checked_nbytes(const Shape& shape, DType dtype) {
  const std::int64_t n = checked_numel(shape), es = static_cast<std::int64_t>(dtype_size(dtype));
  if (n > max_tensor_bytes / es)
    throw Error(ErrorCode::resource, std::string(dtype_name(dtype)) + " tensor of shape " + to_string(shape) + " is too large",
                {.expected = "<= " + std::to_string(max_tensor_bytes) + " bytes (64 TiB)",
                 .found = n > INT64_MAX / es ? "more than 2^63 bytes" : std::to_string(n * es) + " bytes"});
  return n * es;
}

// The most bytes one allocation may take: by default this machine's physical memory (a larger
// request could only end in std::bad_alloc or the OOM killer). Checked before allocating, so a
// file claiming a 1 TB tensor is an npusim::Error, not a crash. Tools and fuzzers may lower it.
inline std::atomic<std::uint64_t>& allocation_limit() {
  static std::atomic<std::uint64_t> limit = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : std::uint64_t{1} << 46;
  }();
  return limit;
}

// Throws a resource error when `bytes` exceed allocation_limit(); `what()` names the allocation
// (only called on failure, so hot paths pay one comparison).
template <class What>
void check_allocation(std::uint64_t bytes, What&& what) {
  const std::uint64_t limit = allocation_limit().load(std::memory_order_relaxed);
  if (bytes > limit)
    throw Error(ErrorCode::resource, std::string(what()) + " needs more memory than the allocation limit (this machine's memory unless lowered); nothing was allocated",
                {.expected = "<= " + std::to_string(limit) + " bytes", .found = std::to_string(bytes) + " bytes"});
}

class Tensor {
 public:
  static constexpr std::size_t alignment = 64;

  Tensor() = default;

  // Uninitialised storage. Sizes are checked before allocating.
  static Tensor empty(DType dtype, Shape shape) {
    const auto bytes = static_cast<std::size_t>(checked_nbytes(shape, dtype));
    check_allocation(bytes, [&] { return std::string(dtype_name(dtype)) + " tensor of shape " + to_string(shape); });
    void* p = ::operator new(std::max<std::size_t>(bytes, 1), std::align_val_t(alignment));
    std::shared_ptr<void> owner(p, [](void* q) { ::operator delete(q, std::align_val_t(alignment)); });
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    t.data_ = p;
    t.owner_ = std::move(owner);
    return t;
  }
  static Tensor zeros(DType dtype, Shape shape) {
    Tensor t = empty(dtype, std::move(shape));
    std::memset(t.data_, 0, t.nbytes());
    return t;
  }
  // A view of memory owned by someone else (an mmap, another tensor); `owner` keeps it alive.
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
    checked_nbytes(shape, dtype);
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    t.data_ = data;
    t.owner_ = std::move(owner);
    return t;
  }
  template <class T>
  static Tensor from_values(Shape shape, std::span<const T> values) {
    Tensor t = empty(dtype_of_v<T>, std::move(shape));
    if (static_cast<std::int64_t>(values.size()) != t.numel())
      throw Error(ErrorCode::shape, "value count does not match shape " + to_string(t.shape_),
                  {.expected = std::to_string(t.numel()), .found = std::to_string(values.size())});
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <class T>
  static Tensor scalar(T v) {
    Tensor t = empty(dtype_of_v<T>, {});
    *t.data<T>() = v;
    return t;
  }

  bool defined() const { return data_ != nullptr || owner_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return npusim::numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  const std::shared_ptr<void>& owner() const { return owner_; }

  template <class T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(data_);
  }
  template <class T>
  std::span<T> span() {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }
  template <class T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  // Same storage, new shape (element count must match).
  Tensor reshaped(Shape s) const {
    if (checked_numel(s) != numel())
      throw Error(ErrorCode::shape, "cannot reshape", {.expected = std::to_string(numel()) + " elements",
                                                       .found = to_string(s)});
    Tensor t = *this;
    t.shape_ = std::move(s);
    return t;
  }
  Tensor clone() const {
    Tensor t = empty(dtype_, shape_);
    if (nbytes()) std::memcpy(t.data_, data_, nbytes());
    return t;
  }
  // Converting copy; shares storage when the dtype already matches.
  Tensor to(DType d) const {
    if (d == dtype_) return *this;
    Tensor t = empty(d, shape_);
    convert_elements(dtype_, data_, d, t.data_, numel());
    return t;
  }

 private:
  template <class T>
  void check_type() const {
    if (dtype_of_v<std::remove_const_t<T>> != dtype_)
      throw Error(ErrorCode::dtype, "tensor element type mismatch",
                  {.expected = std::string(dtype_name(dtype_of_v<std::remove_const_t<T>>)),
                   .found = std::string(dtype_name(dtype_))});
  }

  DType dtype_ = DType::f32;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

}  // namespace npusim::inline NPUSIM_ABI
