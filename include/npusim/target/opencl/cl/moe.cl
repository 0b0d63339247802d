// Mixture-of-experts kernels (kernels/moe.hpp): the router's topk, and the `moe` pattern, which
// computes only the experts each sample selected, reading the expert index on the device.

// topk along one axis: one work-item per selected row (outer x inner), k scans of the n values,
// each taking the best value after the previous pick in topk's order (NaN first, then by value,
// equal values by index), so ties and NaN come out as the reference orders them.
inline int topk_before(float a, float b, long ia, long ib, int largest) {
  const int na = isnan(a), nb = isnan(b);
  if (na || nb) return na && nb ? ia < ib : (largest ? na : nb);
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

__kernel void topk(__global const uchar* xb, ulong xo, int xt, __global uchar* vb, ulong vo, int vt, __global uchar* ib, ulong io, int it,
                   long outer, long n, long inner, long k, int largest) {
  const long row = get_global_id(0);
  if (row >= outer * inner) return;
  const long o = row / inner, e = row % inner;
  __global const uchar* x = CGPTR(xb, xo);
  float pv = 0.0f;
  long pi = -1;
  for (long j = 0; j < k; ++j) {
    float bv = 0.0f;
    long bi = -1;
    for (long q = 0; q < n; ++q) {
      const float v = ldf(x, xt, (o * n + q) * inner + e);
      if (pi >= 0 && !topk_before(pv, v, pi, q, largest)) continue;  // at or before the last pick
      if (bi < 0 || topk_before(v, bv, q, bi, largest)) bv = v, bi = q;
    }
    const long at = (o * k + j) * inner + e;
    if (xt == DT_I64 || xt == DT_I32 || xt == DT_I16 || xt == DT_I8) sti(GPTR(vb, vo), vt, at, ldi(x, xt, (o * n + bi) * inner + e));
    else stf(GPTR(vb, vo), vt, at, bv);
    sti(GPTR(ib, io), it, at, bi);
    pv = bv, pi = bi;
  }
}

// The sample's token and expert, counted from the end when negative; -1 (and the error reported)
// when out of range.
inline long moe_index(__global const uchar* p, int dt, long s, long size, __global int* err, int code) {
  const long v = ldi(p, dt, s), r = v < 0 ? v + size : v;
  if (r < 0 || r >= size) {
    report_index(err, code, v);
    return -1;
  }
  return r;
}

// h[s, r] = silu(gate_up[e][r] . x[t]) * (gate_up[e][I + r] . x[t]), t = tok[s], e = ids[s]: one
// work-item per (s, r); gate_up [E, 2I, H], x [T, H].
__kernel void moe_gate_up(__global const uchar* xb, ulong xo, int xt, __global const uchar* tb, ulong to, int tt, __global const uchar* eb, ulong eo,
                          int et, __global const uchar* wb, ulong wo, int wt, __global float* h, long T, long H, long E, long I, long S,
                          __global int* err, int tok_code, int exp_code) {
  const long i = get_global_id(0);
  if (i >= S * I) return;
  const long s = i / I, r = i % I;
  const long t = moe_index(CGPTR(tb, to), tt, s, T, err, tok_code), e = moe_index(CGPTR(eb, eo), et, s, E, err, exp_code);
  if (t < 0 || e < 0) {
    h[i] = NAN;
    return;
  }
  __global const uchar* x = CGPTR(xb, xo);
  __global const uchar* w = CGPTR(wb, wo);
  const long gr = (e * 2 * I + r) * H, ur = (e * 2 * I + I + r) * H;
  float g = 0.0f, u = 0.0f;
  for (long c = 0; c < H; ++c) {
    const float xv = ldf(x, xt, t * H + c);
    g = fma(ldf(w, wt, gr + c), xv, g);
    u = fma(ldf(w, wt, ur + c), xv, u);
  }
  h[i] = g / (1.0f + exp(-g)) * u;
}

// y[t, r] = sum over samples s of token t, in sample order, of w[s] * (down[e][r] . h[s]): one
// work-item per (t, r); down [E, H, I]. Tokens with no sample get 0 (index_add into zeros).
__kernel void moe_down(__global const float* h, __global const uchar* tb, ulong to, int tt, __global const uchar* eb, ulong eo, int et,
                       __global const uchar* sw, ulong swo, int swt, __global const uchar* db, ulong dof, int dt, __global uchar* yb, ulong yo,
                       int yt, long T, long H, long E, long I, long S) {
  const long i = get_global_id(0);
  if (i >= T * H) return;
  const long t = i / H, r = i % H;
  __global const uchar* d = CGPTR(db, dof);
  float acc = 0.0f;
  for (long s = 0; s < S; ++s) {
    long ts = ldi(CGPTR(tb, to), tt, s), e = ldi(CGPTR(eb, eo), et, s);
    ts = ts < 0 ? ts + T : ts;
    e = e < 0 ? e + E : e;
    if (ts != t || e < 0 || e >= E) continue;
    const long row = (e * H + r) * I;
    float o = 0.0f;
    for (long c = 0; c < I; ++c) o = fma(ldf(d, dt, row + c), h[s * I + c], o);
    acc += o * ldf(CGPTR(sw, swo), swt, s);
  }
  stf(GPTR(yb, yo), yt, i, acc);
}

// zeros_like: y = 0.
__kernel void fill_zero(__global uchar* yb, ulong yo, int yt, long n) {
  const long i = get_global_id(0);
  if (i < n) stf(GPTR(yb, yo), yt, i, 0.0f);
}

// index_add: y[o, p, e] = self[o, p, e] + alpha * sum of src[o, j, e] over j with idx[j] = p, in
// order of j (one work-item per element of y, so no two items write one element).
__kernel void index_add(__global const uchar* sb, ulong so, int st, __global const uchar* ib, ulong io, int it, __global const uchar* rb, ulong ro,
                        int rt, __global uchar* yb, ulong yo, int yt, long outer, long S, long n, long inner, float alpha, __global int* err,
                        int code) {
  const long i = get_global_id(0);
  if (i >= outer * S * inner) return;
  const long e = i % inner, p = (i / inner) % S, o = i / (inner * S);
  float acc = ldf(CGPTR(sb, so), st, i);
  for (long j = 0; j < n; ++j) {
    const long v = ldi(CGPTR(ib, io), it, j), q = v < 0 ? v + S : v;
    if (q < 0 || q >= S) {
      report_index(err, code, v);
      continue;
    }
    if (q == p) acc += alpha * ldf(CGPTR(rb, ro), rt, (o * n + j) * inner + e);
  }
  stf(GPTR(yb, yo), yt, i, acc);
}
