// Fused attention: softmax(q k^T * scale + mask) v, one query row (and key split) per work-group,
// keys in chunks with an online softmax (any key count), grouped-query heads mapped h -> h / group
// (K/V never expanded). Keys whose additive mask is <= -65504 (the f16 lowest, bf16 lowest, -inf:
// exp() of them is exactly 0 in float32 next to any unmasked key) are skipped when the row has an
// unmasked key, so a decode step reads only the filled part of its KV cache.
// Built with -DTK=<code> (K and V storage type) and -DAT_SPLIT=0 when no row is split over
// work-groups: the merge of a row's splits (finish_split) is then left out, which PoCL's code
// generation for a CPU device would otherwise pay seconds for (and again in the persistent program).
#ifndef TK
#define TK DT_F32
#endif
//@pk+
#ifndef AT_SPLIT
#define AT_SPLIT 1
#endif
#define AT_WG 128
#define AT_CH 1024
#define AT_DMAX 256

inline float wg_reduce(float v, __local float* red, int is_max) { return group_reduce(v, red, AT_WG, is_max); }

// A device-scope fence: NVIDIA's PTX acquire/release (which also orders the L1), else OpenCL 1.2's.
#ifdef NV_WARP
#define AT_FENCE() asm volatile("fence.acq_rel.gpu;" ::: "memory")
#else
#define AT_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#endif

