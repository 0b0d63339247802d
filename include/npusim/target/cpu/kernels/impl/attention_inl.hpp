// Definitions for npusim/target/cpu/kernels/attention.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/attention.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_attention(Ctx& c, const AttentionArgs& a) {
  const Shape &qs = c.shape(a.q), &ks = c.shape(a.k), &vs = c.shape(a.v);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) c.unsupported("attention expects 4-D q, k, v");
  const std::int64_t B = qs[0], H = qs[1], L = qs[2], D = qs[3], Hk = ks[1], S = ks[2], Dv = vs[3];
  if (H % Hk) c.unsupported("attention head count not a multiple of the KV head count");
  const std::int64_t G = H / Hk;  // query heads per KV head: they share every K/V row read
  const std::byte *pq = c.ptr(a.q), *pk = c.ptr(a.k), *pv = c.ptr(a.v);
  const std::byte* pm = a.mask ? c.ptr(*a.mask) : nullptr;
  const DType dq = c.storage(a.q), dk = c.storage(a.k), dv = c.storage(a.v), dm = a.mask ? c.storage(*a.mask) : DType::f32;
  const Shape scores{B, H, L, S};
  const Strides mst = a.mask ? broadcast_strides(c.shape(*a.mask), scores) : Strides{};
  const bool mask_per_head = a.mask && mst[1] != 0;
  std::byte* py = c.ptr(a.y);
  const DType dy = c.storage(a.y);
  const float scale = a.scale;
  const bool causal = a.causal;
  const std::size_t ek = dtype_size(dk), ev = dtype_size(dv);
  const std::int64_t work = std::max<std::int64_t>(1, S * (D + Dv) * G);
  return [=] {
    parallel_for(B * Hk * L, std::max<std::int64_t>(1, (1 << 16) / work), [&](std::int64_t r0, std::int64_t r1) {
      float* q = row_buffer(0, G * D);
      float* krow = row_buffer(1, D);
      float* vrow = row_buffer(2, Dv);
      float* acc = row_buffer(3, G * Dv);
      float* mrow = row_buffer(4, S);
      float* m = row_buffer(5, G);
      float* l = row_buffer(6, G);
      float* bias = row_buffer(7, G * S);
      auto* keys = reinterpret_cast<std::int32_t*>(row_buffer(8, S));
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t i = r % L, hk = (r / L) % Hk, b = r / (L * Hk);
        for (std::int64_t g = 0; g < G; ++g)
          load_row(dq, pq + static_cast<std::size_t>((((b * H + hk * G + g) * L) + i) * D) * dtype_size(dq), q + g * D, D);
        // Valid keys (and their additive bias per head): masked keys are never read.
        std::int64_t nk = 0;
        const std::int64_t jmax = causal ? std::min(S, i + 1) : S;  // torch: tril(ones(L, S)), top-left aligned
        for (std::int64_t g = 0; g < (mask_per_head ? G : 1); ++g) {
          if (!pm) break;
          const std::int64_t off = b * mst[0] + (hk * G + g) * mst[1] + i * mst[2];
          if (mst[3] == 1 && dm != DType::boolean) load_row(dm, pm + static_cast<std::size_t>(off) * dtype_size(dm), mrow, S);
          else
            visit_dtype(dm, [&]<class T>() {
              for (std::int64_t j = 0; j < S; ++j) mrow[j] = convert_scalar<float>(reinterpret_cast<const T*>(pm)[off + j * mst[3]]);
            });
          if (dm == DType::boolean)
            for (std::int64_t j = 0; j < S; ++j) mrow[j] = mrow[j] != 0.f ? 0.f : -INFINITY;
          std::copy(mrow, mrow + S, bias + g * S);
        }
        for (std::int64_t j = 0; j < jmax; ++j) {
          bool any = !pm;
          for (std::int64_t g = 0; g < (mask_per_head ? G : 1) && !any; ++g) any = bias[g * S + j] > -1e30f;
          if (any) keys[nk++] = static_cast<std::int32_t>(j);
        }
        for (std::int64_t g = 0; g < G; ++g) m[g] = -INFINITY, l[g] = 0.f;
        std::fill(acc, acc + G * Dv, 0.f);
        const std::int64_t kv = (b * Hk + hk) * S;
        for (std::int64_t t = 0; t < nk; ++t) {
          const std::int64_t j = keys[t];
          load_row(dk, pk + static_cast<std::size_t>((kv + j) * D) * ek, krow, D);
          load_row(dv, pv + static_cast<std::size_t>((kv + j) * Dv) * ev, vrow, Dv);
          for (std::int64_t g = 0; g < G; ++g) {
            const float bj = pm ? bias[(mask_per_head ? g : 0) * S + j] : 0.f;
            if (!(bj > -1e30f)) continue;
            const float s = dot(q + g * D, krow, D) * scale + bj;
            float* ag = acc + g * Dv;
            if (s > m[g]) {
              const float corr = std::exp(m[g] - s);
              l[g] *= corr;
              for (std::int64_t e = 0; e < Dv; ++e) ag[e] *= corr;
              m[g] = s;
            }
            const float p = std::exp(s - m[g]);
            l[g] += p;
            std::int64_t e = 0;
            for (; e + static_cast<std::int64_t>(W) <= Dv; e += W) xsimd::fma(fbatch(p), fbatch::load_unaligned(vrow + e), fbatch::load_unaligned(ag + e)).store_unaligned(ag + e);
            for (; e < Dv; ++e) ag[e] += p * vrow[e];
          }
        }
        for (std::int64_t g = 0; g < G; ++g) {
          const float inv = l[g] > 0 ? 1.0f / l[g] : 0.0f;
          float* ag = acc + g * Dv;
          for (std::int64_t e = 0; e < Dv; ++e) ag[e] *= inv;
          store_row(dy, ag, py + static_cast<std::size_t>((((b * H + hk * G + g) * L) + i) * Dv) * dtype_size(dy), Dv);
        }
      }
    });
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
