// Generic kernels: shapes, strides and small programs come in __constant descriptors built once
// on the host, dtypes are runtime codes. Data movement, pointwise programs, reductions, softmax,
// normalisations, pooling, indexing and rotary embeddings.

//@pk+
// Element offset of linear index i of `shape` (rank r) under `stride` (both in d).
inline long strided_offset(long i, int r, PK_CONST const long* shape, PK_CONST const long* stride) {
  long off = 0;
  for (int k = r - 1; k >= 0; --k) {
    long sz = shape[k];
    long c = i % sz;
    i /= sz;
    off += c * stride[k];
  }
  return off;
}

inline void copy_elem(__global const uchar* sp, int sdt, long s, __global uchar* dp, int ddt, long o) {
  if (sdt == ddt) {
    switch (sdt) {
      case DT_F32: case DT_I32: ((__global uint*)dp)[o] = ((__global const uint*)sp)[s]; return;
      case DT_F16: case DT_BF16: case DT_I16: ((__global ushort*)dp)[o] = ((__global const ushort*)sp)[s]; return;
      case DT_I64: ((__global ulong*)dp)[o] = ((__global const ulong*)sp)[s]; return;
      default: dp[o] = sp[s]; return;
    }
  }
  if (is_int_dt(ddt)) sti(dp, ddt, o, is_int_dt(sdt) ? ldi(sp, sdt, s) : (long)ldf(sp, sdt, s));
  else stf(dp, ddt, o, is_int_dt(sdt) ? (float)ldi(sp, sdt, s) : ldf(sp, sdt, s));
}
//@pk-

// d: [rank, src_off, dst_off, shape[r], src_stride[r], dst_stride[r]]
__kernel void copy_strided(__global const uchar* sb, ulong so, int sdt, __global uchar* db, ulong dof, int ddt,
                           __constant const long* d, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  int r = (int)d[0];
  long s = d[1] + strided_offset(i, r, d + 3, d + 3 + r), o = d[2] + strided_offset(i, r, d + 3, d + 3 + 2 * r);
  copy_elem(CGPTR(sb, so), sdt, s, GPTR(db, dof), ddt, o);
}

// pad and roll (ops::SourceMap): y[i] = x[sum_k map_k[c_k] * x_stride_k] for i's index c, or `fill`
// where an entry is -1. d: [r, shape[r], x_stride[r], map_start[r], the maps one after another].
__kernel void gather_map(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __global const long* d, long n,
                         float fill) {
  long i = get_global_id(0);
  if (i >= n) return;
  const int r = (int)d[0];
  __global const long* shape = d + 1;
  long rem = i, off = 0;
  for (int k = r - 1; k >= 0; --k) {
    const long c = rem % shape[k];
    rem /= shape[k];
    const long m = d[1 + 3 * r + d[1 + 2 * r + k] + c];
    if (m < 0) {
      if (is_int_dt(yt)) sti(GPTR(yb, yo), yt, i, (long)fill);
      else stf(GPTR(yb, yo), yt, i, fill);
      return;
    }
    off += m * d[1 + r + k];
  }
  copy_elem(CGPTR(xb, xo), xt, off, GPTR(yb, yo), yt, i);
}

// ---- pointwise programs -------------------------------------------------------------------------
#define PW_MAX_IN 6
#define PW_REGS 32
enum pw_op {
  PW_CONST = 0, PW_RELU, PW_SILU, PW_NEG, PW_ABS, PW_RSQRT, PW_SQRT, PW_RECIP, PW_COS, PW_SIN, PW_EXP, PW_LOG, PW_TANH,
  PW_ERF, PW_SIGMOID, PW_GELU, PW_HARDTANH, PW_HARDSWISH, PW_HARDSIGMOID, PW_LEAKY, PW_CLAMP, PW_POW,
  PW_ADD = 30, PW_SUB, PW_RSUB, PW_MUL, PW_DIV, PW_MAX, PW_MIN, PW_GT, PW_LT, PW_GE, PW_LE, PW_EQ, PW_NE, PW_WHERE, PW_CAST
};

