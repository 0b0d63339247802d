// Matrix kernels. Built with -DTA=<code> -DTB=<code> -DTC=<code> (operand storage types); f32 accumulation.
//   gemm:   64x64 tiles, BK = 16, 16x16 work-items with 4x4 outputs each, operands staged in local
//           memory as float. General strides and two batch dims (a divisor maps query heads to KV heads
//           for grouped attention), or, with conv != 0, B gathered from an NCHW image (implicit-GEMM
//           convolution: M = out channels of a group, N = OH*OW, K = Cin/groups*kh*kw).
//   gemv:   small M (decode): a team of 32 work-items per output column reads W rows with 16-byte loads.
// Epilogue: bias (per n, or per m for convolution), residual add (same layout as C), ReLU.
#ifndef TA
#define TA DT_F32
#endif
#ifndef TB
#define TB DT_F32
#endif
#ifndef TC
#define TC DT_F32
#endif
#define BM 64
#define BN 64
#define BK 16

// Index arithmetic in the tile loops: 32-bit when every operand has < 2^31 elements (-DIDX32).
#ifdef IDX32
typedef int idx_t;
#else
typedef long idx_t;
#endif

// d (gemm): [sam, sak, sbk, sbn, scm, scn, nb1, sa0, sa1, adiv, sb0, sb1, bdiv, sc0, sc1]
// d (conv): [C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, G, Kout]; ktab[k] = (c*H*W + r*dh*W + s*dw, r*dh, s*dw)
// Batch z of the output: its C offset, row stride and the bias channel of row 0.
inline long c_base(long z, int conv, __constant const long* d, long M) {
  if (conv) return ((z / d[13]) * d[14] + (z % d[13]) * M) * d[3] * d[4];
  return (z / d[6]) * d[13] + (z % d[6]) * d[14];
}
inline long c_rows(int conv, __constant const long* d) { return conv ? d[3] * d[4] : d[4]; }
inline long c_cols(int conv, __constant const long* d) { return conv ? 1 : d[5]; }
inline long bias_row0(long z, int conv, __constant const long* d, long M) { return conv ? (z % d[13]) * M : 0; }

// -DGQ_FMT=1 (q8_0) or 2 (q4_0): B is a linear layer's weight W [N, K] in packed blocks, in the
// device layout of gemv_q.cl (every block's codes, row after row: q8_0 32 signed bytes, q4_0 GGML's
// 16 bytes, value j in the low nibble of byte j and value j + 16 in the high one, code c standing
// for c - 8; then every block's f16 scale). The tiles dequantize it as they load: value = scale x
// code in f32 (core/quant.hpp's definition), rounded to the weight's storage type TB, so the
// products are those of the dequantized weight in that type, with no copy of it in memory.
#ifdef GQ_FMT
#if GQ_FMT == 1
#define GQ_CB 32
#else
#define GQ_CB 16
#endif
// W(n, k) as a float of type TB (k < 32 * ceil(K / 32): the last block's missing values are 0).
inline float gq_value(__global const uchar* W, long N, long K, long n, long k) {
  const long nb = (K + 31) / 32, i = n * nb + k / 32;
  const int j = (int)(k % 32);
  const float d = vload_half(i, (__global const half*)(W + N * nb * GQ_CB));
#if GQ_FMT == 1
  const float v = d * (float)((__global const char*)W)[i * 32 + j];
#else
  const uchar byte = W[i * 16 + (j % 16)];
  const float v = d * (float)((j < 16 ? (byte & 0xf) : (byte >> 4)) - 8);
#endif
  return round_to(v, TB);
}
#endif

// Work-item (tx, ty) computes rows m0 + ty + 16i and columns n0 + 4tx + j (i, j < 4). Group z is
// (batch, K split): with ksplit > 1 each split writes float partial sums to `part` and gemm_reduce
// adds them up and applies the epilogue (few output tiles, long K: batch-1 convolutions).
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void gemm(
    __global const uchar* ab, ulong ao, __global const uchar* bb, ulong bo, __global uchar* cb, ulong co,
    __global const uchar* biasb, ulong biaso, int biast, int bias_mode, __global const uchar* rb, ulong ro, int rt, int has_res, int relu,
    long M, long N, long K, __constant const long* d, int conv, __global const int4* ktab, int ksplit, long kchunk, __global float* part) {
  __local float As[BK][BM + 1];
  __local float Bs[BK][BN + 4];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const long m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  const long z = get_group_id(2) / ksplit, split = get_group_id(2) % ksplit;
  const long kbeg = split * kchunk, kend = min(K, kbeg + kchunk);
  __global const uchar* A = CGPTR(ab, ao);
  __global const uchar* B = CGPTR(bb, bo);
  long aoff, boff;
  idx_t sam, sak, sbk = 0, sbn = 0;
  // Convolution: this work-item always loads B column n0 + tid % 64; its window origin is fixed.
  idx_t cH = 0, cW = 0, ih0 = 0, iw0 = 0;
  int ncol_ok = 0;
  if (conv) {
    const long G = d[13], img = z / G, g = z % G, Cg = d[0] / G;
    cH = (idx_t)d[1], cW = (idx_t)d[2];
    aoff = g * M * K, sam = (idx_t)K, sak = 1;
    boff = (img * d[0] + g * Cg) * d[1] * d[2];
    const long n = n0 + tid % BN;
    ncol_ok = n < N;
    ih0 = (idx_t)((n / d[4]) * d[7] - d[9]), iw0 = (idx_t)((n % d[4]) * d[8] - d[10]);
  } else {
    sam = (idx_t)d[0], sak = (idx_t)d[1], sbk = (idx_t)d[2], sbn = (idx_t)d[3];
    const long nb1 = d[6], z0 = z / nb1, z1 = z % nb1;
    aoff = z0 * d[7] + (z1 / d[9]) * d[8];
    boff = z0 * d[10] + (z1 / d[12]) * d[11];
  }
  A += aoff * (TA == DT_F32 ? 4 : 2);
#ifndef GQ_FMT
  B += boff * (TB == DT_F32 ? 4 : 2);
#endif
  const int a_kfast = sak == 1, b_kfast = !conv && sbk == 1 && sbn != 1;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (long k0 = kbeg; k0 < kend; k0 += BK) {
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = a_kfast ? idx % BK : idx / BM, mm = a_kfast ? idx / BK : idx % BM;
      const long m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < kend) ? LD_T(TA, A, (idx_t)m * sam + (idx_t)k * sak) : 0.0f;
    }
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = b_kfast ? idx % BK : idx / BN, nn = b_kfast ? idx / BK : idx % BN;
      const long k = k0 + kk;
      float v = 0.0f;
      if (conv) {
        if (ncol_ok && k < kend) {
          const int4 t = ktab[k];
          const idx_t ih = ih0 + t.y, iw = iw0 + t.z;
          if (ih >= 0 && ih < cH && iw >= 0 && iw < cW) v = LD_T(TB, B, t.x + ih0 * cW + iw0);
        }
      } else {
        const long n = n0 + nn;
#ifdef GQ_FMT
        if (n < N && k < kend) v = gq_value(B, N, K, n, k);
#else
        if (n < N && k < kend) v = LD_T(TB, B, (idx_t)k * sbk + (idx_t)n * sbn);
#endif
      }
      Bs[kk][nn] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 b = vload4(0, &Bs[kk][tx * 4]);
      const float bv[4] = {b.x, b.y, b.z, b.w};
      for (int i = 0; i < 4; ++i) {
        const float a = As[kk][ty + 16 * i];
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a, bv[j], acc[i][j]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const long cofs = c_base(z, conv, d, M), scm = c_rows(conv, d), scn = c_cols(conv, d), brow = bias_row0(z, conv, d, M);
  __global uchar* C = GPTR(cb, co);
  for (int i = 0; i < 4; ++i) {
    const long m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const long n = n0 + tx * 4 + j;
      if (n >= N) continue;
      if (ksplit > 1) {
        part[((z * ksplit + split) * M + m) * N + n] = acc[i][j];
        continue;
      }
      const long off = cofs + m * scm + n * scn;
      ST_T(TC, C, off, epilogue(acc[i][j], brow + m, n, off, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu));
    }
  }
}

