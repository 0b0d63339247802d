// Reference kernels of the mixture-of-experts ops (ops/moe.hpp): topk, zeros_like, index_add. Values
// are float32 (integers int64) as everywhere in the reference; each loop is the op's definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/kernels/misc.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ref {
// "a comes before b" in topk's order: NaN above every number (PyTorch's sort), then by value,
// equal values by index.
template <class T>
bool topk_before(T a, T b, std::int64_t ia, std::int64_t ib, bool largest) {
  const bool na = a != a, nb = b != b;  // NaN (integers never are)
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}
// The reference holds floats as f32 and integers as i64 (runtime_dtype).
template <class F>
decltype(auto) visit_f32_i64(DType t, F&& f) {
  if (t == DType::f32) return f.template operator()<float>();
  if (t == DType::i64) return f.template operator()<std::int64_t>();
  throw Error(ErrorCode::dtype, "reference kernel given a tensor that is neither float32 nor int64 (npusim bug)", {.found = std::string(dtype_name(t))});
}
}  // namespace ref

template <>
struct kernel<ops::TopK, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::TopK::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x(0);
    Tensor& vals = args.alloc(0);
    Tensor& idx = args.alloc(1);
    const Shape& s = x.shape();
    const auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const std::int64_t n = s[d], k = *a.k;
    std::vector<std::int64_t> order(ref::uidx(n));
    ref::visit_f32_i64(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* pv = vals.data<T>();
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
          auto at = [&](std::int64_t j) { return px[(o * n + j) * inner + i]; };
          std::iota(order.begin(), order.end(), std::int64_t{0});
          std::partial_sort(order.begin(), order.begin() + k, order.end(),
                            [&](std::int64_t p, std::int64_t q) { return ref::topk_before(at(p), at(q), p, q, a.largest); });
          for (std::int64_t j = 0; j < k; ++j) {
            pv[(o * k + j) * inner + i] = at(order[ref::uidx(j)]);
            idx.data<std::int64_t>()[(o * k + j) * inner + i] = order[ref::uidx(j)];
          }
        }
    });
  }
};

template <>
struct kernel<ops::ZerosLike, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::ZerosLike::Attrs&, ref::Args& args) { ref::fill(args.alloc(0), 0.0); }
};

template <>
struct kernel<ops::IndexAdd, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::IndexAdd::Attrs& a, ref::Args& args) {
    const Tensor& self = args.x(0);
    const Tensor& idx = args.x(1);
    const Tensor& src = args.x(2);
    Tensor y = self.clone();
    const Shape& s = self.shape();
    const auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const std::int64_t n = idx.numel();
    ref::visit_f32_i64(y.dtype(), [&]<class T>() {
      T* py = y.data<T>();
      const T* ps = src.data<T>();
      const T alpha = convert_scalar<T>(a.alpha.value);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t p = ref::checked_index(idx.data<std::int64_t>()[j], s[d], "index_add");
        for (std::int64_t o = 0; o < outer; ++o)
          for (std::int64_t i = 0; i < inner; ++i) py[(o * s[d] + p) * inner + i] += alpha * ps[(o * n + j) * inner + i];
      }
    });
    args.out[0] = y;
  }
};

}  // namespace npusim::inline NPUSIM_ABI