inline float pw_apply(int op, float a, float b, float c, float i0, float i1) {
  switch (op) {
    case PW_CONST: return i0;
    case PW_RELU: return a > 0.0f ? a : 0.0f;
    case PW_SILU: return a / (1.0f + exp(-a));
    case PW_NEG: return -a;
    case PW_ABS: return fabs(a);
    case PW_RSQRT: return 1.0f / sqrt(a);
    case PW_SQRT: return sqrt(a);
    case PW_RECIP: return 1.0f / a;
    case PW_COS: return cos(a);
    case PW_SIN: return sin(a);
    case PW_EXP: return exp(a);
    case PW_LOG: return log(a);
    case PW_TANH: return tanh(a);
    case PW_ERF: return erf(a);
    case PW_SIGMOID: return 1.0f / (1.0f + exp(-a));
    case PW_GELU:
      if (i0 != 0.0f) return 0.5f * a * (1.0f + tanh(0.7978845608028654f * (a + 0.044715f * a * a * a)));
      return 0.5f * a * (1.0f + erf(a * 0.7071067811865476f));
    case PW_HARDTANH: return fmin(fmax(a, i0), i1);
    case PW_HARDSWISH: return a * fmin(fmax(a + 3.0f, 0.0f), 6.0f) / 6.0f;
    case PW_HARDSIGMOID: return fmin(fmax(a + 3.0f, 0.0f), 6.0f) / 6.0f;
    case PW_LEAKY: return a > 0.0f ? a : a * i0;
    case PW_CLAMP: { float x = a; if (x < i0) x = i0; if (x > i1) x = i1; return x; }
    case PW_POW:
      if (i0 == 2.0f) return a * a;
      if (i0 == 0.5f) return sqrt(a);
      if (i0 == -1.0f) return 1.0f / a;
      return pow(a, i0);
    case PW_ADD: return i0 == 1.0f ? a + b : a + i0 * b;
    case PW_SUB: return i0 == 1.0f ? a - b : a - i0 * b;
    case PW_RSUB: return i0 == 1.0f ? b - a : b - i0 * a;
    case PW_MUL: return a * b;
    case PW_DIV: return a / b;
    case PW_MAX: return isnan(a) ? a : (a > b ? a : b);
    case PW_MIN: return isnan(a) ? a : (a < b ? a : b);
    case PW_GT: return a > b ? 1.0f : 0.0f;
    case PW_LT: return a < b ? 1.0f : 0.0f;
    case PW_GE: return a >= b ? 1.0f : 0.0f;
    case PW_LE: return a <= b ? 1.0f : 0.0f;
    case PW_EQ: return a == b ? 1.0f : 0.0f;
    case PW_NE: return a != b ? 1.0f : 0.0f;
    case PW_WHERE: return a != 0.0f ? b : c;
    case PW_CAST: {
      int t = (int)i0;
      if (t == DT_F16 || t == DT_BF16) return round_to(a, t);
      if (t == DT_U8) return a != 0.0f ? 1.0f : 0.0f;
      if (is_int_dt(t)) return trunc(a);
      return a;
    }
  }
  return a;
}

// d: [rank, nin, contiguous, n, shape[r], stride_0[r], ..., stride_{nin-1}[r]]
// prog: [ninstr, out_reg, (op, dst, a, b, c) * ninstr]; imm: two floats per instruction.
__kernel void pointwise(__global const uchar* b0, ulong o0, int t0, __global const uchar* b1, ulong o1, int t1,
                        __global const uchar* b2, ulong o2, int t2, __global const uchar* b3, ulong o3, int t3,
                        __global const uchar* b4, ulong o4, int t4, __global const uchar* b5, ulong o5, int t5,
                        __global uchar* yb, ulong yo, int yt, __constant const long* d, __constant const int* prog,
                        __constant const float* imm) {
  long i = get_global_id(0);
  const long n = d[3];
  if (i >= n) return;
  const int r = (int)d[0], nin = (int)d[1], contig = (int)d[2];
  float reg[PW_REGS];
  __global const uchar* bs[PW_MAX_IN] = {CGPTR(b0, o0), CGPTR(b1, o1), CGPTR(b2, o2), CGPTR(b3, o3), CGPTR(b4, o4), CGPTR(b5, o5)};
  const int ts[PW_MAX_IN] = {t0, t1, t2, t3, t4, t5};
  for (int k = 0; k < nin; ++k) {
    long off = contig ? i : strided_offset(i, r, d + 4, d + 4 + (k + 1) * r);
    reg[k] = ldf(bs[k], ts[k], off);
  }
  const int ni = prog[0];
  for (int s = 0; s < ni; ++s) {
    __constant const int* p = prog + 2 + 5 * s;
    reg[p[1]] = pw_apply(p[0], reg[p[2]], reg[p[3]], reg[p[4]], imm[2 * s], imm[2 * s + 1]);
  }
  stf(GPTR(yb, yo), yt, i, reg[prog[1]]);
}