// Sums the K splits of gemm() and applies its epilogue; one work-item per (batch, m, n).
__kernel void gemm_reduce(__global const float* part, int ksplit, __global uchar* cb, ulong co, __global const uchar* biasb, ulong biaso, int biast,
                          int bias_mode, __global const uchar* rb, ulong ro, int rt, int has_res, int relu, long M, long N, long nbatch,
                          __constant const long* d, int conv) {
  const long i = get_global_id(0);
  if (i >= nbatch * M * N) return;
  const long n = i % N, m = (i / N) % M, z = i / (M * N);
  float v = 0.0f;
  for (int s = 0; s < ksplit; ++s) v += part[((z * ksplit + s) * M + m) * N + n];
  const long off = c_base(z, conv, d, M) + m * c_rows(conv, d) + n * c_cols(conv, d);
  ST_T(TC, GPTR(cb, co), off, epilogue(v, bias_row0(z, conv, d, M) + m, n, off, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu));
}

// gemm_reduce for a segmented gemm_mma (-DM_SEG): partials [split][M][N0 + N1 + N2]; column n goes
// to segment 0, 1 or 2 (its own output [M, Ns] and bias).
__kernel void gemm_reduce_seg(__global const float* part, int ksplit, long M, long n0, long n1, long n2, __global uchar* c0b, ulong c0o,
                              __global const uchar* s0b, ulong s0o, int s0t, int has0, __global uchar* c1b, ulong c1o, __global const uchar* s1b,
                              ulong s1o, int s1t, int has1, __global uchar* c2b, ulong c2o, __global const uchar* s2b, ulong s2o, int s2t, int has2) {
  const long ntot = n0 + n1 + n2, i = get_global_id(0);
  if (i >= M * ntot) return;
  const long m = i / ntot, c = i % ntot;
  float v = 0.0f;
  for (int s = 0; s < ksplit; ++s) v += part[(s * M + m) * ntot + c];
  long n = c, N = n0;
  __global uchar* cb = c0b;
  ulong co = c0o;
  __global const uchar* sb = s0b;
  ulong so = s0o;
  int st = s0t, has = has0;
  if (c >= n0 + n1) n = c - n0 - n1, N = n2, cb = c2b, co = c2o, sb = s2b, so = s2o, st = s2t, has = has2;
  else if (c >= n0) n = c - n0, N = n1, cb = c1b, co = c1o, sb = s1b, so = s1o, st = s1t, has = has1;
  if (has) v += ldf(CGPTR(sb, so), st, n);
  ST_T(TC, GPTR(cb, co), m * N + n, v);
}

