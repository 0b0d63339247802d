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

inline float epilogue(float v, long m, long n, long coff, __global const uchar* bias, int bt, int bias_mode, __global const uchar* res,
                      int rt, int has_res, int relu) {
  if (bias_mode == 1) v += ldf(bias, bt, n);
  else if (bias_mode == 2) v += ldf(bias, bt, m);
  if (has_res) v += ldf(res, rt, coff);
  if (relu) v = fmax(v, 0.0f);
  return v;
}

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
  B += boff * (TB == DT_F32 ? 4 : 2);
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
        if (n < N && k < kend) v = LD_T(TB, B, (idx_t)k * sbk + (idx_t)n * sbn);
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

// y[m, n] = sum_k x[m, k] * W[n, k] (+ epilogue), for GV_M rows (-DGV_M=<M>, M <= 4). One team of
// 32 work-items per n. With `gated`, a second weight W2 gives u[m, n] and y = silu(y) * u (the
// gate/up projections and SiLU*gate of an MLP in one pass over both weights).
#define GV_TEAM 32
#define GV_WG 128
#ifndef GV_M
#define GV_M 1
#endif
inline void gv_fma8(const float* x, const float* w, float* acc) {
  for (int e = 0; e < 8; ++e) *acc = fma(x[e], w[e], *acc);
}
// Up to three segments (the q/k/v projections of one input in one launch): rows [0, end0) use
// (W0, bias0, C0), [end0, end1) (W1, bias1, C1), [end1, end2) (W2, bias2, C2), each C row-major.
__kernel __attribute__((reqd_work_group_size(GV_WG, 1, 1))) void gemv(
    __global const uchar* ab, ulong ao, long lda,
    __global const uchar* w0b, ulong w0o, __global const uchar* b0b, ulong b0o, int b0t, int hb0, __global uchar* c0b, ulong c0o, long end0,
    __global const uchar* w1b, ulong w1o, __global const uchar* b1b, ulong b1o, int b1t, int hb1, __global uchar* c1b, ulong c1o, long end1,
    __global const uchar* w2b, ulong w2o, __global const uchar* b2b, ulong b2o, int b2t, int hb2, __global uchar* c2b, ulong c2o, long end2,
    __global const uchar* rb, ulong ro, int rt, int has_res, int relu, long K, int vec, __global const uchar* ub, ulong uo, int gated,
    __global const uchar* nwb, ulong nwo, int nwt, int has_norm, float eps, int mid_t) {
  __local float red[GV_WG];
  const int lid = get_local_id(0), lane = lid % GV_TEAM;
  const long row = get_group_id(0) * (GV_WG / GV_TEAM) + lid / GV_TEAM;
  const int seg = row < end0 ? 0 : row < end1 ? 1 : 2;
  const long start = seg == 0 ? 0 : seg == 1 ? end0 : end1, N = (seg == 0 ? end0 : seg == 1 ? end1 : end2) - start;
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
  // With has_norm, x is an RMSNorm's input: x' = round(round(x * rsqrt(mean(x^2) + eps)) * w), as the
  // unfused model stores it; every work-group reduces its rows itself (no launch, no stored x').
  __global const uchar* NW = CGPTR(nwb, nwo);
  float inv[GV_M];
#pragma unroll
  for (int m = 0; m < GV_M; ++m) {
    inv[m] = 1.0f;
    if (!has_norm) continue;
    float ss = 0.0f;
    for (long k = lid; k < K; k += GV_WG) {
      const float v = LD_T(TA, X, m * lda + k);
      ss = fma(v, v, ss);
    }
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GV_WG / 2; s > 0; s >>= 1) {
      if (lid < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    inv[m] = 1.0f / sqrt(red[0] / (float)K + eps);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#define GV_X8(m, k, x)                                                                         \
  do {                                                                                         \
    ld8(TA, X, (m) * lda + (k), x);                                                            \
    if (has_norm)                                                                              \
      for (int e_ = 0; e_ < 8; ++e_) x[e_] = round_to(round_to(x[e_] * inv[m], mid_t) * ldf(NW, nwt, (k) + e_), TA); \
  } while (0)
  if (vec) {
    long k = lane * 8;
    for (; k + GV_TEAM * 8 < K; k += 2 * GV_TEAM * 8) {
      float w0[8], w1[8], x[8];
      ld8(TB, W, wrow + k, w0);
      ld8(TB, W, wrow + k + GV_TEAM * 8, w1);
      if (gated) {
        float u0[8], u1[8];
        ld8(TB, W2, wrow + k, u0);
        ld8(TB, W2, wrow + k + GV_TEAM * 8, u1);
#pragma unroll
        for (int m = 0; m < GV_M; ++m) {
          GV_X8(m, k, x);
          gv_fma8(x, w0, &acc[m]), gv_fma8(x, u0, &acc2[m]);
          GV_X8(m, k + GV_TEAM * 8, x);
          gv_fma8(x, w1, &acc[m]), gv_fma8(x, u1, &acc2[m]);
        }
      } else {
#pragma unroll
        for (int m = 0; m < GV_M; ++m) {
          GV_X8(m, k, x);
          gv_fma8(x, w0, &acc[m]);
          GV_X8(m, k + GV_TEAM * 8, x);
          gv_fma8(x, w1, &acc[m]);
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
    for (long k = lane; k < K; k += GV_TEAM) {
      const float w = LD_T(TB, W, wrow + k), u = gated ? LD_T(TB, W2, wrow + k) : 0.0f;
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        float x = LD_T(TA, X, m * lda + k);
        if (has_norm) x = round_to(round_to(x * inv[m], mid_t) * ldf(NW, nwt, k), TA);
        acc[m] = fma(x, w, acc[m]);
        acc2[m] = fma(x, u, acc2[m]);
      }
    }
  }
  __global uchar* C = cb;
#pragma unroll
  for (int m = 0; m < GV_M; ++m) {
    red[lid] = acc[m];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GV_TEAM / 2; s > 0; s >>= 1) {
      if (lane < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    float g = red[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (gated) {
      red[lid] = acc2[m];
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int s = GV_TEAM / 2; s > 0; s >>= 1) {
        if (lane < s) red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      // Each of gate and up is rounded to its stored type first, as the unfused model stores them.
      g = round_to(g, TC);
      g = g / (1.0f + exp(-g));
      g = round_to(g, TC) * round_to(red[lid], TC);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && row < end2) {
      const float v = epilogue(g, m, n, m * ldc + n, biasb, biast, has_bias, CGPTR(rb, ro), rt, has_res, relu);
      ST_T(TC, C, m * ldc + n, v);
    }
  }
}