// Integer pointwise programs: relu, neg, abs and clamp of integer tensors in 64-bit integers, as the
// reference computes them (OpenCLTarget::integer_pointwise), each result wrapped to its stored type.
// prog: [ninstr, (op, dt, lo, hi) * ninstr]; op: 0 relu, 1 neg, 2 abs, 3 clamp to [lo, hi].
__kernel void pointwise_int(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __constant const long* prog,
                            long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long v = ldi(CGPTR(xb, xo), xt, i);
  const int ni = (int)prog[0];
  for (int s = 0; s < ni; ++s) {
    __constant const long* p = prog + 1 + 4 * s;
    switch ((int)p[0]) {
      case 0: v = v > 0 ? v : 0; break;
      case 1: v = -v; break;
      case 2: v = v < 0 ? -v : v; break;
      default:
        if (v < p[2]) v = p[2];
        if (v > p[3]) v = p[3];
        break;
    }
    switch ((int)p[1]) {
      case DT_I32: v = (int)v; break;
      case DT_I16: v = (short)v; break;
      case DT_I8: v = (char)v; break;
      case DT_U8: v = (uchar)v; break;
      default: break;
    }
  }
  sti(GPTR(yb, yo), yt, i, v);
}

// y = silu(a) * b over contiguous operands of one shape, silu(a) rounded to `rt` first where rt is
// f16/bf16 (-1: not): the pointwise program of an MLP's SiLU*gate (pw_apply's arithmetic), without
// interpreting it. PW_SILU_MUL values per work-item, `step` (the work-item count) apart.
#define PW_SILU_MUL 8
__kernel void silu_mul(__global const uchar* ab, ulong ao, int at, __global const uchar* bb, ulong bo, int bt, __global uchar* yb, ulong yo,
                       int yt, long n, int rt) {
  const long step = get_global_size(0);
  __global const uchar* a = CGPTR(ab, ao);
  __global const uchar* b = CGPTR(bb, bo);
  __global uchar* y = GPTR(yb, yo);
  for (long i = get_global_id(0), k = 0; k < PW_SILU_MUL && i < n; ++k, i += step) {
    const float x = ldf(a, at, i);
    float s = x / (1.0f + exp(-x));
    if (rt >= 0) s = round_to(s, rt);
    stf(y, yt, i, s * ldf(b, bt, i));
  }
}

// ---- reductions ---------------------------------------------------------------------------------
// d: [nk, nr, count, kshape[nk], kstride[nk], rshape[nr], rstride[nr]]; op: 0 sum 1 mean 2 amax 3 amin 4 argmax 5 argmin
__kernel void reduce(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __constant const long* d,
                     long nout, int op) {
  long o = get_global_id(0);
  if (o >= nout) return;
  const int nk = (int)d[0], nr = (int)d[1];
  const long count = d[2];
  __constant const long* ks = d + 3;
  __constant const long* rs = d + 3 + 2 * nk;
  long base = strided_offset(o, nk, ks, ks + nk);
  __global const uchar* x = CGPTR(xb, xo);
  float acc = op == 2 ? -INFINITY : op == 3 ? INFINITY : 0.0f;
  long best = 0;
  for (long j = 0; j < count; ++j) {
    float v = ldf(x, xt, base + strided_offset(j, nr, rs, rs + nr));
    if (op <= 1) acc += v;
    else if (op == 2) { if (v > acc || isnan(v)) acc = v; }
    else if (op == 3) { if (v < acc || isnan(v)) acc = v; }
    else {
      if (j == 0) { acc = v; best = 0; }
      else if (!isnan(acc) && ((op == 4 ? v > acc : v < acc) || isnan(v))) { acc = v; best = j; }
    }
  }
  if (op == 1) acc /= (float)count;
  if (op >= 4) sti(GPTR(yb, yo), yt, o, best);
  else stf(GPTR(yb, yo), yt, o, acc);
}