//@pk+
// y[m, n] = sum_k x[m, k] * W[n, k] (+ epilogue), for GV_M rows (-DGV_M=<M>, M <= 4). One team of
// 32 work-items per n. With `gated`, a second weight W2 gives u[m, n] and y = silu(y) * u (the
// gate/up projections and SiLU*gate of an MLP in one pass over both weights).
#define GV_TEAM 32
#ifndef GV_U
#define GV_U 2
#endif
#ifndef GV_UB
#define GV_UB 6  // a row of 1536 in one batch
#endif
#define GV_WG 128
#ifndef GV_M
#define GV_M 1
#endif
inline void gv_fma8(const float* x, const float* w, float* acc) {
  for (int e = 0; e < 8; ++e) *acc = fma(x[e], w[e], *acc);
}
// The sum of v over a team of GV_TEAM items (lane 0's is the whole sum): a warp's shuffles on
// NVIDIA, else a tree in red (GV_WG floats); every item of the work-group calls it.
inline float gv_team_sum(float v, __local float* red) {
#ifdef NV_WARP
  return warp_sum(v);
#else
  const int lid = get_local_id(0), lane = lid % GV_TEAM;
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = GV_TEAM / 2; s > 0; s >>= 1) {
    if (lane < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[lid];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
#endif
}
// Up to three segments (the q/k/v projections of one input in one launch): rows [0, end0) use
// (W0, bias0, C0), [end0, end1) (W1, bias1, C1), [end1, end2) (W2, bias2, C2), each C row-major.
#define GV_PARAMS                                                                                                                         \
  __global const uchar *ab, ulong ao, long lda, __global const uchar *w0b, ulong w0o, __global const uchar *b0b, ulong b0o, int b0t, int hb0, \
      __global uchar *c0b, ulong c0o, long end0, __global const uchar *w1b, ulong w1o, __global const uchar *b1b, ulong b1o, int b1t,       \
      int hb1, __global uchar *c1b, ulong c1o, long end1, __global const uchar *w2b, ulong w2o, __global const uchar *b2b, ulong b2o,       \
      int b2t, int hb2, __global uchar *c2b, ulong c2o, long end2, __global const uchar *rb, ulong ro, int rt, int has_res, int relu,     \
      long K, int vec, __global const uchar *ub, ulong uo, int gated, __global const uchar *nwb, ulong nwo, int nwt, int has_norm,        \
      float eps, int mid_t
#define GV_PASS                                                                                                                       \
  ab, ao, lda, w0b, w0o, b0b, b0o, b0t, hb0, c0b, c0o, end0, w1b, w1o, b1b, b1o, b1t, hb1, c1b, c1o, end1, w2b, w2o, b2b, b2o, b2t, hb2, \
      c2b, c2o, end2, rb, ro, rt, has_res, relu, K, vec, ub, uo, gated, nwb, nwo, nwt, has_norm, eps, mid_t
// gemv_rope's epilogue (rope_d > 0; one row of x): the segments are the q, k and v projections
// of one token with heads of rope_d values; q and k are rotated (HF's rotate_half RoPE with
// cos[e], sin[e] of the token), q into C0, k and v into rows idx[0] of the caches K, V
// [1, heads, rope_s, rope_d] (fusion::LinearGroupRopeKv; the values and their rounding are
// rope_kv's, generic.cl). A work-group's 4 rows are two dims and their partners rope_d / 2 away.
#define GV_ROPE_PARAMS                                                                                                        \
  __global const uchar *rcb, ulong rco, int rct, __global const uchar *rsb, ulong rso, int rst, __global const uchar *rpb, ulong rpo, \
      int rpt, __global uchar *rkb, ulong rko, int rkt, __global uchar *rvb, ulong rvo, int rvt, int rqt, long rope_d, long rope_s,  \
      __global int *rerr, int rcode
#define GV_ROPE_PASS rcb, rco, rct, rsb, rso, rst, rpb, rpo, rpt, rkb, rko, rkt, rvb, rvo, rvt, rqt, rope_d, rope_s, rerr, rcode
// Where gemv_rope puts row n of segment seg: value y as stored, its partner's p (dim n -+ D/2).
inline void gv_rope_store(float y, float p, int seg, long n, __global uchar* c0b, ulong c0o, GV_ROPE_PARAMS) {
  const long e = n % rope_d, head = n / rope_d;
  float v = y;
  if (seg < 2) v = y * ldf(CGPTR(rcb, rco), rct, e) + (e < rope_d / 2 ? -p : p) * ldf(CGPTR(rsb, rso), rst, e);
  if (seg == 0) {
    stf(GPTR(c0b, c0o), rqt, n, v);
    return;
  }
  const long pv = ldi(CGPTR(rpb, rpo), rpt, 0), at = pv < 0 ? pv + rope_s : pv;
  if (at < 0 || at >= rope_s) report_index(rerr, rcode, pv);
  else if (seg == 1) stf(GPTR(rkb, rko), rkt, (head * rope_s + at) * rope_d + e, v);
  else stf(GPTR(rvb, rvo), rvt, (head * rope_s + at) * rope_d + e, v);
}
#define GV_NO_ROPE 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
// The body of both (TA, TB, TC as pk_ta, pk_tb, pk_tc in the persistent program).
inline void gemv_body(long gid, __local float* red, int pk_ta, int pk_tb, int pk_tc, GV_PARAMS, GV_ROPE_PARAMS) {
  const int lid = get_local_id(0), lane = lid % GV_TEAM;
  long row = gid * (GV_WG / GV_TEAM) + lid / GV_TEAM;
  const int seg = row < end0 ? 0 : row < end1 ? 1 : 2;
  const long start = seg == 0 ? 0 : seg == 1 ? end0 : end1, N = (seg == 0 ? end0 : seg == 1 ? end1 : end2) - start;
  if (rope_d > 0) {  // team t: dim 2w + (t & 1) of its head, in the first half (t < 2) or the second
    const int t = lid / GV_TEAM;
    const long rl = row - start;
    row = start + rl / rope_d * rope_d + (t >> 1) * (rope_d / 2) + (rl % rope_d) / 4 * 2 + (t & 1);
  }
  const long n = row - start, ldc = N;
  const long nn = row < end2 ? n : N - 1;
  __global const uchar* X = CGPTR(ab, ao);
  __global const uchar* W = seg == 0 ? CGPTR(w0b, w0o) : seg == 1 ? CGPTR(w1b, w1o) : CGPTR(w2b, w2o);
  __global const uchar* W2 = CGPTR(ub, uo);
  __global const uchar* biasb = seg == 0 ? CGPTR(b0b, b0o) : seg == 1 ? CGPTR(b1b, b1o) : CGPTR(b2b, b2o);
  const int biast = seg == 0 ? b0t : seg == 1 ? b1t : b2t, has_bias = seg == 0 ? hb0 : seg == 1 ? hb1 : hb2;
  __global uchar* cb = seg == 0 ? GPTR(c0b, c0o) : seg == 1 ? GPTR(c1b, c1o) : GPTR(c2b, c2o);
  const long ldw = K;
  float acc[GV_M], acc2[GV_M];
#pragma unroll
  for (int m = 0; m < GV_M; ++m) acc[m] = 0.0f, acc2[m] = 0.0f;
  const long wrow = nn * ldw;
  // bf16 weights in 16-byte words: the first batch of this row's words is requested before
  // anything else, so that the RMSNorm's reduction below runs while they arrive.
  const int bf_raw = vec && TB == DT_BF16;
  long k = lane * 8;
  uint4 wr[GV_UB], ur[GV_UB];
#define GV_LOAD_BATCH()                                                                      \
  do {                                                                                       \
    _Pragma("unroll") for (int c = 0; c < GV_UB; ++c) {                                     \
      const long kc = k + c * GV_TEAM * 8;                                                   \
      wr[c] = kc < K ? *(__global const uint4*)(W + (wrow + kc) * 2) : (uint4)(0u);          \
      if (gated) ur[c] = kc < K ? *(__global const uint4*)(W2 + (wrow + kc) * 2) : (uint4)(0u); \
    }                                                                                        \
  } while (0)
  if (bf_raw) GV_LOAD_BATCH();
  // With has_norm, x is an RMSNorm's input: x' = round(round(x * rsqrt(mean(x^2) + eps)) * w), as the
  // unfused model stores it; every work-group reduces its rows itself (no launch, no stored x').
  __global const uchar* NW = CGPTR(nwb, nwo);
  float inv[GV_M];
#pragma unroll
  for (int m = 0; m < GV_M; ++m) {
    inv[m] = 1.0f;
    if (!has_norm) continue;
    float ss = 0.0f;
    for (long kk = lid; kk < K; kk += GV_WG) {
      const float v = LD_T(TA, X, m * lda + kk);
      ss = fma(v, v, ss);
    }
    inv[m] = 1.0f / sqrt(group_reduce(ss, red, GV_WG, 0) / (float)K + eps);
  }
  const int nw_vec = has_norm && ((ulong)NW) % 16 == 0;  // the norm's weights in 16-byte loads too
#define GV_X8(m, k, x)                                                                         \
  do {                                                                                         \
    ld8(TA, X, (m) * lda + (k), x);                                                            \
    if (has_norm) {                                                                            \
      float nw_[8];                                                                            \
      if (nw_vec) ld8(nwt, NW, (k), nw_);                                                      \
      else for (int e_ = 0; e_ < 8; ++e_) nw_[e_] = ldf(NW, nwt, (k) + e_);                   \
      for (int e_ = 0; e_ < 8; ++e_) x[e_] = round_to(round_to(x[e_] * inv[m], mid_t) * nw_[e_], TA); \
    }                                                                                          \
  } while (0)
  if (vec) {
    // GV_U chunks of 8 per item in flight before the first is used (batch-1 GEMV is latency-bound);
    // bf16 weights stay raw 16-byte words until used, so GV_UB of them fit in registers (the last
    // batch of a row partly empty).
    if (bf_raw) {
      for (;;) {
        float x[8], f[8];
#pragma unroll
        for (int m = 0; m < GV_M; ++m)
#pragma unroll
          for (int c = 0; c < GV_UB; ++c) {
            const long kc = k + c * GV_TEAM * 8;
            if (kc >= K) break;
            GV_X8(m, kc, x);
            bf16x8(wr[c], f);
            gv_fma8(x, f, &acc[m]);
            if (gated) {
              bf16x8(ur[c], f);
              gv_fma8(x, f, &acc2[m]);
            }
          }
        k += GV_UB * GV_TEAM * 8;
        if (k >= K) break;
        GV_LOAD_BATCH();
      }
    }
    for (; k + (GV_U - 1) * GV_TEAM * 8 < K; k += GV_U * GV_TEAM * 8) {
      float w[GV_U][8], u[GV_U][8], x[8];
#pragma unroll
      for (int c = 0; c < GV_U; ++c) ld8(TB, W, wrow + k + c * GV_TEAM * 8, w[c]);
      if (gated) {
#pragma unroll
        for (int c = 0; c < GV_U; ++c) ld8(TB, W2, wrow + k + c * GV_TEAM * 8, u[c]);
#pragma unroll
        for (int m = 0; m < GV_M; ++m)
#pragma unroll
          for (int c = 0; c < GV_U; ++c) {
            GV_X8(m, k + c * GV_TEAM * 8, x);
            gv_fma8(x, w[c], &acc[m]), gv_fma8(x, u[c], &acc2[m]);
          }
      } else {
#pragma unroll
        for (int m = 0; m < GV_M; ++m)
#pragma unroll
          for (int c = 0; c < GV_U; ++c) {
            GV_X8(m, k + c * GV_TEAM * 8, x);
            gv_fma8(x, w[c], &acc[m]);
          }
      }
    }
    for (; k < K; k += GV_TEAM * 8) {
      float w0[8], u0[8], x[8];
      ld8(TB, W, wrow + k, w0);
      if (gated) ld8(TB, W2, wrow + k, u0);
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        GV_X8(m, k, x);
        gv_fma8(x, w0, &acc[m]);
        if (gated) gv_fma8(x, u0, &acc2[m]);
      }
    }
  } else {
    for (long kk = lane; kk < K; kk += GV_TEAM) {
      const float w = LD_T(TB, W, wrow + kk), u = gated ? LD_T(TB, W2, wrow + kk) : 0.0f;
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        float x = LD_T(TA, X, m * lda + kk);
        if (has_norm) x = round_to(round_to(x * inv[m], mid_t) * ldf(NW, nwt, kk), TA);
        acc[m] = fma(x, w, acc[m]);
        acc2[m] = fma(x, u, acc2[m]);
      }
    }
  }
  __global uchar* C = cb;
  float ry = 0.0f;
#pragma unroll
  for (int m = 0; m < GV_M; ++m) {
    float g = gv_team_sum(acc[m], red);
    if (gated) {
      // Each of gate and up is rounded to its stored type first, as the unfused model stores them.
      g = silu_gate_rounded(g, gv_team_sum(acc2[m], red), TC);
    }
    // rope: the projection as stored (rope_kv reads it so), rotated below.
    if (rope_d > 0) ry = round_to(epilogue(g, m, n, m * ldc + n, biasb, biast, has_bias, CGPTR(rb, ro), rt, has_res, relu), TC);
    else if (lane == 0 && row < end2) {
      const float v = epilogue(g, m, n, m * ldc + n, biasb, biast, has_bias, CGPTR(rb, ro), rt, has_res, relu);
      ST_T(TC, C, m * ldc + n, v);
    }
  }
  if (rope_d > 0) {  // (uniform in the work-group) its partner's value from the team 2 away
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0) red[lid / GV_TEAM] = ry;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && row < end2) gv_rope_store(ry, red[(lid / GV_TEAM) ^ 2], seg, n, c0b, c0o, GV_ROPE_PASS);
  }
}
PK_GROUP_FN(gemv, GV_WG) GV_PARAMS) {
  PK_LOCAL(float, red, GV_WG);
  gemv_body(PK_GROUP_ID, red, TA, TB, TC, GV_PASS, GV_NO_ROPE);
}
PK_GROUP_FN(gemv_rope, GV_WG) GV_PARAMS, GV_ROPE_PARAMS) {
  PK_LOCAL(float, red, GV_WG);
  gemv_body(PK_GROUP_ID, red, TA, TB, TC, GV_PASS, GV_ROPE_PASS);
}

//@pk-

