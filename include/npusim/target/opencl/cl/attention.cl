// Fused attention: softmax(q k^T * scale + mask) v, one query row (and key split) per work-group,
// keys in chunks with an online softmax (any key count), grouped-query heads mapped h -> h / group
// (K/V never expanded). Keys whose additive mask is <= -65504 (the f16 lowest, bf16 lowest, -inf:
// exp() of them is exactly 0 in float32 next to any unmasked key) are skipped when the row has an
// unmasked key, so a decode step reads only the filled part of its KV cache.
// Built with -DTK=<code> (K and V storage type).
#ifndef TK
#define TK DT_F32
#endif
//@pk+
#define AT_WG 128
#define AT_CH 1024
#define AT_DMAX 256

inline float wg_reduce(float v, __local float* red, int is_max) {
  const int l = get_local_id(0);
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = AT_WG / 2; s > 0; s >>= 1) {
    if (l < s) red[l] = is_max ? fmax(red[l], red[l + s]) : red[l] + red[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// d: [B, Hq, L, S, D, Dv, group, ms_b, ms_h, ms_l, ms_s]; mask_kind: 0 none, 1 additive float, 2 bool (true = keep)
// Work-group (row, split) handles keys [split * chunk, (split + 1) * chunk). With one split it writes
// the normalised output; with several (few query rows: decode) it writes (max, sum, unnormalised
// output) to `part` and attention_combine merges them.
PK_GROUP_FN(attention, AT_WG)
    __global const uchar* qb, ulong qo, int qt, __global const uchar* kb, ulong ko, __global const uchar* vb, ulong vo,
    __global const uchar* mb, ulong mo, int mt, int mask_kind, __global uchar* ob, ulong oo, int ot, PK_CONST const long* d,
    float scale, int causal, int vec, int nsplit, long chunk, __global float* part) {
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
  // Skip masked keys only when the row has an unmasked one (else every key counts, as in PyTorch).
  int skip = 0;
  // The scan stops at the first block of keys with an unmasked one (a decode step's or a causal
  // row's come first), so a long, mostly empty KV cache costs one block here, not all of it.
  if (mask_kind == 1) {
    for (long j0 = 0; j0 < S && !skip; j0 += AT_WG) {
      const long j = j0 + lid;
      const float any = (j < S && !(causal && j > i) && ldf(Mk, mt, mbase + j * mss) > -65504.0f) ? 1.0f : 0.0f;
      skip = wg_reduce(any, red, 1) > 0.0f;
    }
  }
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
  if (nsplit > 1) {
    __global float* pp = part + wg * (Dv + 2);
    if (lid == 0) pp[0] = mrun, pp[1] = lrun;
    if (lid < Dv) pp[2 + lid] = o0;
    if (lid + AT_WG < Dv) pp[2 + lid + AT_WG] = o1;
    return;
  }
  __global uchar* O = GPTR(ob, oo);
  if (lid < Dv) stf(O, ot, row * Dv + lid, o0 / lrun);
  if (lid + AT_WG < Dv) stf(O, ot, row * Dv + lid + AT_WG, o1 / lrun);
}

// Merges the splits of attention(): out = sum_s o_s * exp(m_s - M) / sum_s l_s * exp(m_s - M).
PK_GROUP_FN(attention_combine, AT_WG) __global const float* part, int nsplit, long Dv, __global uchar* ob, ulong oo, int ot) {
  const long row = PK_GROUP_ID;
  const int lid = get_local_id(0);
  __global const float* pp = part + row * nsplit * (Dv + 2);
  float M = -INFINITY;
  for (int s = 0; s < nsplit; ++s) M = fmax(M, pp[s * (Dv + 2)]);
  float l = 0.0f, o0 = 0.0f, o1 = 0.0f;
  for (int s = 0; s < nsplit; ++s) {
    __global const float* q = pp + s * (Dv + 2);
    if (q[0] == -INFINITY) continue;
    const float f = exp(q[0] - M);
    l += q[1] * f;
    if (lid < Dv) o0 += q[2 + lid] * f;
    if (lid + AT_WG < Dv) o1 += q[2 + lid + AT_WG] * f;
  }
  __global uchar* O = GPTR(ob, oo);
  if (lid < Dv) stf(O, ot, row * Dv + lid, o0 / l);
  if (lid + AT_WG < Dv) stf(O, ot, row * Dv + lid + AT_WG, o1 / l);
}
//@pk-