// linalg_vector_norm per output (d as reduce): (sum |x|^ord)^(1/ord); ord inf/-inf: max/min |x|,
// ord 0: the count of non-zeros.
__kernel void vector_norm(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __constant const long* d,
                          long nout, float ord) {
  long o = get_global_id(0);
  if (o >= nout) return;
  const int nk = (int)d[0], nr = (int)d[1];
  const long count = d[2];
  __constant const long* ks = d + 3;
  __constant const long* rs = d + 3 + 2 * nk;
  const long base = strided_offset(o, nk, ks, ks + nk);
  __global const uchar* x = CGPTR(xb, xo);
  const int inf = isinf(ord);
  float acc = inf && ord < 0.0f ? INFINITY : 0.0f;
  for (long j = 0; j < count; ++j) {
    const float e = fabs(ldf(x, xt, base + strided_offset(j, nr, rs, rs + nr)));
    if (inf) acc = ord > 0.0f ? fmax(acc, e) : fmin(acc, e);
    else if (ord == 0.0f) acc += e != 0.0f ? 1.0f : 0.0f;
    else if (ord == 1.0f) acc += e;
    else if (ord == 2.0f) acc += e * e;
    else acc += pow(e, ord);
  }
  if (!inf && ord != 0.0f && ord != 1.0f) acc = ord == 2.0f ? sqrt(acc) : pow(acc, 1.0f / ord);
  stf(GPTR(yb, yo), yt, o, acc);
}

// softmax / log_softmax over one dim: rows (outer, inner), `len` elements `inner` apart.
__kernel void softmax(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, long outer, long len, long inner,
                      int logsm) {
  long r = get_global_id(0);
  if (r >= outer * inner) return;
  long base = (r / inner) * len * inner + r % inner;
  __global const uchar* x = CGPTR(xb, xo);
  __global uchar* y = GPTR(yb, yo);
  float m = -INFINITY;
  for (long k = 0; k < len; ++k) m = fmax(m, ldf(x, xt, base + k * inner));
  float s = 0.0f;
  for (long k = 0; k < len; ++k) s += exp(ldf(x, xt, base + k * inner) - m);
  float ls = log(s);
  for (long k = 0; k < len; ++k) {
    float v = ldf(x, xt, base + k * inner) - m;
    stf(y, yt, base + k * inner, logsm ? v - ls : exp(v) / s);
  }
}

// softmax(x * scale + mask) over the last dim; mask read through broadcast strides.
// d: [rank, shape[r], mstride[r]]
__kernel void masked_softmax(__global const uchar* xb, ulong xo, int xt, __global const uchar* mb, ulong mo, int mt, __global uchar* yb,
                             ulong yo, int yt, __constant const long* d, long rows, float scale) {
  long r = get_global_id(0);
  if (r >= rows) return;
  const int rk = (int)d[0];
  const long len = d[rk];
  __global const uchar* x = CGPTR(xb, xo);
  __global const uchar* mk = CGPTR(mb, mo);
  __global uchar* y = GPTR(yb, yo);
  long mbase = strided_offset(r, rk - 1, d + 1, d + 1 + rk);
  long ms = d[1 + rk + rk - 1];
  float m = -INFINITY;
  for (long k = 0; k < len; ++k) m = fmax(m, ldf(x, xt, r * len + k) * scale + ldf(mk, mt, mbase + k * ms));
  float s = 0.0f;
  for (long k = 0; k < len; ++k) s += exp(ldf(x, xt, r * len + k) * scale + ldf(mk, mt, mbase + k * ms) - m);
  for (long k = 0; k < len; ++k) stf(y, yt, r * len + k, exp(ldf(x, xt, r * len + k) * scale + ldf(mk, mt, mbase + k * ms) - m) / s);
}

// ---- normalisation (one work-group per row) -------------------------------------------------------
//@pk+
#ifndef NORM_WG
#define NORM_WG 256
#endif
#define NORM_R 16
// o[j] = p[base + j * step] for j < NORM_R while j * step < left, else 0: the dtype switch outside
// the loop, so the loads are independent.
inline void ldf_strided(__global const uchar* p, int dt, long base, long step, long left, float* o) {
#define LDF_STRIDED(expr)                                                     \
  _Pragma("unroll") for (int j = 0; j < NORM_R; ++j) {                        \
    const long i_ = base + (long)j * step;                                    \
    o[j] = (long)j * step < left ? (expr) : 0.0f;                             \
  }
  if (dt == DT_BF16) LDF_STRIDED(bf2f(((__global const ushort*)p)[i_]))
  else if (dt == DT_F32) LDF_STRIDED(((__global const float*)p)[i_])
  else if (dt == DT_F16) LDF_STRIDED(vload_half(i_, (__global const half*)p))
  else LDF_STRIDED(ldf(p, dt, i_))
#undef LDF_STRIDED
}
inline float wg_sum(float v, __local float* red) { return group_reduce(v, red, NORM_WG, 0); }

