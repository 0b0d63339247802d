// Comparing results with references: max-abs error, relative L2 error, cosine similarity, top-k
// (test and tool plumbing, not part of the installed library).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::harness {

struct Metrics {
  double max_abs = 0;
  double rel_l2 = 0;   // ||got - want|| / ||want|| over the finite pairs
  double cosine = 1;   // <got, want> / (|got| |want|)
  std::int64_t count = 0;      // elements compared: finite pairs, and non-finite values of the same class
  std::int64_t nonfinite = 0;  // elements whose class differs: NaN/Inf in `got` where `want` is finite, or the reverse, or another NaN/Inf
  bool compared() const { return count > 0; }
};

// Non-finite expected values are compared by class: NaN must be NaN, +Inf must be +Inf, -Inf must
// be -Inf (nothing is skipped, so an expected tensor of NaNs cannot pass an output of numbers). Any
// mismatch makes rel_l2 and max_abs infinite and the cosine 0. A comparison of zero elements
// compared nothing: count is 0 and callers treat it as a failure (check_outputs does).
inline Metrics compare(const Tensor& got, const Tensor& want) {
  if (got.numel() != want.numel())
    throw Error(ErrorCode::shape, "cannot compare tensors of different sizes", {.expected = to_string(want.shape()), .found = to_string(got.shape())});
  Tensor g = got.to(DType::f64), w = want.to(DType::f64);
  const double *pg = g.data<double>(), *pw = w.data<double>();
  Metrics m;
  double diff2 = 0, want2 = 0, got2 = 0, dot = 0;
  for (std::int64_t i = 0, n = got.numel(); i < n; ++i) {
    const bool fg = std::isfinite(pg[i]), fw = std::isfinite(pw[i]);
    if (!fg || !fw) {
      const bool same = !fg && !fw && (std::isnan(pg[i]) ? std::isnan(pw[i]) : (!std::isnan(pw[i]) && std::signbit(pg[i]) == std::signbit(pw[i])));
      if (same) ++m.count;
      else ++m.nonfinite;
      continue;
    }
    ++m.count;
    double d = pg[i] - pw[i];
    m.max_abs = std::max(m.max_abs, std::abs(d));
    diff2 += d * d, want2 += pw[i] * pw[i], got2 += pg[i] * pg[i], dot += pg[i] * pw[i];
  }
  m.rel_l2 = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  m.cosine = (got2 > 0 && want2 > 0) ? dot / std::sqrt(got2 * want2) : (got2 == want2 ? 1.0 : 0.0);
  if (m.nonfinite) m.rel_l2 = m.max_abs = INFINITY, m.cosine = 0;
  return m;
}

// Indices of the k largest values of a 1-D slice (ties broken by the lower index, like torch.topk
// on distinct values).
inline std::vector<std::int64_t> topk(std::span<const float> v, std::size_t k) {
  std::vector<std::int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, v.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](std::int64_t a, std::int64_t b) {
    float x = v[static_cast<std::size_t>(a)], y = v[static_cast<std::size_t>(b)];
    return x > y || (x == y && a < b);
  });
  idx.resize(k);
  return idx;
}

}  // namespace npusim::inline NPUSIM_ABI::harness
