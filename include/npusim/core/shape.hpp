// Shapes are plain vectors of int64 (static shapes only); helpers here check every size and product
// so that a hostile file cannot make us overflow or allocate absurd amounts.
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI {

using Shape = std::vector<std::int64_t>;
using Strides = std::vector<std::int64_t>;

inline std::string to_string(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Element count, with an error (never UB) on negative sizes or int64 overflow.
inline std::int64_t checked_numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    if (d < 0) throw Error(ErrorCode::shape, "negative dimension in shape " + to_string(s));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
      throw Error(ErrorCode::resource, "element count of shape " + to_string(s) + " overflows int64");
    n *= d;
  }
  return n;
}
inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  return n;
}

inline Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// A reduction's output strides over its input's dimensions: those of the output kept at full rank
// (reduced dimensions of size 1), 0 on the reduced dimensions (red[i]), so that walking the input
// with them gives each element's output offset.
inline Strides reduced_out_strides(const Shape& in, const std::vector<bool>& red) {
  Shape full = in;
  for (std::size_t i = 0; i < red.size(); ++i)
    if (red[i]) full[i] = 1;
  Strides st = contiguous_strides(full);
  for (std::size_t i = 0; i < red.size(); ++i)
    if (red[i]) st[i] = 0;
  return st;
}

// Wraps a possibly negative dim into [0, rank); rank 0 accepts -1 and 0 like PyTorch.
inline std::int64_t normalize_dim(std::int64_t dim, std::int64_t rank, const char* what = "dim") {
  std::int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    throw Error(ErrorCode::attr, std::string(what) + " " + std::to_string(dim) + " out of range",
                {.expected = "[" + std::to_string(-r) + ", " + std::to_string(r - 1) + "]", .found = std::to_string(dim)});
  return dim < 0 ? dim + r : dim;
}

// NumPy/PyTorch broadcasting of two shapes.
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(ErrorCode::shape, "shapes " + to_string(a) + " and " + to_string(b) + " do not broadcast");
    r[i] = da == 1 ? db : da;
  }
  return r;
}

// Strides that read a tensor of shape `s` (contiguous) as if broadcast to `target` (0 where expanded).
inline Strides broadcast_strides(const Shape& s, const Shape& target) {
  Strides st(target.size(), 0);
  Strides cs = contiguous_strides(s);
  std::size_t off = target.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) st[off + i] = (s[i] == 1 && target[off + i] != 1) ? 0 : cs[i];
  return st;
}

}  // namespace npusim::inline NPUSIM_ABI
