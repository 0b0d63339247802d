// Definitions for npusim/target/cpu/kernels/moe.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/moe.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

namespace detail {
// Element i of a tensor of any storage type, as a double (topk and index_add take integers too).
inline double read_value(const std::byte* p, DType t, std::int64_t i) {
  return visit_dtype(t, [&]<class T>() { return convert_scalar<double>(reinterpret_cast<const T*>(p)[i]); });
}
inline void write_value(std::byte* p, DType t, std::int64_t i, double v) {
  visit_dtype(t, [&]<class T>() { reinterpret_cast<T*>(p)[i] = convert_scalar<T>(v); });
}

// dot(w[0..n), x[0..n)) with w in storage S, x in float32.
template <class S>
float dot(S tag, const typename S::T* w, const float* x, std::int64_t n) {
  fbatch acc(0.0f);
  std::int64_t i = 0;
  for (; i + static_cast<std::int64_t>(W) <= n; i += W) acc = xsimd::fma(load(tag, w + i), fbatch::load_unaligned(x + i), acc);
  float s = xsimd::hadd(acc);
  for (; i < n; ++i) s += to_f32(tag, w[i]) * x[i];
  return s;
}
}  // namespace detail

NPUSIM_FUNC Fn bind_topk(Ctx& c, const ops::TopK::Attrs& a) {
  const ir::TensorId x = c.in(0), yv = c.out(0), yi = c.out(1);
  const Shape& s = c.shape(x);
  const std::size_t d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t n = s[d], k = *a.k;
  const bool largest = a.largest;
  const std::byte* px = c.ptr(x);
  std::byte *pv = c.ptr(yv), *pi = c.ptr(yi);
  const DType dx = c.storage(x), dv = c.storage(yv), di = c.storage(yi);
  return [=] {
    std::vector<double> row(static_cast<std::size_t>(n));
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t e = 0; e < inner; ++e) {
        for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = detail::read_value(px, dx, (o * n + j) * inner + e);
        std::iota(order.begin(), order.end(), std::int64_t{0});
        // As the reference (ref::topk_before): NaN first, then by value, ties by index.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int64_t p, std::int64_t q) {
          const double a1 = row[static_cast<std::size_t>(p)], b1 = row[static_cast<std::size_t>(q)];
          const bool na = std::isnan(a1), nb = std::isnan(b1);
          if (na || nb) return na && nb ? p < q : (largest ? na : nb);
          if (a1 != b1) return largest ? a1 > b1 : a1 < b1;
          return p < q;
        });
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t at = (o * k + j) * inner + e, from = order[static_cast<std::size_t>(j)];
          detail::write_value(pv, dv, at, row[static_cast<std::size_t>(from)]);
          detail::write_value(pi, di, at, static_cast<double>(from));
        }
      }
  };
}

NPUSIM_FUNC Fn bind_index_add(Ctx& c, const ops::IndexAdd::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId self = n.inputs[0], idx = n.inputs[1], src = n.inputs[2], y = n.outputs[0];
  const Shape& s = c.shape(self);
  const std::size_t d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t len = s[d], count = c.numel(idx), total = c.numel(self);
  const std::byte *ps = c.ptr(self), *pi = c.ptr(idx), *pr = c.ptr(src);
  std::byte* py = c.ptr(y);
  const DType ds = c.storage(self), di = c.storage(idx), dr = c.storage(src), dy = c.storage(y);
  const double alpha = a.alpha.value;
  return [=] {
    // Accumulated in double, rounded to y's storage once per element written.
    std::vector<double> acc(static_cast<std::size_t>(total));
    for (std::int64_t i = 0; i < total; ++i) acc[static_cast<std::size_t>(i)] = detail::read_value(ps, ds, i);
    for (std::int64_t k = 0; k < count; ++k) {
      std::int64_t p = read_index(pi, di, k);
      if (p < -len || p >= len) index_error("index_add", p, len);
      if (p < 0) p += len;
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t e = 0; e < inner; ++e)
          acc[static_cast<std::size_t>((o * len + p) * inner + e)] += alpha * detail::read_value(pr, dr, (o * count + k) * inner + e);
    }
    for (std::int64_t i = 0; i < total; ++i) detail::write_value(py, dy, i, acc[static_cast<std::size_t>(i)]);
  };
}