// HF RMSNorm: h = x * rsqrt(mean(x^2) + eps), rounded to mid_t (the model's cast), then * w.
PK_GROUP_FN(rmsnorm, NORM_WG) __global const uchar* xb, ulong xo, int xt,
    __global const uchar* wb, ulong wo, int wt, int has_w, __global uchar* yb, ulong yo, int yt, long n, float eps, int mid_t) {
  PK_LOCAL(float, red, NORM_WG);
  const long row = PK_GROUP_ID;
  const int l = get_local_id(0);
  __global const uchar* x = CGPTR(xb, xo);
  __global const uchar* w = CGPTR(wb, wo);
  __global uchar* y = GPTR(yb, yo);
  float ss = 0.0f;
  if (n <= NORM_WG * NORM_R) {
    // A row of up to NORM_R values per item: every load in flight at once, x read once.
    float v[NORM_R], g[NORM_R];
    ldf_strided(x, xt, row * n + l, NORM_WG, n - l, v);
    if (has_w) ldf_strided(w, wt, l, NORM_WG, n - l, g);
#pragma unroll
    for (int j = 0; j < NORM_R; ++j) ss += v[j] * v[j];  // zeros past n add nothing
    const float inv = 1.0f / sqrt(wg_sum(ss, red) / (float)n + eps);
#pragma unroll
    for (int j = 0; j < NORM_R; ++j) {
      const long k = l + (long)j * NORM_WG;
      if (k >= n) break;
      float h = round_to(v[j] * inv, mid_t);
      if (has_w) h *= g[j];
      stf(y, yt, row * n + k, h);
    }
    return;
  }
  for (long k = l; k < n; k += NORM_WG) { float v = ldf(x, xt, row * n + k); ss += v * v; }
  float inv = 1.0f / sqrt(wg_sum(ss, red) / (float)n + eps);
  for (long k = l; k < n; k += NORM_WG) {
    float h = round_to(ldf(x, xt, row * n + k) * inv, mid_t);
    if (has_w) h *= ldf(w, wt, k);
    stf(y, yt, row * n + k, h);
  }
}

//@pk-

__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1))) void layernorm(__global const uchar* xb, ulong xo, int xt,
    __global const uchar* wb, ulong wo, int wt, int has_w, __global const uchar* bb, ulong bo, int bt, int has_b, __global uchar* yb,
    ulong yo, int yt, long n, float eps) {
  __local float red[NORM_WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __global const uchar* x = CGPTR(xb, xo);
  float s = 0.0f;
  for (long k = l; k < n; k += NORM_WG) s += ldf(x, xt, row * n + k);
  const float mean = wg_sum(s, red) / (float)n;
  float v = 0.0f;
  for (long k = l; k < n; k += NORM_WG) { float t = ldf(x, xt, row * n + k) - mean; v += t * t; }
  const float inv = 1.0f / sqrt(wg_sum(v, red) / (float)n + eps);
  for (long k = l; k < n; k += NORM_WG) {
    float h = (ldf(x, xt, row * n + k) - mean) * inv;
    if (has_w) h *= ldf(CGPTR(wb, wo), wt, k);
    if (has_b) h += ldf(CGPTR(bb, bo), bt, k);
    stf(GPTR(yb, yo), yt, row * n + k, h);
  }
}

// Inference batch norm: y = (x - mean) / sqrt(var + eps) * w + b per channel.
__kernel void batchnorm(__global const uchar* xb, ulong xo, int xt, __global const uchar* mb, ulong mo, int mt, __global const uchar* vb,
                        ulong vo, int vt, __global const uchar* wb, ulong wo, int wt, __global const uchar* bb, ulong bo, int bt,
                        int affine, __global uchar* yb, ulong yo, int yt, long n, long C, long inner, float eps, int relu) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = (i / inner) % C;
  float inv = 1.0f / sqrt(ldf(CGPTR(vb, vo), vt, c) + eps);
  float scale = affine ? inv * ldf(CGPTR(wb, wo), wt, c) : inv;
  float shift = (affine ? ldf(CGPTR(bb, bo), bt, c) : 0.0f) - ldf(CGPTR(mb, mo), mt, c) * scale;
  float v = ldf(CGPTR(xb, xo), xt, i) * scale + shift;
  stf(GPTR(yb, yo), yt, i, relu ? fmax(v, 0.0f) : v);
}

