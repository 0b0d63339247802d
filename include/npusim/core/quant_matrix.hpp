// A weight matrix [N, K] of any float dtype packed into rows of q8_0/q4_0 blocks (core/quant.hpp):
// what every target that reads packed weights does at load, and what a program stores. The rows
// are independent; `for_rows(n, fn)` decides how they are spread (a thread pool, or one call
// fn(0, n)).
#pragma once

#include <algorithm>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "npusim/core/quant.hpp"
#include "npusim/core/shape.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::quant {

using ForRows = std::function<void(std::int64_t n, const std::function<void(std::int64_t lo, std::int64_t hi)>& fn)>;

// Runs fn over [0, n) in one call.
inline void serial_rows(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) { fn(0, n); }

// Runs fn over [0, n) on up to hardware_concurrency() threads of its own, in chunks of at least 64
// rows (for targets without a thread pool of their own); the first exception is rethrown here.
inline void threaded_rows(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const auto hw = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t t = std::clamp<std::int64_t>(n / 64, 1, hw);
  if (t <= 1) return fn(0, n);
  std::exception_ptr err;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (std::int64_t i = 0; i < t; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(n * i / t, n * (i + 1) / t);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!err) err = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  if (err) std::rethrow_exception(err);
}

// The stored shape of a [N, K] weight packed in f: u8 [N, row_bytes(f, K)].
inline Shape packed_shape(BlockFormat f, const Shape& w) { return {w.at(0), static_cast<std::int64_t>(row_bytes(f, w.at(1)))}; }

// A bound weight that is rows of blocks (weights::BoundWeights) rather than values: u8 where its
// IR dtype is a float.
inline bool is_packed(const Tensor& bound, DType ir_dtype) { return bound.dtype() == DType::u8 && is_floating(ir_dtype); }

// Does `rows` hold the rows of blocks of a [N, K] weight `w` in f? (What a target checks of a
// weight bound packed, quant::is_packed, against its node's weight_format.)
inline bool holds_rows(BlockFormat f, const Tensor& rows, const Shape& w) {
  return w.size() == 2 && rows.dtype() == DType::u8 && rows.shape() == packed_shape(f, w);
}

// Packs the rank-2 float tensor w into w.shape()[0] * row_bytes(f, K) bytes at out. A value that
// cannot be packed (not finite, a scale beyond f16) is an error naming its row and index.
inline void pack_matrix(BlockFormat f, const Tensor& w, std::byte* out, const ForRows& for_rows = serial_rows) {
  if (w.shape().size() != 2 || !is_floating(w.dtype()))
    throw Error(ErrorCode::weights, "only a 2-D float tensor can be packed into blocks",
                {.expected = "[N, K] f32/f16/bf16", .found = npusim::to_string(w.shape()) + " " + std::string(dtype_name(w.dtype()))});
  const std::int64_t N = w.shape()[0], K = w.shape()[1];
  const std::size_t rb = row_bytes(f, K), es = dtype_size(w.dtype());
  const auto* src = static_cast<const std::byte*>(w.raw());
  for_rows(N, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<float> row(static_cast<std::size_t>(K));
    for (std::int64_t n = lo; n < hi; ++n) {
      convert_elements(w.dtype(), src + static_cast<std::size_t>(n * K) * es, DType::f32, row.data(), K);
      try {
        quantize_row(f, row, out + static_cast<std::size_t>(n) * rb);
      } catch (const Error& err) {
        throw Error(err.code(), err.message() + " in row " + std::to_string(n), err.context());
      }
    }
  });
}

}  // namespace npusim::inline NPUSIM_ABI::quant