// ---- tensor cores (NVIDIA, compute capability >= 8.0; built only with -DMMA=1) -----------------------
// gemm_mma: the same product, operands and epilogue as gemm(), on mma.sync.m16n8k16 with f32
// accumulation (inline PTX, which NVIDIA's OpenCL compiler passes to ptxas). A and B are both f16
// (MMA_T 1) or both bf16 (MMA_T 2), moved as 16-bit patterns. A is row-major along K (a(m, k) =
// A[m*sam + k*sak], sak 1 or any when avec = 0). B comes in one of three shapes (-DBMODE):
//   0  b(k, n) = B[n*sbn + k]: a linear layer's weight W[N, K], staged as W rows (ldmatrix);
//   1  b(k, n) = B[k*sbk + n*sbn]: any strided B, staged as K rows of N (ldmatrix.trans);
//   2  the implicit-GEMM convolution's image gather (as gemm() with conv != 0), staged as in 1;
//   3  a linear layer's weight in q8_0/q4_0 blocks (-DGQ_FMT, as gemm()), dequantized to MMA_T as
//      each 8-value chunk is loaded (a chunk never straddles a block: slices are whole blocks),
//      then staged as in 0.
// A work-group computes a BM x BN tile with (BM/WM) x (BN/WN) warps of WM x WN; K walks in slices
// of 32 through two local stages: the next slice is loaded into registers (16-byte loads where
// avec/bvec say rows are aligned, else element by element with bounds) while this one is
// multiplied. With -DM_ASYNC=1 (modes 0 and 1, rows 16-byte aligned: avec and bvec) the slices go
// straight from global to local memory instead, cp.async.cg (16 bytes, zero-filled past M, N or
// K) into M_STAGES local stages, M_STAGES - 1 slices in flight while one is multiplied, one barrier
// per slice. Out-of-range rows, columns and K are zero in the tiles, so any M, N, K works. Split-K
// (ksplit > 1) writes f32 partial sums to `part` in gemm()'s layout for gemm_reduce.
#ifdef MMA
#ifndef MMA_T
#define MMA_T DT_BF16
#endif
#ifndef BMODE
#define BMODE 0
#endif
#ifndef MBM
#define MBM 128
#endif
#ifndef MBN
#define MBN 128
#endif
#ifndef MWM
#define MWM 64
#endif
#ifndef MWN
#define MWN 32
#endif
#ifndef ASM_KW
#define ASM_KW asm
#endif
#define MBK 32
#ifndef M_ASYNC
#define M_ASYNC 0
#endif
#ifndef M_STAGES
#define M_STAGES 2
#endif
// -DM_SEG=1: more products of the same A in one launch (a linear_group's q/k/v): segment 0 is the
// (B, C, bias, N) of the arguments, segments 1 and 2 come last (N 0 where absent); the tiles of
// segment 0 come first along dimension 0, then 1's, then 2's, so every segment but the last has
// whole tiles (N % MBN == 0, the host's condition). -DM_GATE=1: C = silu(A B^T) * (A U^T) (an
// MLP's gate and up projections and its SiLU*gate, fusion::LinearSiluGate): each tile's B rows are
// MBN / 2 rows of B and the same rows of U, so a tile makes MBN / 2 columns of C; the up warps
// hand their sums to the gate warps through local memory. Both: BMODE 0, M_ASYNC, one batch; the
// segments' split-K partials go to gemm_reduce_seg; the gate without split-K, bias, residual or ReLU.
#ifndef M_SEG
#define M_SEG 0
#endif
#ifndef M_GATE
#define M_GATE 0
#endif
#if (M_SEG || M_GATE) && (BMODE != 0 || !M_ASYNC)
#error "gemm_mma: M_SEG and M_GATE need BMODE 0 and M_ASYNC"
#endif
// -DA_IM2COL=1: A is a channels-last (NHWC) convolution's implicit im2col matrix, gathered as the
// tiles load it: row m is output pixel (image, oh, ow) of M = images * OH * OW, column k = (r, s, c)
// of K = kh * kw * C (C % 8 == 0, so a 16-byte chunk is 8 channels of one tap), A(m, k) =
// x[image][oh * sh - ph + r'][ow * sw - pw + s'][c], zero outside the image; ktab[k / 8] holds the
// chunk's (element offset from the window origin, r', s') with the dilation applied. B is the weight
// reordered to [Cout][kh][kw][C] (mode 0), C the [M, Cout] output (NHWC), so the epilogue is a
// linear layer's. BMODE 0 and M_ASYNC only.
#ifndef A_IM2COL
#define A_IM2COL 0
#endif
#if A_IM2COL && (BMODE != 0 || !M_ASYNC || M_SEG || M_GATE)
#error "gemm_mma: A_IM2COL needs BMODE 0 and M_ASYNC, without segments or a gate"
#endif
#if M_SEG
#define M_XPARAMS                                                                                                           \
  , __global const uchar *b1b, ulong b1o, __global uchar *c1b, ulong c1o, __global const uchar *s1b, ulong s1o, int s1t, int has_s1, \
      long n1, __global const uchar *b2b, ulong b2o, __global uchar *c2b, ulong c2o, __global const uchar *s2b, ulong s2o, int s2t,  \
      int has_s2, long n2
#elif M_GATE
#define M_XPARAMS , __global const uchar *ub, ulong uo
#elif A_IM2COL
#define M_XPARAMS , int aH, int aW, int aC, int aOW, int aOHW, int ash, int asw, int aph, int apw
#else
#define M_XPARAMS
#endif
#if M_ASYNC && BMODE > 1
#error "cp.async staging takes A and B as 16-byte aligned rows (BMODE 0 or 1)"
#endif
#if M_STAGES == 2
#define M_PENDING 0
#elif M_STAGES == 3
#define M_PENDING 1
#elif M_STAGES == 4
#define M_PENDING 2
#else
#error "M_STAGES is 2, 3 or 4"
#endif
#define M_NT ((MBM / MWM) * (MBN / MWN) * 32)
#define M_MI (MWM / 16)
#define M_NI (MWN / 8)
#define M_LDK (MBK + 8)  // K-row tiles (A; B in mode 0): 80-byte rows, 8 rows of an 8x8 in 8 bank groups
#define M_LDN (MBN + 8)  // N-row tiles (B in modes 1, 2)
#define M_A_U16 (MBM * M_LDK)
#if BMODE == 0 || BMODE == 3
#define M_B_U16 (MBN * M_LDK)
#else
#define M_B_U16 (MBK * M_LDN)
#endif
#define M_STAGE_U16 (M_A_U16 + M_B_U16)
#define M_A_CH (MBM * MBK / 8)  // 16-byte chunks per slice
#define M_B_CH (MBN * MBK / 8)
#define M_A_PT ((M_A_CH + M_NT - 1) / M_NT)
#define M_B_PT ((M_B_CH + M_NT - 1) / M_NT)
#if BMODE != 0 && (M_NT % (MBN / 8)) != 0
#error "k-major B tiles need the work-group to cover whole tile rows"
#endif

#ifndef MMA_EMU
#if MMA_T == DT_F16
#define MMA_INSTR "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#else
#define MMA_INSTR "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#endif
#define MMA16816(c, a, b0, b1)                                                                                          \
  ASM_KW volatile(MMA_INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                               \
                  : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])                                                    \
                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]))
// ldmatrix x4: lane L gives the address of row L % 8 of matrix L / 8 (OFF(L): bytes from base).
#define LDSM_X4(r0, r1, r2, r3, base, OFF)                                                                     \
  ASM_KW volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) \
                  : "r"((base) + OFF(lane)) : "memory")
#define LDSM_X4_T(r0, r1, r2, r3, base, OFF)                                                                   \
  ASM_KW volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) \
                  : "r"((base) + OFF(lane)) : "memory")
// cp.async: 16 bytes from global to local memory, `bytes` of them read (16 or 0: zero-filled).
#define CP_ASYNC16(saddr, gptr, bytes) \
  ASM_KW volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(saddr), "l"((ulong)(gptr)), "r"(bytes) : "memory")
#define CP_COMMIT() ASM_KW volatile("cp.async.commit_group;" ::: "memory")
#define CP_WAIT_(n) ASM_KW volatile("cp.async.wait_group " #n ";" ::: "memory")
#define EMU_DECL
#else
// cp.async as a plain copy (the barrier after it in the pipeline makes it visible).
#define CP_ASYNC16(saddr, gptr, bytes) \
  (*(__local uint4*)((__local uchar*)smem + (saddr)) = (bytes) ? *(__global const uint4*)(gptr) : (uint4)(0u, 0u, 0u, 0u))