// ---- pooling (one work-item per output) ------------------------------------------------------------
// d: [NC, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, count_include_pad, divisor, C, x_nhwc, y_nhwc];
// kind 0 max 1 avg 2 adaptive avg. x and y each NCHW or channels-last (NHWC, C channels). Work-item i
// is output element i in x's layout order (so that neighbours read neighbouring inputs: a pool that
// turns an NCHW image into NHWC reads it coalesced), stored where y's layout puts it.
__kernel void pool2d(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __constant const long* d, int kind) {
  long i = get_global_id(0);
  const long NC = d[0], H = d[1], W = d[2], OH = d[3], OW = d[4], C = d[15];
  if (i >= NC * OH * OW) return;
  long ow, oh, c;  // c: image * C + channel
  if (d[16]) {
    const long p = i / C;
    ow = p % OW, oh = (p / OW) % OH, c = (p / (OW * OH)) * C + i % C;
  } else {
    ow = i % OW, oh = (i / OW) % OH, c = i / (OW * OH);
  }
  const long yi = d[17] ? (((c / C) * OH + oh) * OW + ow) * C + c % C : (c * OH + oh) * OW + ow;
  __global const uchar* x = CGPTR(xb, xo) ;
  // Element (ih, iw) of plane c is x[xbase + (ih * W + iw) * xs].
  const long xs = d[16] ? C : 1, xbase = d[16] ? (c / C) * H * W * C + c % C : c * H * W;
  float r;
  if (kind == 0) {
    r = -INFINITY;
    for (long a = 0; a < d[5]; ++a) {
      long ih = oh * d[7] - d[9] + a * d[11];
      if (ih < 0 || ih >= H) continue;
      for (long b = 0; b < d[6]; ++b) {
        long iw = ow * d[8] - d[10] + b * d[12];
        if (iw < 0 || iw >= W) continue;
        float v = ldf(x, xt, xbase + (ih * W + iw) * xs);
        if (v > r || isnan(v)) r = v;
      }
    }
  } else {
    long h0, h1, w0, w1, div;
    if (kind == 1) {
      h0 = oh * d[7] - d[9]; w0 = ow * d[8] - d[10];
      h1 = min(h0 + d[5], H + d[9]); w1 = min(w0 + d[6], W + d[10]);
      long pool = (h1 - h0) * (w1 - w0);
      h0 = max(h0, 0L); w0 = max(w0, 0L); h1 = min(h1, H); w1 = min(w1, W);
      div = d[14] > 0 ? d[14] : d[13] ? pool : (h1 - h0) * (w1 - w0);
    } else {
      h0 = (oh * H) / OH; h1 = ((oh + 1) * H + OH - 1) / OH;
      w0 = (ow * W) / OW; w1 = ((ow + 1) * W + OW - 1) / OW;
      div = (h1 - h0) * (w1 - w0);
    }
    float s = 0.0f;
    for (long ih = h0; ih < h1; ++ih)
      for (long iw = w0; iw < w1; ++iw) s += ldf(x, xt, xbase + (ih * W + iw) * xs);
    r = div > 0 ? s / (float)div : 0.0f;
  }
  stf(GPTR(yb, yo), yt, yi, r);
}

// ---- indexing --------------------------------------------------------------------------------------
//@pk+
// Row i of a gather/scatter over [outer, n, inner] (n index entries): the flat position of element
// i in the indexed tensor [outer, S, inner], or -1 when its index is out of range, which is then
// reported through err (check `code`). neg: negative indices count from the end (index_copy,
// index_select); embedding takes none.
inline long indexed_row(long i, __global const uchar* ib, int it, long S, long n, long inner, int neg, __global int* err, int code) {
  const long e = i % inner, k = (i / inner) % n, o = i / (inner * n);
  const long v = ldi(ib, it, k);
  const long p = v < 0 && neg ? v + S : v;
  if (p < 0 || p >= S) {
    report_index(err, code, v);
    return -1;
  }
  return (o * S + p) * inner + e;
}