NPUSIM_FUNC Fn bind_moe(Ctx& c) {
  const ir::TensorId x = c.in(0), tok = c.in(1), ids = c.in(2), w = c.in(3), gu = c.in(4), dn = c.in(5), y = c.out();
  const std::int64_t T = c.shape(x)[0], H = c.shape(x)[1], S = c.numel(tok), E = c.shape(gu)[0], I = c.shape(dn)[2];
  const std::byte *px = c.ptr(x), *pt = c.ptr(tok), *pids = c.ptr(ids), *pw = c.ptr(w), *pgu = c.ptr(gu), *pdn = c.ptr(dn);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dt = c.storage(tok), dids = c.storage(ids), dw = c.storage(w), dgu = c.storage(gu), ddn = c.storage(dn), dy = c.storage(y);
  if (dgu != ddn) c.unsupported("moe expert weights of two storage types");
  const std::size_t es = dtype_size(dgu);
  return [=] {
    // Samples grouped by expert (stable: in sample order within an expert).
    std::vector<std::int64_t> tok_of(static_cast<std::size_t>(S)), exp_of(static_cast<std::size_t>(S)), order(static_cast<std::size_t>(S));
    std::vector<float> weight(static_cast<std::size_t>(S));
    for (std::int64_t s = 0; s < S; ++s) {
      std::int64_t t = read_index(pt, dt, s), e = read_index(pids, dids, s);
      if (t < -T || t >= T) index_error("index_add", t, T);
      if (e < -E || e >= E) index_error("moe expert", e, E);
      tok_of[static_cast<std::size_t>(s)] = t < 0 ? t + T : t;
      exp_of[static_cast<std::size_t>(s)] = e < 0 ? e + E : e;
      weight[static_cast<std::size_t>(s)] = static_cast<float>(detail::read_value(pw, dw, s));
    }
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return exp_of[static_cast<std::size_t>(a)] < exp_of[static_cast<std::size_t>(b)]; });
    std::vector<float> xs(static_cast<std::size_t>(S * H)), h(static_cast<std::size_t>(S * I)), o(static_cast<std::size_t>(S * H));
    for (std::int64_t s = 0; s < S; ++s)
      load_row(dx, px + static_cast<std::size_t>(tok_of[static_cast<std::size_t>(s)] * H) * dtype_size(dx), xs.data() + s * H, H);
    visit_float_storage(dgu, [&](auto tag) {
      using T = typename decltype(tag)::T;
      for (std::size_t g0 = 0; g0 < order.size();) {
        const std::int64_t e = exp_of[static_cast<std::size_t>(order[g0])];
        std::size_t g1 = g0;
        while (g1 < order.size() && exp_of[static_cast<std::size_t>(order[g1])] == e) ++g1;
        const T* wgu = reinterpret_cast<const T*>(pgu + static_cast<std::size_t>(e * 2 * I * H) * es);
        const T* wdn = reinterpret_cast<const T*>(pdn + static_cast<std::size_t>(e * H * I) * es);
        // gate/up rows r and I + r against every sample of the group.
        parallel_for(I, 16, [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r)
            for (std::size_t gi = g0; gi < g1; ++gi) {
              const std::int64_t s = order[gi];
              const float g = detail::dot(tag, wgu + r * H, xs.data() + s * H, H), u = detail::dot(tag, wgu + (I + r) * H, xs.data() + s * H, H);
              h[static_cast<std::size_t>(s * I + r)] = g / (1.0f + std::exp(-g)) * u;
            }
        });
        parallel_for(H, 16, [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r)
            for (std::size_t gi = g0; gi < g1; ++gi) {
              const std::int64_t s = order[gi];
              o[static_cast<std::size_t>(s * H + r)] = detail::dot(tag, wdn + r * I, h.data() + s * I, I) * weight[static_cast<std::size_t>(s)];
            }
        });
        g0 = g1;
      }
    });
    // index_add into zeros, in sample order.
    std::vector<float> acc(static_cast<std::size_t>(T * H), 0.0f);
    for (std::int64_t s = 0; s < S; ++s) {
      float* dst = acc.data() + tok_of[static_cast<std::size_t>(s)] * H;
      const float* src = o.data() + s * H;
      for (std::int64_t r = 0; r < H; ++r) dst[r] += src[r];
    }
    store_row(dy, acc.data(), py, T * H);
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