#define CP_COMMIT()
#define CP_WAIT_(n)
// MMA_EMU: the same instructions in portable OpenCL C, by their documented fragment layouts, so the
// kernel's tiling, addressing and epilogue run (slowly) on any device: ldmatrix reads what the lane
// that owns each row would have pointed at; mma.sync goes through a per-warp local tile, with
// work-group barriers (every call site is reached by the whole work-group).
inline float emu_h2f(ushort h) {
#if MMA_T == DT_F16
  return vload_half(0, (__private const half*)&h);
#else
  return bf2f(h);
#endif
}
#define EMU_DECL __local ushort emu_s[M_NT / 32][16 * 16 + 16 * 8];
#define EMU_LD32(addr) (*(__local const uint*)((__local const uchar*)smem + (addr)))
#define EMU_LD16(addr) ((uint)(*(__local const ushort*)((__local const uchar*)smem + (addr))))
// Non-transposed: lane i gets row i / 4, columns 2 (i % 4) and + 1 of each matrix q.
#define LDSM_X4(r0, r1, r2, r3, base, OFF)                               \
  {                                                                      \
    r0 = EMU_LD32((base) + OFF(0 * 8 + lane / 4) + (lane % 4) * 4);      \
    r1 = EMU_LD32((base) + OFF(1 * 8 + lane / 4) + (lane % 4) * 4);      \
    r2 = EMU_LD32((base) + OFF(2 * 8 + lane / 4) + (lane % 4) * 4);      \
    r3 = EMU_LD32((base) + OFF(3 * 8 + lane / 4) + (lane % 4) * 4);      \
  }
// Transposed: lane i gets rows 2 (i % 4) and + 1 of column i / 4.
#define EMU_T(q, base, OFF) \
  (EMU_LD16((base) + OFF((q) * 8 + 2 * (lane % 4)) + (lane / 4) * 2) | (EMU_LD16((base) + OFF((q) * 8 + 2 * (lane % 4) + 1) + (lane / 4) * 2) << 16))
#define LDSM_X4_T(r0, r1, r2, r3, base, OFF) \
  {                                          \
    r0 = EMU_T(0, base, OFF);                \
    r1 = EMU_T(1, base, OFF);                \
    r2 = EMU_T(2, base, OFF);                \
    r3 = EMU_T(3, base, OFF);                \
  }
// a: (g, 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..); b: (k 2t.., n g), (k 2t + 8.., n g);
// c: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1); g = lane / 4, t = lane % 4.
#define MMA16816(c, a, b0, b1)                                                                       \
  {                                                                                                  \
    __local ushort* ea = emu_s[lane_warp];                                                           \
    __local ushort* eb = ea + 256;                                                                   \
    const int g_ = lane / 4, t_ = lane % 4;                                                          \
    const uint av_[4] = {a[0], a[1], a[2], a[3]};                                                    \
    for (int q = 0; q < 4; ++q) {                                                                    \
      const int r_ = g_ + (q & 1) * 8, k_ = 2 * t_ + (q >> 1) * 8;                                   \
      ea[r_ * 16 + k_] = (ushort)(av_[q] & 0xffffu), ea[r_ * 16 + k_ + 1] = (ushort)(av_[q] >> 16);  \
    }                                                                                                \
    eb[(2 * t_) * 8 + g_] = (ushort)((b0) & 0xffffu), eb[(2 * t_ + 1) * 8 + g_] = (ushort)((b0) >> 16); \
    eb[(2 * t_ + 8) * 8 + g_] = (ushort)((b1) & 0xffffu), eb[(2 * t_ + 9) * 8 + g_] = (ushort)((b1) >> 16); \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
    for (int q = 0; q < 4; ++q) {                                                                    \
      const int r_ = g_ + (q >> 1) * 8, n_ = 2 * t_ + (q & 1);                                       \
      float s_ = 0.0f;                                                                               \
      for (int k_ = 0; k_ < 16; ++k_) s_ = fma(emu_h2f(ea[r_ * 16 + k_]), emu_h2f(eb[k_ * 8 + n_]), s_); \
      c[q] += s_;                                                                                    \
    }                                                                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  }
#endif
#define CP_WAIT(n) CP_WAIT_(n)

// A __local pointer as a 32-bit shared-window address (NVIDIA gives __local pointers in that
// window already; a generic address is converted).
#ifdef MMA_EMU
#define mma_smem_addr(p) 0u
#else
inline uint mma_smem_addr(__local const void* p) {
  uint r;
  const ulong g = (ulong)p;
  ASM_KW volatile("{ .reg .pred q; .reg .u64 a;\n\t"
                  "isspacep.shared q, %1;\n\t"
                  "@q cvta.to.shared.u64 a, %1;\n\t"
                  "@!q mov.u64 a, %1;\n\t"
                  "cvt.u32.u64 %0, a; }"
                  : "=r"(r)
                  : "l"(g));
  return r;
}
#endif

