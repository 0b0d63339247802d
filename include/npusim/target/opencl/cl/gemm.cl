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

// d (gemm): [sam, sak, sbk, sbn, scm, scn, nb1, sa0, sa1, adiv, sb0, sb1, bdiv, sc0, sc1]
// d (conv): [C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, G, Kout]
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void gemm(
    __global const uchar* ab, ulong ao, __global const uchar* bb, ulong bo, __global uchar* cb, ulong co,
    __global const uchar* biasb, ulong biaso, int biast, int bias_mode, __global const uchar* rb, ulong ro, int rt, int has_res, int relu,
    long M, long N, long K, __constant const long* d, int conv) {
  __local float As[BK][BM + 1];
  __local float Bs[BK][BN];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const long m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  const long z = get_group_id(2);
  __global const uchar* A = CGPTR(ab, ao);
  __global const uchar* B = CGPTR(bb, bo);
  long aoff, boff, cofs, sam, sak, sbk = 0, sbn = 0, scm, scn;
  long cC = 0, cH = 0, cW = 0, cOW = 0, ckh = 1, ckw = 1, csh = 0, csw = 0, cph = 0, cpw = 0, cdh = 0, cdw = 0;
  if (conv) {
    cC = d[0]; cH = d[1]; cW = d[2]; cOW = d[4]; ckh = d[5]; ckw = d[6]; csh = d[7]; csw = d[8]; cph = d[9]; cpw = d[10]; cdh = d[11]; cdw = d[12];
    const long G = d[13], Kout = d[14], img = z / G, g = z % G, Cg = cC / G, OHW = d[3] * d[4];
    aoff = g * M * K; sam = K; sak = 1;
    boff = (img * cC + g * Cg) * cH * cW;
    cofs = (img * Kout + g * M) * OHW; scm = OHW; scn = 1;
  } else {
    sam = d[0]; sak = d[1]; sbk = d[2]; sbn = d[3]; scm = d[4]; scn = d[5];
    const long nb1 = d[6], z0 = z / nb1, z1 = z % nb1;
    aoff = z0 * d[7] + (z1 / d[9]) * d[8];
    boff = z0 * d[10] + (z1 / d[12]) * d[11];
    cofs = z0 * d[13] + z1 * d[14];
  }
  const int a_kfast = sak == 1, b_kfast = !conv && sbk == 1 && sbn != 1;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (long k0 = 0; k0 < K; k0 += BK) {
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = a_kfast ? idx % BK : idx / BM, mm = a_kfast ? idx / BK : idx % BM;
      const long m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? LD_T(TA, A, aoff + m * sam + k * sak) : 0.0f;
    }
    for (int q = 0; q < 4; ++q) {
      const int idx = tid + 256 * q;
      const int kk = b_kfast ? idx % BK : idx / BN, nn = b_kfast ? idx / BK : idx % BN;
      const long n = n0 + nn, k = k0 + kk;
      float v = 0.0f;
      if (n < N && k < K) {
        if (conv) {
          const long khw = ckh * ckw, c = k / khw, rs = k % khw, r = rs / ckw, s = rs % ckw;
          const long ih = (n / cOW) * csh - cph + r * cdh, iw = (n % cOW) * csw - cpw + s * cdw;
          if (ih >= 0 && ih < cH && iw >= 0 && iw < cW) v = LD_T(TB, B, boff + (c * cH + ih) * cW + iw);
        } else {
          v = LD_T(TB, B, boff + k * sbk + n * sbn);
        }
      }
      Bs[kk][nn] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global uchar* C = GPTR(cb, co);
  for (int i = 0; i < 4; ++i) {
    const long m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const long n = n0 + tx + 16 * j;
      if (n >= N) continue;
      const long off = cofs + m * scm + n * scn;
      const float v = epilogue(acc[i][j], conv ? (z % d[13]) * M + m : m, n, off, CGPTR(biasb, biaso), biast, bias_mode, CGPTR(rb, ro), rt, has_res, relu);
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
__kernel __attribute__((reqd_work_group_size(GV_WG, 1, 1))) void gemv(
    __global const uchar* ab, ulong ao, long lda, __global const uchar* wb, ulong wo, long ldw, __global uchar* cb, ulong co, long ldc,
    __global const uchar* biasb, ulong biaso, int biast, int has_bias, __global const uchar* rb, ulong ro, int rt, int has_res, int relu,
    long N, long K, int vec, __global const uchar* w2b, ulong w2o, int gated) {
  __local float red[GV_WG];
  const int lid = get_local_id(0), lane = lid % GV_TEAM;
  const long n = get_group_id(0) * (GV_WG / GV_TEAM) + lid / GV_TEAM;
  const long nn = n < N ? n : N - 1;
  __global const uchar* X = CGPTR(ab, ao);
  __global const uchar* W = CGPTR(wb, wo);
  __global const uchar* W2 = CGPTR(w2b, w2o);
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
  __global uchar* C = GPTR(cb, co);
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
    if (lane == 0 && n < N) {
      const float v = epilogue(g, m, n, m * ldc + n, CGPTR(biasb, biaso), biast, has_bias, CGPTR(rb, ro), rt, has_res, relu);
      ST_T(TC, C, m * ldc + n, v);
    }
  }
}