// y[(o*n + k)*inner + e] = x[(o*S + idx[k])*inner + e]  (embedding: outer = 1, inner = D, S = V)
PK_ITEM_FN(gather_rows) __global const uchar* xb, ulong xo, int xt, __global const uchar* ib, ulong io, int it, __global uchar* yb,
                          ulong yo, int yt, long outer, long S, long n, long inner, int neg, __global int* err, int code) {
  long i = PK_GLOBAL_ID;
  if (i >= outer * n * inner) return;
  const long at = indexed_row(i, CGPTR(ib, io), it, S, n, inner, neg, err, code);
  if (at < 0) stf(GPTR(yb, yo), yt, i, NAN);
  else copy_elem(CGPTR(xb, xo), xt, at, GPTR(yb, yo), yt, i);
}

//@pk-

// y[(o*S + idx[k])*inner + e] = src[(o*n + k)*inner + e]  (y already holds self)
__kernel void scatter_rows(__global const uchar* sb, ulong so, int st, __global const uchar* ib, ulong io, int it, __global uchar* yb,
                           ulong yo, int yt, long outer, long S, long n, long inner, __global int* err, int code) {
  long i = get_global_id(0);
  if (i >= outer * n * inner) return;
  const long at = indexed_row(i, CGPTR(ib, io), it, S, n, inner, 1, err, code);
  if (at >= 0) copy_elem(CGPTR(sb, so), st, i, GPTR(yb, yo), yt, at);
}

// index.Tensor: y[i] = x[kept offset + sum_j idx_j[at_j] * x_stride_j], at most 4 index tensors
// (i0..i3; unused ones are never read). d: [r, k, shape[r], x_stride[r] (kept dims of x, 0 on the
// broadcast index dims), then per index j: stride[r] (over the index dims, 0 elsewhere), size, x_stride].
// An index out of [-size, size) is reported through err with its code (c0..c3).
__kernel void gather_index(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, int yt, __global const uchar* i0b,
                           ulong i0o, int i0t, __global const uchar* i1b, ulong i1o, int i1t, __global const uchar* i2b, ulong i2o, int i2t,
                           __global const uchar* i3b, ulong i3o, int i3t, __constant const long* d, long n, __global int* err, int c0, int c1,
                           int c2, int c3) {
  long i = get_global_id(0);
  if (i >= n) return;
  const int r = (int)d[0], k = (int)d[1];
  long off = strided_offset(i, r, d + 2, d + 2 + r);
  for (int j = 0; j < k; ++j) {
    __constant const long* e = d + 2 + 2 * r + j * (r + 2);
    const long at = strided_offset(i, r, d + 2, e);
    long v;
    int code;
    switch (j) {
      case 0: v = ldi(CGPTR(i0b, i0o), i0t, at), code = c0; break;
      case 1: v = ldi(CGPTR(i1b, i1o), i1t, at), code = c1; break;
      case 2: v = ldi(CGPTR(i2b, i2o), i2t, at), code = c2; break;
      default: v = ldi(CGPTR(i3b, i3o), i3t, at), code = c3; break;
    }
    const long S = e[r], p = v < 0 ? v + S : v;
    if (p < 0 || p >= S) {
      report_index(err, code, v);
      stf(GPTR(yb, yo), yt, i, NAN);
      return;
    }
    off += p * e[r + 1];
  }
  copy_elem(CGPTR(xb, xo), xt, off, GPTR(yb, yo), yt, i);
}

// ---- rotary ------------------------------------------------------------------------------------------
//@pk+
// x * cos + rotate_half(x) * sin at element i of the output, x's value at xi (its rotate_half
// partner D/2 away along the last dim, whose stride is 1); d: [rank, shape[r], cos_stride[r],
// sin_stride[r]] of the output's shape.
inline float rotary_value(__global const uchar* x, int xt, long xi, __global const uchar* c, int ct, __global const uchar* sn, int st,
                          PK_CONST const long* d, long i) {
  const int r = (int)d[0];
  const long D = d[r], h = D / 2, e = i % D;
  const float rot = e < h ? -ldf(x, xt, xi + h) : ldf(x, xt, xi - h);
  return ldf(x, xt, xi) * ldf(c, ct, strided_offset(i, r, d + 1, d + 1 + r)) + rot * ldf(sn, st, strided_offset(i, r, d + 1, d + 1 + 2 * r));
}
// The same at element i of a contiguous x.
inline float rotary_at(__global const uchar* x, int xt, __global const uchar* c, int ct, __global const uchar* sn, int st, PK_CONST const long* d,
                       long i) {
  return rotary_value(x, xt, i, c, ct, sn, st, d, i);
}