// 8 16-bit values p[(i0 + j) * s] for j < 8 with lim elements valid (zero past them).
inline uint4 mma_gather8(__global const ushort* p, long i0, long s, int lim) {
  ushort v[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = j < lim ? p[i0 + j * s] : (ushort)0;
  return (uint4)(v[0] | ((uint)v[1] << 16), v[2] | ((uint)v[3] << 16), v[4] | ((uint)v[5] << 16), v[6] | ((uint)v[7] << 16));
}

#if BMODE == 3
inline ushort gq_bits(float v) {
#if MMA_T == DT_BF16
  return f2bf(v);
#else
  ushort h;
  vstore_half_rte(v, 0, (__private half*)&h);
  return h;
#endif
}
// Values k .. k + 7 of W row n (k % 8 == 0) as MMA_T bits; vec: the codes' 8-byte loads are aligned.
inline uint4 gq_chunk8(__global const uchar* W, long N, long nb, long n, long k, int vec) {
  const long i = n * nb + k / 32;
  const int q = (int)(k % 32) / 8;
  const float d = vload_half(i, (__global const half*)(W + N * nb * GQ_CB));
#if GQ_FMT == 1
  __global const uchar* c = W + i * 32 + q * 8;
#else
  __global const uchar* c = W + i * 16 + (q & 1) * 8;
#endif
  const uint2 w = vec ? *(__global const uint2*)c : as_uint2(vload8(0, c));
  const uint u[2] = {w.x, w.y};
  ushort h[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint byte = (u[j / 4] >> (8 * (j % 4))) & 0xffu;
#if GQ_FMT == 1
    h[j] = gq_bits(d * (float)as_char((uchar)byte));
#else
    h[j] = gq_bits(d * (float)((int)(q >= 2 ? byte >> 4 : byte & 0xfu) - 8));
#endif
  }
  return (uint4)(h[0] | ((uint)h[1] << 16), h[2] | ((uint)h[3] << 16), h[4] | ((uint)h[5] << 16), h[6] | ((uint)h[7] << 16));
}
#endif

__kernel __attribute__((reqd_work_group_size(M_NT, 1, 1))) void gemm_mma(
    __global const uchar* ab, ulong ao, __global const uchar* bb, ulong bo, __global uchar* cb, ulong co,
    __global const uchar* biasb, ulong biaso, int biast, int bias_mode, __global const uchar* rb, ulong ro, int rt, int has_res, int relu,
    long M, long N, long K, __constant const long* d, int conv, __global const int4* ktab, int ksplit, long kchunk, __global float* part,
    int avec, int bvec M_XPARAMS) {
  __local uint4 smem[M_STAGES * M_STAGE_U16 / 8];
  EMU_DECL
  const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, lane_warp = warp;
  const int wm = warp / (MBN / MWN), wn = warp % (MBN / MWN);
  const long m0 = get_group_id(1) * MBM;
  long n0 = get_group_id(0) * MBN;
#if M_SEG
  // This tile's segment: its weight, output, bias and N replace segment 0's. Split-K partials are
  // [split][M][all segments' columns] (gemm_reduce_seg): this segment's first column there, pcol.
  const long ntot = N + n1 + n2;
  long pcol = 0;
  {
    const long t0 = (N + MBN - 1) / MBN, t1 = (n1 + MBN - 1) / MBN, gx = get_group_id(0);
    if (gx >= t0 + t1) {
      pcol = N + n1, n0 = (gx - t0 - t1) * MBN, bb = b2b, bo = b2o, cb = c2b, co = c2o, biasb = s2b, biaso = s2o, biast = s2t, bias_mode = has_s2, N = n2;
    } else if (gx >= t0) {
      pcol = N, n0 = (gx - t0) * MBN, bb = b1b, bo = b1o, cb = c1b, co = c1o, biasb = s1b, biaso = s1o, biast = s1t, bias_mode = has_s1, N = n1;
    }
  }
#else
  const long ntot = N, pcol = 0;
#endif
#if M_GATE
  const long nh0 = get_group_id(0) * (MBN / 2);  // the tile's first column of C (and row of B and of U)
  __global const ushort* U = (__global const ushort*)CGPTR(ub, uo);
#endif
  const long z = get_group_id(2) / ksplit, split = get_group_id(2) % ksplit;
  const long kbeg = split * kchunk, kend = min(K, kbeg + kchunk);
  const int ktiles = (int)((kend - kbeg + MBK - 1) / MBK);
  __global const ushort* A = (__global const ushort*)CGPTR(ab, ao);
  __global const ushort* B = (__global const ushort*)CGPTR(bb, bo);
  long sam, sak, sbk = 0, sbn = 0;
  if (BMODE == 2) {
    const long G = d[13], img = z / G, g = z % G, Cg = d[0] / G;
    A += g * M * K, sam = K, sak = 1;
    B += (img * d[0] + g * Cg) * d[1] * d[2];
  } else {
    sam = d[0], sak = d[1], sbk = d[2], sbn = d[3];
    const long nb1 = d[6], z0 = z / nb1, z1 = z % nb1;
    A += z0 * d[7] + (z1 / d[9]) * d[8];
    B += z0 * d[10] + (z1 / d[12]) * d[11];
  }
#if BMODE == 2
  // This work-item always loads the same 8 columns (tile rows are covered by whole work-groups):
  // their window origins, computed once; a column past N gets an origin that is never inside.
  const int nch = tid % (MBN / 8);
  int ih0[8], iw0[8];
  const int cH = (int)d[1], cW = (int)d[2];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const long n = n0 + nch * 8 + j;
    ih0[j] = n < N ? (int)((n / d[4]) * d[7] - d[9]) : -(1 << 29);
    iw0[j] = n < N ? (int)((n % d[4]) * d[8] - d[10]) : -(1 << 29);
  }
#endif
#if !M_ASYNC
  uint4 ra[M_A_PT], rbv[M_B_PT];
#endif
  // Loads slice kt of A (rows m0.., K from kbeg + kt*MBK) and B into registers.
#define M_LOAD(kt)                                                                                          \
  {                                                                                                         \
    const long kk0 = kbeg + (long)(kt) * MBK;                                                               \
    _Pragma("unroll") for (int i = 0; i < M_A_PT; ++i) {                                                    \
      const int c = tid + i * M_NT;                                                                         \
      if (M_A_CH % M_NT == 0 || c < M_A_CH) {                                                               \
        const long m = m0 + c / (MBK / 8), k = kk0 + (c % (MBK / 8)) * 8;                                   \
        const int lim = m < M ? (int)clamp(kend - k, 0L, 8L) : 0;                                          \
        ra[i] = (avec && lim == 8) ? *(__global const uint4*)(A + m * sam + k) : mma_gather8(A, m * sam + k * sak, sak, lim); \
      }                                                                                                     \
    }                                                                                                       \
    _Pragma("unroll") for (int i = 0; i < M_B_PT; ++i) {                                                    \
      const int c = tid + i * M_NT;                                                                         \
      if (M_B_CH % M_NT == 0 || c < M_B_CH) {                                                               \
        if (BMODE == 0 || BMODE == 3) {                                                                     \
          const long n = n0 + c / (MBK / 8), k = kk0 + (c % (MBK / 8)) * 8;                                 \
          M_LOAD_NK(i, n, k);                                                                               \
        } else {                                                                                            \
          const long k = kk0 + c / (MBN / 8), n = n0 + (c % (MBN / 8)) * 8;                                 \
          M_LOAD_KN(i, k, n);                                                                               \
        }                                                                                                   \
      }                                                                                                     \
    }                                                                                                       \
  }
#if BMODE == 3
  const long gq_nb = (K + 31) / 32;
  __global const uchar* W = CGPTR(bb, bo);
#define M_LOAD_NK(i, n, k) rbv[i] = (n) < N ? gq_chunk8(W, N, gq_nb, (n), (k), bvec) : (uint4)(0u, 0u, 0u, 0u)
#else
#define M_LOAD_NK(i, n, k)                                                                                \
  {                                                                                                       \
    const int lim = (n) < N ? (int)clamp(kend - (k), 0L, 8L) : 0;                                         \
    rbv[i] = (bvec && lim == 8) ? *(__global const uint4*)(B + (n) * sbn + (k)) : mma_gather8(B, (n) * sbn + (k) * sbk, sbk, lim); \
  }
#endif
#if BMODE == 1
#define M_LOAD_KN(i, k, n)                                                                                \
  {                                                                                                       \
    const int lim = k < kend ? (int)clamp(N - (n), 0L, 8L) : 0;                                           \
    rbv[i] = (bvec && lim == 8) ? *(__global const uint4*)(B + (k) * sbk + (n)) : mma_gather8(B, (k) * sbk + (n) * sbn, sbn, lim); \
  }
#elif BMODE == 2
#define M_LOAD_KN(i, k, n)                                                                                \
  {                                                                                                       \
    ushort v_[8];                                                                                         \
    const int4 t_ = (k) < kend ? ktab[k] : (int4)(0, -(1 << 29), 0, 0);                                  \
    _Pragma("unroll") for (int j = 0; j < 8; ++j) {                                                       \
      const int ih = ih0[j] + t_.y, iw = iw0[j] + t_.z;                                                   \
      v_[j] = (ih >= 0 && ih < cH && iw >= 0 && iw < cW) ? B[t_.x + ih0[j] * cW + iw0[j]] : (ushort)0;   \
    }                                                                                                     \
    rbv[i] = (uint4)(v_[0] | ((uint)v_[1] << 16), v_[2] | ((uint)v_[3] << 16), v_[4] | ((uint)v_[5] << 16), v_[6] | ((uint)v_[7] << 16)); \
  }
#else
#define M_LOAD_KN(i, k, n)
#endif
  // Stores the registers into local stage s.
#define M_STORE(s)                                                                                          \
  {                                                                                                         \
    __local ushort* st = (__local ushort*)smem + (s) * M_STAGE_U16;                                         \
    _Pragma("unroll") for (int i = 0; i < M_A_PT; ++i) {                                                    \
      const int c = tid + i * M_NT;                                                                         \
      if (M_A_CH % M_NT == 0 || c < M_A_CH) *(__local uint4*)(st + (c / (MBK / 8)) * M_LDK + (c % (MBK / 8)) * 8) = ra[i]; \
    }                                                                                                       \
    _Pragma("unroll") for (int i = 0; i < M_B_PT; ++i) {                                                    \
      const int c = tid + i * M_NT;                                                                         \
      if (M_B_CH % M_NT == 0 || c < M_B_CH) {                                                               \
        if (BMODE == 0 || BMODE == 3) *(__local uint4*)(st + M_A_U16 + (c / (MBK / 8)) * M_LDK + (c % (MBK / 8)) * 8) = rbv[i]; \
        else *(__local uint4*)(st + M_A_U16 + (c / (MBN / 8)) * M_LDN + (c % (MBN / 8)) * 8) = rbv[i];          \
      }                                                                                                     \
    }                                                                                                       \
  }

  float acc[M_MI][M_NI][4];
#pragma unroll
  for (int i = 0; i < M_MI; ++i)
#pragma unroll
    for (int j = 0; j < M_NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  // Fragment addresses: OFF(L) is the byte offset, from a stage's start, of the row lane L points
  // ldmatrix at. A: row L % 16, k half L / 16 (matrices a0..a3). B mode 0: W row (L / 16) * 8 + L % 8,
  // k half (L / 8) % 2; modes 1, 2: K row ((L / 8) % 2) * 8 + L % 8, N half L / 16, transposed on
  // load. Either way B's four 8x8 matrices are (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
  // (n 8-15, k 8-15): b0, b1 of two n8 blocks.
  const uint sbase = mma_smem_addr(smem);
#define A_OFF(L) ((uint)(((wm * MWM + ((L) & 15)) * M_LDK + ((L) >> 4) * 8) * 2))
#if BMODE == 0 || BMODE == 3
#define B_OFF(L) ((uint)((M_A_U16 + (wn * MWN + ((L) >> 4) * 8 + ((L) & 7)) * M_LDK + (((L) >> 3) & 1) * 8) * 2))
#define M_B_KSTEP 32u                       /* 16 k to the right */
#define M_B_JSTEP ((uint)(16 * M_LDK * 2))  /* 16 n down */
#define LDSM_B LDSM_X4
#else
#define B_OFF(L) ((uint)((M_A_U16 + ((((L) >> 3) & 1) * 8 + ((L) & 7)) * M_LDN + wn * MWN + ((L) >> 4) * 8) * 2))
#define M_B_KSTEP ((uint)(16 * M_LDN * 2))  /* 16 k down */
#define M_B_JSTEP 32u                       /* 16 n to the right */
#define LDSM_B LDSM_X4_T
#endif
#define M_COMPUTE(s)                                                                                        \
  {                                                                                                         \
    const uint st = sbase + (uint)((s) * M_STAGE_U16 * 2);                                                  \
    _Pragma("unroll") for (int kk = 0; kk < MBK / 16; ++kk) {                                               \
      uint af[M_MI][4], bfr[M_NI][2];                                                                       \
      _Pragma("unroll") for (int i = 0; i < M_MI; ++i)                                                      \
        LDSM_X4(af[i][0], af[i][1], af[i][2], af[i][3], st + (uint)(i * 16 * M_LDK * 2 + kk * 32), A_OFF);  \
      _Pragma("unroll") for (int j = 0; j < M_NI / 2; ++j)                                                  \
        LDSM_B(bfr[2 * j][0], bfr[2 * j][1], bfr[2 * j + 1][0], bfr[2 * j + 1][1], st + (uint)j * M_B_JSTEP + (uint)kk * M_B_KSTEP, B_OFF); \
      _Pragma("unroll") for (int i = 0; i < M_MI; ++i)                                                      \
        _Pragma("unroll") for (int j = 0; j < M_NI; ++j) MMA16816(acc[i][j], af[i], bfr[j][0], bfr[j][1]);  \
    }                                                                                                       \
  }

#if M_ASYNC
  // Each work-item copies the same chunks of every slice: their rows' sources (at the chunk's K
  // offset) and local offsets, computed once. A row past M or N reads nothing (zero-filled), as
  // does a chunk past K (K % 8 == 0 here: a 16-byte chunk is all in range or all out).
  __global const ushort* b_src[M_B_PT];
  uint a_dst[M_A_PT], b_dst[M_B_PT];
  int b_k[M_B_PT];
#if A_IM2COL
  // Each chunk's row: its pixel's window origin and the origin's element offset (outside the
  // image where the padding is; only a tap inside it is read). A row past M never is.
  long a_off[M_A_PT];
  int a_ih[M_A_PT], a_iw[M_A_PT], a_ch[M_A_PT];
#pragma unroll
  for (int i = 0; i < M_A_PT; ++i) {
    const int c = min(tid + i * M_NT, M_A_CH - 1), r = c / (MBK / 8), ch = c % (MBK / 8);
    const long m = m0 + r;
    const int img = (int)(m / aOHW), p = (int)(m % aOHW), ih = (p / aOW) * ash - aph, iw = (p % aOW) * asw - apw;
    a_ih[i] = m < M ? ih : -(1 << 29), a_iw[i] = iw, a_ch[i] = ch;
    a_off[i] = (((long)img * aH + ih) * aW + iw) * aC;
    a_dst[i] = (uint)((r * M_LDK + ch * 8) * 2);
  }
#else
  __global const ushort* a_src[M_A_PT];
  int a_k[M_A_PT];
#pragma unroll
  for (int i = 0; i < M_A_PT; ++i) {
    const int c = min(tid + i * M_NT, M_A_CH - 1), r = c / (MBK / 8), ch = c % (MBK / 8);
    const long m = m0 + r;
    a_src[i] = m < M ? A + m * sam + kbeg + ch * 8 : A;
    a_k[i] = m < M ? ch * 8 : INT_MAX;  // past every slice's end when the row is out
    a_dst[i] = (uint)((r * M_LDK + ch * 8) * 2);
  }
#endif
#pragma unroll
  for (int i = 0; i < M_B_PT; ++i) {
#if BMODE == 0  // W rows: row r of the tile is column n0 + r, chunk ch its K offset
    const int c = min(tid + i * M_NT, M_B_CH - 1), r = c / (MBK / 8), ch = c % (MBK / 8);
#if M_GATE  // rows MBN / 2 .. of the tile are U's rows of the same columns
    const int up_row = r >= MBN / 2;
    const long n = nh0 + r - up_row * (MBN / 2);
    b_src[i] = n < N ? (up_row ? U : B) + n * sbn + kbeg + ch * 8 : B;
#else
    const long n = n0 + r;
    b_src[i] = n < N ? B + n * sbn + kbeg + ch * 8 : B;
#endif
    b_k[i] = n < N ? ch * 8 : INT_MAX;
    b_dst[i] = (uint)((M_A_U16 + r * M_LDK + ch * 8) * 2);
#else  // K rows: row r of the tile is K offset r, chunk ch columns n0 + 8 ch .. + 7 (N % 8 == 0)
    const int c = min(tid + i * M_NT, M_B_CH - 1), r = c / (MBN / 8), ch = c % (MBN / 8);
    const long n = n0 + ch * 8;
    b_src[i] = n < N ? B + (kbeg + r) * sbk + n : B;
    b_k[i] = n < N ? r : INT_MAX;
    b_dst[i] = (uint)((M_A_U16 + r * M_LDN + ch * 8) * 2);
#endif
  }
#if BMODE == 0
#define M_BSTEP 1
#else
#define M_BSTEP sbk
#endif
  const long klen = kend - kbeg;
#if defined(M_NOZF) && !defined(MMA_EMU)
  // Every tile full (the host says so: whole rows, columns and K slices): plain 16-byte copies.
#define M_CP(dst, src, ok, base) ASM_KW volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"((ulong)(src)) : "memory")
#else
#define M_CP(dst, src, ok, base)                       \
  {                                                    \
    const int ok_ = (ok);                              \
    CP_ASYNC16(dst, ok_ ? (src) : (base), ok_ ? 16u : 0u); \
  }
#endif
  // Row chunk i of A at K offset k0 (from kbeg) into local address dst.
#if A_IM2COL
#define M_A_CP(dst, i, k0)                                                                                 \
  {                                                                                                        \
    const int okk_ = (long)(k0) + a_ch[i] * 8 < klen;                                                      \
    const int4 t_ = okk_ ? ktab[(kbeg + (k0)) / 8 + a_ch[i]] : (int4)(0, -(1 << 29), 0, 0);                \
    const int ih_ = a_ih[i] + t_.y, iw_ = a_iw[i] + t_.z;                                                  \
    const int ok_ = (uint)ih_ < (uint)aH && (uint)iw_ < (uint)aW;                                          \
    CP_ASYNC16(dst, ok_ ? A + (a_off[i] + t_.x) : A, ok_ ? 16u : 0u);                                      \
  }
#else
#define M_A_CP(dst, i, k0) M_CP(dst, a_src[i] + (k0), (long)(k0) + a_k[i] < klen, A)
#endif
  // Slice kt into local stage s.
#define M_ASYNC_LOAD(s, kt)                                                                                 \
  {                                                                                                         \
    const uint st_ = sbase + (uint)((s) * M_STAGE_U16 * 2);                                                 \
    const int k0_ = (kt) * MBK;                                                                             \
    _Pragma("unroll") for (int i = 0; i < M_A_PT; ++i) if (M_A_CH % M_NT == 0 || tid + i * M_NT < M_A_CH) { \
      M_A_CP(st_ + a_dst[i], i, k0_);                                                                       \
    }                                                                                                       \
    _Pragma("unroll") for (int i = 0; i < M_B_PT; ++i) if (M_B_CH % M_NT == 0 || tid + i * M_NT < M_B_CH) { \
      M_CP(st_ + b_dst[i], b_src[i] + k0_ * M_BSTEP, (long)k0_ + b_k[i] < klen, B);                         \
    }                                                                                                       \
  }
  // M_STAGES - 1 slices in flight; the barrier after slice kt has landed also says every warp is
  // done with slice kt - 1, whose stage the next load overwrites.
#pragma unroll
  for (int s = 0; s < M_STAGES - 1; ++s) {
    if (s < ktiles) M_ASYNC_LOAD(s, s);
    CP_COMMIT();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    CP_WAIT(M_PENDING);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int nx = kt + M_STAGES - 1;
    if (nx < ktiles) M_ASYNC_LOAD(nx % M_STAGES, nx);
    CP_COMMIT();
    M_COMPUTE(kt % M_STAGES);
  }
#else
  if (ktiles > 0) {
    M_LOAD(0);
    M_STORE(0);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + 1 < ktiles) M_LOAD(kt + 1);
    M_COMPUTE(kt & 1);
    if (kt + 1 < ktiles) M_STORE((kt + 1) & 1);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif

  // acc[i][j]: rows (lane / 4) and + 8, columns 2 * (lane % 4) and + 1 of its 16 x 8 block.
#if M_SEG
  const long cofs = 0, scm = N, scn = 1, brow = 0;  // each segment's C is [M, N] (one batch)
#else
  const long cofs = c_base(z, conv, d, M), scm = c_rows(conv, d), scn = c_cols(conv, d), brow = bias_row0(z, conv, d, M);
#endif
  __global uchar* C = GPTR(cb, co);
  // Each work-item holds pairs of adjacent columns (acc[i][j][2h], [2h + 1]: row + 8h, columns n, n + 1),
  // stored as one 4-byte (16-bit C) or 8-byte (f32 C, split-K partials) word where the columns are
  // contiguous and the pair aligned. Three loops, each as lean as its case allows (split-K partials;
  // no bias, residual or ReLU; the general epilogue): the store loop runs about as many instructions
  // as the K loop, and one general loop for every case made the lm_head 1.6x slower (543 against
  // 332 us on an H200; docs/benchmarks.md).
  const int pairs = scn == 1 && (cofs % 2) == 0 && (scm % 2) == 0 && (co % (TC == DT_F32 ? 8 : 4)) == 0;
#define M_EPI_LOOP(BODY)                                                                                       \
  _Pragma("unroll") for (int i = 0; i < M_MI; ++i) _Pragma("unroll") for (int j = 0; j < M_NI; ++j)             \
      _Pragma("unroll") for (int h = 0; h < 2; ++h) {                                                          \
    const long m = m0 + wm * MWM + i * 16 + (lane >> 2) + h * 8, n = n0 + wn * MWN + j * 8 + (lane & 3) * 2;     \
    if (m >= M || n >= N) continue;                                                                            \
    const float a0 = acc[i][j][2 * h], a1 = acc[i][j][2 * h + 1];                                              \
    const int both = n + 1 < N;                                                                                \
    BODY                                                                                                       \
  }
#if TC == DT_F32
#define M_ST2(off, v0, v1) (*(__global float2*)(C + (off) * 4) = (float2)((v0), (v1)))
#elif TC == DT_BF16
#define M_ST2(off, v0, v1) (*(__global uint*)(C + (off) * 2) = (uint)f2bf(v0) | ((uint)f2bf(v1) << 16))
#else
#define M_ST2(off, v0, v1) vstore_half2_rte((float2)((v0), (v1)), 0, (__global half*)(C + (off) * 2))
#endif
  // Stores the pair (v0, v1) at off and off + scn (v1 only where both).
#define M_STORE_PAIR(off, v0, v1)  \
  if (both && pairs) {             \
    M_ST2(off, v0, v1);            \
  } else {                         \
    ST_T(TC, C, off, v0);          \
    if (both) ST_T(TC, C, (off) + scn, v1); \
  }
#if M_GATE
  {
    // The up warps (columns MBN / 2 .. of the tile) put their sums in local memory, once every
    // warp is done with the last stage; the gate warps then hold both values of their columns.
#define M_GU_LD (MBN / 2 + 4)
    __local float* upv = (__local float*)smem;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int up_warp = wn * MWN >= MBN / 2;
    if (up_warp) {
#pragma unroll
      for (int i = 0; i < M_MI; ++i)
#pragma unroll
        for (int j = 0; j < M_NI; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            upv[(wm * MWM + i * 16 + (lane >> 2) + (r >> 1) * 8) * M_GU_LD + wn * MWN - MBN / 2 + j * 8 + (lane & 3) * 2 + (r & 1)] = acc[i][j][r];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (up_warp) return;
    n0 = nh0;  // M_EPI_LOOP's columns: the gate warps' own
    M_EPI_LOOP({
      __local const float* u = upv + (m - m0) * M_GU_LD + (n - nh0);
      const long off = m * scm + n;
      M_STORE_PAIR(off, silu_gate_rounded(a0, u[0], TC), silu_gate_rounded(a1, u[1], TC))
    })
    return;
  }
#endif
  if (ksplit > 1) {
    const int pair_part = (ntot % 2) == 0 && (pcol % 2) == 0;
    M_EPI_LOOP({
      const long at = ((z * ksplit + split) * M + m) * ntot + pcol + n;
      if (both && pair_part) {
        *(__global float2*)(part + at) = (float2)(a0, a1);
      } else {
        part[at] = a0;
        if (both) part[at + 1] = a1;
      }
    })
    return;
  }
  if (!bias_mode && !has_res && !relu) {
    M_EPI_LOOP({
      const long off = cofs + m * scm + n * scn;
      M_STORE_PAIR(off, a0, a1)
    })
    return;
  }
  M_EPI_LOOP({
    const long off = cofs + m * scm + n * scn;
    const float v0 = epilogue(a0, brow + m, n, off, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu);
    const float v1 = both ? epilogue(a1, brow + m, n + 1, off + scn, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu) : 0.0f;
    M_STORE_PAIR(off, v0, v1)
  })
}

// The capability probe: one 16 x 16 x 16 product two ways (B as W rows through ldmatrix, B as K rows
// through ldmatrix.trans), for MMA_T, 32 work-items, A staged by cp.async. c[0..255] and
// c[256..511] must both equal a * w^T exactly for the small integers the host passes.
#ifndef MMA_EMU
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_probe(__global const ushort* a, __global const ushort* w,
                                                                        __global const ushort* bkn, __global float* c) {
  // 16-byte aligned: ldmatrix reads 16-byte rows, and a plain __local ushort array is only 2-byte
  // aligned (on an H100 the unaligned probe faulted with CL_OUT_OF_RESOURCES; tools/device/mma_probe).
  __local ushort sa[16 * 24] __attribute__((aligned(16))), sw[16 * 24] __attribute__((aligned(16))),
      sb[16 * 24] __attribute__((aligned(16)));
  const int lane = get_local_id(0);
  // a arrives through cp.async (the M_ASYNC staging): lane L copies 16 bytes, half of row L / 2.
  CP_ASYNC16(mma_smem_addr(sa) + (uint)(((lane >> 1) * 24 + (lane & 1) * 8) * 2), a + (lane >> 1) * 16 + (lane & 1) * 8, 16u);
  CP_COMMIT();
  for (int e = lane; e < 256; e += 32) sw[(e / 16) * 24 + e % 16] = w[e], sb[(e / 16) * 24 + e % 16] = bkn[e];
  CP_WAIT(0);
  barrier(CLK_LOCAL_MEM_FENCE);
#define PA_OFF(L) ((uint)(((((L) & 15)) * 24 + ((L) >> 4) * 8) * 2))
#define PW_OFF(L) ((uint)((((L) >> 4) * 8 + ((L) & 7)) * 24 + (((L) >> 3) & 1) * 8) * 2)
#define PB_OFF(L) ((uint)((((((L) >> 3) & 1) * 8 + ((L) & 7)) * 24 + ((L) >> 4) * 8) * 2))
  uint af[4], b0[4], b1[4];
  LDSM_X4(af[0], af[1], af[2], af[3], mma_smem_addr(sa), PA_OFF);
  LDSM_X4(b0[0], b0[1], b0[2], b0[3], mma_smem_addr(sw), PW_OFF);
  LDSM_X4_T(b1[0], b1[1], b1[2], b1[3], mma_smem_addr(sb), PB_OFF);
  for (int way = 0; way < 2; ++way) {
    const uint* bf = way ? b1 : b0;
    for (int j = 0; j < 2; ++j) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      MMA16816(acc, af, bf[2 * j], bf[2 * j + 1]);
      for (int r = 0; r < 4; ++r) c[way * 256 + ((lane >> 2) + (r >> 1) * 8) * 16 + j * 8 + (lane & 3) * 2 + (r & 1)] = acc[r];
    }
  }
}
#endif
#endif  // MMA
