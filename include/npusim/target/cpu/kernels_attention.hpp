// Attention: softmax(q k^T * scale + mask) v for every (batch, head, query), with grouped-query
// heads reading their shared K/V directly and an online softmax. Keys the mask removes (-inf or the
// dtype's lowest value, HF's convention for "not yet filled") are skipped without reading K or V,
// so a decode step's cost follows the number of filled cache positions, not the cache size.
#pragma once

#include <cmath>
#include <limits>

#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/kernels_nn.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

inline float dot(const float* a, const float* b, std::int64_t n) {
  fbatch acc(0.f);
  std::int64_t i = 0;
  for (; i + static_cast<std::int64_t>(W) <= n; i += W) acc = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc);
  float s = xsimd::hadd(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

struct AttentionArgs {
  ir::TensorId q, k, v;
  std::optional<ir::TensorId> mask;
  float scale;
  bool causal;
  ir::TensorId y;
};

inline Fn bind_attention(Ctx& c, const AttentionArgs& a) {
  const Shape &qs = c.shape(a.q), &ks = c.shape(a.k), &vs = c.shape(a.v);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) c.unsupported("attention expects 4-D q, k, v");
  const std::int64_t B = qs[0], H = qs[1], L = qs[2], D = qs[3], Hk = ks[1], S = ks[2], Dv = vs[3];
  if (H % Hk) c.unsupported("attention head count not a multiple of the KV head count");
  const std::int64_t group = H / Hk;
  const std::byte *pq = c.ptr(a.q), *pk = c.ptr(a.k), *pv = c.ptr(a.v);
  const std::byte* pm = a.mask ? c.ptr(*a.mask) : nullptr;
  const DType dq = c.storage(a.q), dk = c.storage(a.k), dv = c.storage(a.v), dm = a.mask ? c.storage(*a.mask) : DType::f32;
  const Shape scores{B, H, L, S};
  const Strides mst = a.mask ? broadcast_strides(c.shape(*a.mask), scores) : Strides{};
  std::byte* py = c.ptr(a.y);
  const DType dy = c.storage(a.y);
  const float scale = a.scale;
  const bool causal = a.causal;
  const std::size_t ek = dtype_size(dk), ev = dtype_size(dv);
  return [=] {
    parallel_for(B * H * L, 1, [&](std::int64_t r0, std::int64_t r1) {
      float* qrow = row_buffer(0, D);
      float* krow = row_buffer(1, D);
      float* vrow = row_buffer(2, Dv);
      float* acc = row_buffer(3, Dv);
      float* mrow = row_buffer(4, S);
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t i = r % L, h = (r / L) % H, b = r / (L * H), hk = h / group;
        load_row(dq, pq + static_cast<std::size_t>(r * D) * dtype_size(dq), qrow, D);
        if (pm) {
          const std::int64_t off = b * mst[0] + h * mst[1] + i * mst[2];
          if (mst[3] == 1) load_row(dm, pm + static_cast<std::size_t>(off) * dtype_size(dm), mrow, S);
          else
            visit_dtype(dm, [&]<class T>() {
              for (std::int64_t j = 0; j < S; ++j) mrow[j] = convert_scalar<float>(reinterpret_cast<const T*>(pm)[off + j * mst[3]]);
            });
        }
        float m = -std::numeric_limits<float>::infinity(), l = 0.f;
        std::fill(acc, acc + Dv, 0.f);
        const std::int64_t kv = (b * Hk + hk) * S;
        const std::int64_t jmax = causal ? std::min(S, i + 1) : S;  // torch: tril(ones(L, S)), top-left aligned
        for (std::int64_t j = 0; j < jmax; ++j) {
          float bias = 0.f;
          if (pm) {
            // Masked out (false in a bool mask; -inf or the dtype's lowest in an additive one):
            // K and V are not read.
            if (dm == DType::boolean) {
              if (mrow[j] == 0.f) continue;
            } else {
              bias = mrow[j];
              if (!(bias > -1e30f)) continue;
            }
          }
          load_row(dk, pk + static_cast<std::size_t>((kv + j) * D) * ek, krow, D);
          const float s = dot(qrow, krow, D) * scale + bias;
          load_row(dv, pv + static_cast<std::size_t>((kv + j) * Dv) * ev, vrow, Dv);
          if (s > m) {
            const float corr = std::exp(m - s);
            l *= corr;
            for (std::int64_t e = 0; e < Dv; ++e) acc[e] *= corr;
            m = s;
          }
          const float p = std::exp(s - m);
          l += p;
          for (std::int64_t e = 0; e < Dv; ++e) acc[e] += p * vrow[e];
        }
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (std::int64_t e = 0; e < Dv; ++e) acc[e] *= inv;
        store_row(dy, acc, py + static_cast<std::size_t>(r * Dv) * dtype_size(dy), Dv);
      }
    });
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
