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
// Work-item (tx, ty) computes rows m0 + 4ty + i and columns n0 + 4tx + j (i, j < 4).
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void gemm(
    __global const uchar* ab, ulong ao, __global const uchar* bb, ulong bo, __global uchar* cb, ulong co,
    __global const uchar* biasb, ulong biaso, int biast, int bias_mode, __global const uchar* rb, ulong ro, int rt, int has_res, int relu,
    long M, long N, long K, __constant const long* d, int conv, __global const int4* ktab) {
  __local float As[BK][BM + 4];
  __local float Bs[BK][BN + 4];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const long m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  const long z = get_group_id(2);
  __global const uchar* A = CGPTR(ab, ao);
  __global const uchar* B = CGPTR(bb, bo);
  long aoff, boff, cofs, scm, scn;
  idx_t sam, sak, sbk = 0, sbn = 0;
  // Convolution: this work-item always loads B column n0 + tid % 64; its window origin is fixed.
  idx_t cH = 0, cW = 0, ih0 = 0, iw0 = 0;
  int ncol_ok = 0;
  if (conv) {
    const long G = d[13], Kout = d[14], img = z / G, g = z % G, Cg = d[0] / G, OHW = d[3] * d[4];
    cH = (idx_t)d[1], cW = (idx_t)d[2];
    aoff = g * M * K, sam = (idx_t)K, sak = 1;
    boff = (img * d[0] + g * Cg) * d[1] * d[2];
    cofs = (img * Kout + g * M) * OHW, scm = OHW, scn = 1;
    const long n = n0 + tid % BN;
    ncol_ok = n < N;
    ih0 = (idx_t)((n / d[4]) * d[7] - d[9]), iw0 = (idx_t)((n % d[4]) * d[8] - d[10]);
  } else {
    sam = (idx_t)d[0], sak = (idx_t)d[1], sbk = (idx_t)d[2], sbn = (idx_t)d[3], scm = d[4], scn = d[5];
    const long nb1 = d[6], z0 = z / nb1, z1 = z % nb1;
    aoff = z0 * d[7] + (z1 / d[9]) * d[8];
    boff = z0 * d[10] + (z1 / d[12]) * d[11];
    cofs = z0 * d[13] + z1 * d[14];
  }
  A += aoff * (TA == DT_F32 ? 4 : 2);
  B += boff * (TB == DT_F32 ? 4 : 2);
  const int a_kfast = sak == 1, b_kfast = !conv && sbk == 1 && sbn != 1;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (long k0 = 0; k0 < K; k0 += BK) {
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = a_kfast ? idx % BK : idx / BM, mm = a_kfast ? idx / BK : idx % BM;
      const long m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? LD_T(TA, A, (idx_t)m * sam + (idx_t)k * sak) : 0.0f;
    }
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = b_kfast ? idx % BK : idx / BN, nn = b_kfast ? idx / BK : idx % BN;
      const long k = k0 + kk;
      float v = 0.0f;
      if (conv) {
        if (ncol_ok && k < K) {
          const int4 t = ktab[k];
          const idx_t ih = ih0 + t.y, iw = iw0 + t.z;
          if (ih >= 0 && ih < cH && iw >= 0 && iw < cW) v = LD_T(TB, B, t.x + ih0 * cW + iw0);
        }
      } else {
        const long n = n0 + nn;
        if (n < N && k < K) v = LD_T(TB, B, (idx_t)k * sbk + (idx_t)n * sbn);
      }
      Bs[kk][nn] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a = vload4(0, &As[kk][ty * 4]);
      const float4 b = vload4(0, &Bs[kk][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global uchar* C = GPTR(cb, co);
  const long gch = conv ? (z % d[13]) * M : 0;
  for (int i = 0; i < 4; ++i) {
    const long m = m0 + ty * 4 + i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const long n = n0 + tx * 4 + j;
      if (n >= N) continue;
      const long off = cofs + m * scm + n * scn;
      const float v = epilogue(acc[i][j], gch + m, n, off, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu);
      ST_T(TC, C, off, v);
    }
  }
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
    __global const uchar* rb, ulong ro, int rt, int has_res, int relu, long K, int vec, __global const uchar* ub, ulong uo, int gated) {
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
          ld8(TA, X, m * lda + k, x);
          gv_fma8(x, w0, &acc[m]), gv_fma8(x, u0, &acc2[m]);
          ld8(TA, X, m * lda + k + GV_TEAM * 8, x);
          gv_fma8(x, w1, &acc[m]), gv_fma8(x, u1, &acc2[m]);
        }
      } else {
#pragma unroll
        for (int m = 0; m < GV_M; ++m) {
          ld8(TA, X, m * lda + k, x);
          gv_fma8(x, w0, &acc[m]);
          ld8(TA, X, m * lda + k + GV_TEAM * 8, x);
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
        ld8(TA, X, m * lda + k, x);
        gv_fma8(x, w0, &acc[m]);
        if (gated) gv_fma8(x, u0, &acc2[m]);
      }
    }
  } else {
    for (long k = lane; k < K; k += GV_TEAM) {
      const float w = LD_T(TB, W, wrow + k), u = gated ? LD_T(TB, W2, wrow + k) : 0.0f;
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        const float x = LD_T(TA, X, m * lda + k);
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