PK_ITEM_FN(rotary) __global const uchar* xb, ulong xo, int xt, __global const uchar* cb, ulong co, int ct, __global const uchar* sb,
                     ulong so, int st, __global uchar* yb, ulong yo, int yt, PK_CONST const long* d, long n) {
  long i = PK_GLOBAL_ID;
  if (i >= n) return;
  stf(GPTR(yb, yo), yt, i, rotary_at(CGPTR(xb, xo), xt, CGPTR(cb, co), ct, CGPTR(sb, so), st, d, i));
}

// A decode step's attention inputs in one pass: q rotated into qr; k rotated and v written into
// rows idx[t] of their caches [B, H, S, D] (k, v: [B, H, n, D]). dq, dk: rotary descriptors.
PK_ITEM_FN(rope_kv) __global const uchar* qb, ulong qo, int qt, __global uchar* rb, ulong ro, int rt, __global const uchar* kb, ulong ko,
                      int kt, __global const uchar* vb, ulong vo, int vt, __global const uchar* cb, ulong co, int ct, __global const uchar* sb,
                      ulong so, int st, __global uchar* kcb, ulong kco, int kct, __global uchar* vcb, ulong vco, int vct,
                      __global const uchar* ib, ulong io, int it, PK_CONST const long* dq, PK_CONST const long* dk, long nq, long nk,
                      long nv, long S, long n, long D, __global int* err, int code) {
  long i = PK_GLOBAL_ID;
  if (i >= nq + nk + nv) return;
  if (i < nq) {
    stf(GPTR(rb, ro), rt, i, rotary_at(CGPTR(qb, qo), qt, CGPTR(cb, co), ct, CGPTR(sb, so), st, dq, i));
    return;
  }
  const int is_k = i < nq + nk;
  const long j = is_k ? i - nq : i - nq - nk;
  const long e = j % D, t = (j / D) % n, bh = j / (D * n);
  const long v = ldi(CGPTR(ib, io), it, t);
  const long p = v < 0 ? v + S : v;
  if (p < 0 || p >= S) {
    report_index(err, code, v);
    return;
  }
  if (is_k) stf(GPTR(kcb, kco), kct, (bh * S + p) * D + e, rotary_at(CGPTR(kb, ko), kt, CGPTR(cb, co), ct, CGPTR(sb, so), st, dk, j));
  else copy_elem(CGPTR(vb, vo), vt, j, GPTR(vcb, vco), vct, (bh * S + p) * D + e);
}

// HF rotary embedding: f = pos * inv_freq (float32), emb = cat(f, f), outputs cos(emb), sin(emb).
PK_ITEM_FN(rotary_embedding) __global const uchar* ib, ulong io, int it, __global const uchar* pb, ulong po, int pt, __global uchar* cb,
                               ulong co, int ct, __global uchar* sb, ulong so, int st, long tokens, long half_d) {
  long i = PK_GLOBAL_ID;
  if (i >= tokens * half_d) return;
  long t = i / half_d, k = i % half_d;
  float f = (float)ldi(CGPTR(pb, po), pt, t) * ldf(CGPTR(ib, io), it, k);
  float c = cos(f), s = sin(f);
  long base = t * 2 * half_d;
  stf(GPTR(cb, co), ct, base + k, c);
  stf(GPTR(cb, co), ct, base + half_d + k, c);
  stf(GPTR(sb, so), st, base + k, s);
  stf(GPTR(sb, so), st, base + half_d + k, s);
}
//@pk-

// The rotary over x read through strides (fusion::TransposedRotary: HF's q and k before their
// transpose is copied); y contiguous. d: rotary_value's, then x's stride per dim of y's shape (the
// last one 1).
__kernel void rotary_strided(__global const uchar* xb, ulong xo, int xt, __global const uchar* cb, ulong co, int ct, __global const uchar* sb,
                             ulong so, int st, __global uchar* yb, ulong yo, int yt, __constant const long* d, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const int r = (int)d[0];
  stf(GPTR(yb, yo), yt, i, rotary_value(CGPTR(xb, xo), xt, strided_offset(i, r, d + 1, d + 1 + 3 * r), CGPTR(cb, co), ct, CGPTR(sb, so), st, d, i));
}