// Merges the key splits of one query row (attention() below): out = sum_s o_s * exp(m_s - M) /
// sum_s l_s * exp(m_s - M), the splits in order. Other work-groups wrote them: read past the L1
// (volatile), the splits' maxima and sums one per item (up to AT_WG splits at a time) and each
// output value's terms 8 splits at a time, so that the loads overlap. sc: 2 * AT_WG local floats.
#if AT_SPLIT
inline void combine_row(__global const float* pp0, int nsplit, long Dv, __global uchar* O, int ot, long row, __local float* sc) {
  volatile __global const float* pp = pp0;
  const int lid = get_local_id(0);
  const long stride = Dv + 2;
  float M = -INFINITY;
  for (int s0 = 0; s0 < nsplit; s0 += AT_WG) M = fmax(M, s0 + lid < nsplit ? pp[(s0 + lid) * stride] : -INFINITY);
  M = group_reduce(M, sc, AT_WG, 1);
  float l = 0.0f, o0 = 0.0f, o1 = 0.0f;
  for (int s0 = 0; s0 < nsplit; s0 += AT_WG) {
    // Each split's weight exp(m_s - M) (0 for an empty split) and weighted sum, in local memory.
    const int s = s0 + lid;
    const float m = s < nsplit ? pp[s * stride] : -INFINITY;
    const float f = m == -INFINITY ? 0.0f : exp(m - M);
    sc[lid] = f;
    sc[AT_WG + lid] = f != 0.0f ? pp[s * stride + 1] * f : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int n = min(AT_WG, nsplit - s0);
    for (int t = 0; t < n; ++t) l += sc[AT_WG + t];
    for (int t0 = 0; t0 < n; t0 += 8) {
      float v0[8], v1[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int t = t0 + u;
        volatile __global const float* q = pp + (s0 + t) * stride + 2;
        const int live = t < n && sc[t] != 0.0f;
        v0[u] = live && lid < Dv ? q[lid] : 0.0f;
        v1[u] = live && lid + AT_WG < Dv ? q[lid + AT_WG] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (t0 + u < n && sc[t0 + u] != 0.0f) o0 += v0[u] * sc[t0 + u], o1 += v1[u] * sc[t0 + u];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < Dv) stf(O, ot, row * Dv + lid, o0 / l);
  if (lid + AT_WG < Dv) stf(O, ot, row * Dv + lid + AT_WG, o1 / l);
}
#endif

// Does query row i have an unmasked key (additive mask above -65504)? Then masked keys are skipped
// (else every key counts, as in PyTorch). The scan stops at the first block of keys with an unmasked
// one (a decode step's or a causal row's come first), so a long, mostly empty KV cache costs one
// block here, not all of it.
inline int row_has_unmasked(__global const uchar* Mk, int mt, long mbase, long mss, long S, int causal, long i, __local float* red) {
  const int lid = get_local_id(0);
  int any = 0;
  for (long j0 = 0; j0 < S && !any; j0 += AT_WG) {
    const long j = j0 + lid;
    any = group_reduce((j < S && !(causal && j > i) && ldf(Mk, mt, mbase + j * mss) > -65504.0f) ? 1.0f : 0.0f, red, AT_WG, 1) > 0.0f;
  }
  return any;
}

// A split's result: with one split, the normalised output; with several (decode), its (max, sum,
// unnormalised output) in `part`, and the row's last split to finish merges the row's splits (no
// second launch): each split publishes its partials before it counts itself in counts[row], the
// last reads them after its count and sets the count back to 0 for the next run.
// red: AT_WG local floats; sc: 2 * AT_WG.
// orow: the row's place in O (row itself, or its [B, L, H] place when the output is transposed).
inline void finish_split(float mrun, float lrun, float o0, float o1, long Dv, int nsplit, long wg, long row, long orow, __global float* part,
                         __global int* counts, __global uchar* O, int ot, __local float* red, __local float* sc) {
  const int lid = get_local_id(0);
  if (nsplit == 1) {
    if (lid < Dv) stf(O, ot, orow * Dv + lid, o0 / lrun);
    if (lid + AT_WG < Dv) stf(O, ot, orow * Dv + lid + AT_WG, o1 / lrun);
    return;
  }
#if AT_SPLIT
  __global float* pp = part + wg * (Dv + 2);
  if (lid == 0) pp[0] = mrun, pp[1] = lrun;
  if (lid < Dv) pp[2 + lid] = o0;
  if (lid + AT_WG < Dv) pp[2 + lid + AT_WG] = o1;
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    AT_FENCE();
    const int done = atomic_inc(counts + row);
    red[0] = done == nsplit - 1 ? 1.0f : 0.0f;
    if (done == nsplit - 1) counts[row] = 0;
    AT_FENCE();
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (red[0] != 0.0f) combine_row(part + row * nsplit * (Dv + 2), nsplit, Dv, O, ot, orow, sc);
#endif
}

// d: [B, Hq, L, S, D, Dv, group, ms_b, ms_h, ms_l, ms_s, out_t]; mask_kind: 0 none, 1 additive float, 2 bool (true = keep);
// out_t: the output is [B, L, Hq, Dv] (fusion::AttentionTransposed), else [B, Hq, L, Dv].
// Work-group (row, split) handles keys [split * chunk, (split + 1) * chunk). With one split it writes
// the normalised output; with several (few query rows: decode) it writes (max, sum, unnormalised
// output) to `part`, and the row's last split to finish merges them (counts: one counter per row).
PK_GROUP_FN(attention, AT_WG)
    __global const uchar* qb, ulong qo, int qt, __global const uchar* kb, ulong ko, __global const uchar* vb, ulong vo,
    __global const uchar* mb, ulong mo, int mt, int mask_kind, __global uchar* ob, ulong oo, int ot, PK_CONST const long* d,
    float scale, int causal, int vec, int nsplit, long chunk, __global float* part, __global int* counts) {
  PK_LOCAL(float, qs, AT_DMAX);
  PK_LOCAL(float, p, AT_CH);
  PK_LOCAL(float, red, AT_WG);
  const int lid = get_local_id(0);
  const long B = d[0], Hq = d[1], L = d[2], S = d[3], D = d[4], Dv = d[5], group = d[6];
  const long wg = PK_GROUP_ID, split = wg % nsplit, row = wg / nsplit;
  const long i = row % L, h = (row / L) % Hq, b = row / (L * Hq);
  const long Hkv = Hq / group, kvh = h / group;
  const long jbeg = split * chunk, jend = min(S, jbeg + chunk);
  __global const uchar* Q = CGPTR(qb, qo);
  __global const uchar* Kp = CGPTR(kb, ko);
  __global const uchar* Vp = CGPTR(vb, vo);
  __global const uchar* Mk = CGPTR(mb, mo);
  const long kbase = (b * Hkv + kvh) * S * D, vbase = (b * Hkv + kvh) * S * Dv;
  const long mbase = b * d[7] + h * d[8] + i * d[9], mss = d[10];
  for (long e = lid; e < D; e += AT_WG) qs[e] = ldf(Q, qt, row * D + e);
  const int skip = mask_kind == 1 && row_has_unmasked(Mk, mt, mbase, mss, S, causal, i, red);
  barrier(CLK_LOCAL_MEM_FENCE);
  float o0 = 0.0f, o1 = 0.0f, mrun = -INFINITY, lrun = 0.0f;
  for (long j0 = jbeg; j0 < jend; j0 += AT_CH) {
    const int cnt = (int)min((long)AT_CH, jend - j0);
    float tmax = -INFINITY, lastv = -1.0f;  // lastv: the last key of the block that counts
    for (int jj = lid; jj < cnt; jj += AT_WG) {
      const long j = j0 + jj;
      float mv = 0.0f, s = -INFINITY;
      int hard = causal && j > i, soft = 0;
      if (mask_kind == 1) {
        mv = ldf(Mk, mt, mbase + j * mss);
        soft = mv <= -65504.0f;
      } else if (mask_kind == 2) {
        hard = hard || Mk[mbase + j * mss] == 0;
      }
      if (!hard && !(soft && skip)) {
        float acc = 0.0f;
        const long kr = kbase + j * D;
        if (vec) {
          float kv[8];
          for (long e = 0; e < D; e += 8) {
            ld8(TK, Kp, kr + e, kv);
            for (int t = 0; t < 8; ++t) acc = fma(qs[e + t], kv[t], acc);
          }
        } else {
          for (long e = 0; e < D; ++e) acc = fma(qs[e], LD_T(TK, Kp, kr + e), acc);
        }
        s = acc * scale + mv;
      }
      p[jj] = s;
      tmax = fmax(tmax, s);
      if (s > -INFINITY) lastv = (float)jj;
    }
    const float cmax = wg_reduce(tmax, red, 1);
    const int vcnt = (int)wg_reduce(lastv, red, 1) + 1;  // V rows past it have weight 0: not read
    const float new_m = fmax(mrun, cmax);
    if (new_m == -INFINITY) continue;  // uniform: nothing unmasked yet
    const float alpha = exp(mrun - new_m);
    float tsum = 0.0f;
    for (int jj = lid; jj < cnt; jj += AT_WG) {
      const float e = exp(p[jj] - new_m);
      p[jj] = e;
      tsum += e;
    }
    const float csum = wg_reduce(tsum, red, 0);  // its barriers also publish p[]
    lrun = lrun * alpha + csum;
    o0 *= alpha, o1 *= alpha;
    const long vr0 = vbase + j0 * Dv;
    // No branch on the weight, so the loads of consecutive keys overlap; a masked key (weight 0)
    // contributes 0 even when its cache row holds garbage.
    if (lid < Dv) {
#pragma unroll 8
      for (int jj = 0; jj < vcnt; ++jj) {
        const float w = p[jj], v = LD_T(TK, Vp, vr0 + jj * Dv + lid);
        o0 = fma(w, w != 0.0f ? v : 0.0f, o0);
      }
    }
    if (lid + AT_WG < Dv) {
#pragma unroll 8
      for (int jj = 0; jj < vcnt; ++jj) {
        const float w = p[jj], v = LD_T(TK, Vp, vr0 + jj * Dv + lid + AT_WG);
        o1 = fma(w, w != 0.0f ? v : 0.0f, o1);
      }
    }
    mrun = new_m;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  finish_split(mrun, lrun, o0, o1, Dv, nsplit, wg, row, d[11] ? (b * L + i) * Hq + h : row, part, counts, GPTR(ob, oo), ot, red, p);
}

// Decode attention: attention()'s result (splits, masks, skipping, merging alike) for heads of
// D = Dv = 8 * T values (T a power of two, 4..16) in half-type K/V (TK bf16 or f16, rows 16-byte
// aligned). A team of T items holds a key: each item 8 of its values, K and V read as one 16-byte
// word each. AT_WG / T keys per pass and AD_U passes per round: a round requests its keys' mask
// values, then all their K and V words at once (a latency-bound loop in attention()), the scores
// summed over each team by shuffles (NV_WARP) or local memory.
#define AD_U 8
// dot[u] summed over each team of T items, for the AD_U keys of a round: shuffles on NVIDIA;
// elsewhere through `scratch` (AD_U * AT_WG floats) with two barriers (a barrier per sum in an
// unrolled loop makes PoCL's compiler take minutes).
inline void team_sums(float* dot, int T, __local float* scratch) {
#ifdef NV_WARP
  for (int u = 0; u < AD_U; ++u)
    for (int o = T / 2; o > 0; o >>= 1) {
      float t;
      asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(t) : "f"(dot[u]), "r"(o));
      dot[u] += t;
    }
#else
  const int lid = get_local_id(0), base = lid - lid % T;
  for (int u = 0; u < AD_U; ++u) scratch[u * AT_WG + lid] = dot[u];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int u = 0; u < AD_U; ++u) {
    float r = 0.0f;
    for (int t = 0; t < T; ++t) r += scratch[u * AT_WG + base + t];
    dot[u] = r;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
}
// The 8 bf16 (t == DT_BF16) or f16 values of a 16-byte word as floats.
inline void kv8(int t, uint4 u, float* o) {
  if (t == DT_BF16) {
    bf16x8(u, o);
    return;
  }
  const float8 v = vload_half8(0, (__private const half*)&u);
  o[0] = v.s0; o[1] = v.s1; o[2] = v.s2; o[3] = v.s3; o[4] = v.s4; o[5] = v.s5; o[6] = v.s6; o[7] = v.s7;
}
PK_GROUP_FN(attention_dec, AT_WG)
    __global const uchar* qb, ulong qo, int qt, __global const uchar* kb, ulong ko, __global const uchar* vb, ulong vo,
    __global const uchar* mb, ulong mo, int mt, int mask_kind, __global uchar* ob, ulong oo, int ot, PK_CONST const long* d,
    float scale, int causal, int T, int nsplit, long chunk, __global float* part, __global int* counts) {
  PK_LOCAL(float, red, AT_WG);
  PK_LOCAL(float, acc, AT_WG * 8);
  const int lid = get_local_id(0), tl = lid % T, team = lid / T, P = AT_WG / T;
  const long B = d[0], Hq = d[1], L = d[2], S = d[3], D = d[4], group = d[6];
  const long wg = PK_GROUP_ID, split = wg % nsplit, row = wg / nsplit;
  const long i = row % L, h = (row / L) % Hq, b = row / (L * Hq);
  const long Hkv = Hq / group, kvh = h / group;
  const long jbeg = split * chunk, jend = min(S, jbeg + chunk);
  __global const uchar* Kp = CGPTR(kb, ko);
  __global const uchar* Vp = CGPTR(vb, vo);
  __global const uchar* Mk = CGPTR(mb, mo);
  const long kvbase = (b * Hkv + kvh) * S * D;
  const long mbase = b * d[7] + h * d[8] + i * d[9], mss = d[10];
  float q[8];
  ld8(qt, CGPTR(qb, qo), row * D + tl * 8, q);
  const int skip = mask_kind == 1 && row_has_unmasked(Mk, mt, mbase, mss, S, causal, i, red);
  float o[8], mrun = -INFINITY, lrun = 0.0f;
  for (int e = 0; e < 8; ++e) o[e] = 0.0f;
  for (long j0 = jbeg; j0 < jend; j0 += P * AD_U) {
    float mv[AD_U], sc[AD_U];
    int ok[AD_U];
    uint4 kw[AD_U], vw[AD_U];
#pragma unroll
    for (int u = 0; u < AD_U; ++u) {
      const long j = j0 + team + u * P;
      int hard = j >= jend || (causal && j > i), soft = 0;
      mv[u] = 0.0f;
      if (!hard && mask_kind == 1) {
        mv[u] = ldf(Mk, mt, mbase + j * mss);
        soft = mv[u] <= -65504.0f;
      } else if (!hard && mask_kind == 2) {
        hard = Mk[mbase + j * mss] == 0;
      }
      ok[u] = !hard && !(soft && skip);
    }
#pragma unroll
    for (int u = 0; u < AD_U; ++u) {
      const long at = (kvbase + (j0 + team + u * P) * D + tl * 8) * 2;
      kw[u] = ok[u] ? *(__global const uint4*)(Kp + at) : (uint4)(0u);
      vw[u] = ok[u] ? *(__global const uint4*)(Vp + at) : (uint4)(0u);
    }
    float tmax = -INFINITY, dot[AD_U];
#pragma unroll
    for (int u = 0; u < AD_U; ++u) {
      float kf[8];
      kv8(TK, kw[u], kf);
      dot[u] = 0.0f;
      for (int e = 0; e < 8; ++e) dot[u] = fma(q[e], kf[e], dot[u]);
    }
    team_sums(dot, T, acc);
#pragma unroll
    for (int u = 0; u < AD_U; ++u) {
      sc[u] = ok[u] ? dot[u] * scale + mv[u] : -INFINITY;
      tmax = fmax(tmax, sc[u]);
    }
    const float new_m = fmax(mrun, group_reduce(tmax, red, AT_WG, 1));
    if (new_m == -INFINITY) continue;  // uniform: nothing unmasked yet
    const float alpha = exp(mrun - new_m);
    float tsum = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] *= alpha;
#pragma unroll
    for (int u = 0; u < AD_U; ++u) {
      const float pw = exp(sc[u] - new_m);
      tsum += pw;
      if (pw != 0.0f) {  // a masked key's V row may hold garbage
        float vf[8];
        kv8(TK, vw[u], vf);
        for (int e = 0; e < 8; ++e) o[e] = fma(pw, vf[e], o[e]);
      }
    }
    lrun = lrun * alpha + group_reduce(tl == 0 ? tsum : 0.0f, red, AT_WG, 0);
    mrun = new_m;
  }
  // The teams' outputs summed per value (team order), then as attention() from here.
  for (int e = 0; e < 8; ++e) acc[team * D + tl * 8 + e] = o[e];
  barrier(CLK_LOCAL_MEM_FENCE);
  float o0 = 0.0f;
  if (lid < D)
    for (int t = 0; t < P; ++t) o0 += acc[t * D + lid];
  finish_split(mrun, lrun, o0, 0.0f, D, nsplit, wg, row, d[11] ? (b * L + i) * Hq + h : row, part, counts, GPTR(ob, oo), ot, red, acc);
}

//@pk-
