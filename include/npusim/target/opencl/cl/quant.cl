// Affine int8 kernels (ops/quantized.hpp) in plain integer arithmetic: the reference target's
// integers on any OpenCL device. The requantization is core/quant.hpp's, operation for operation
// (gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT; TFLite's left shift done
// in 64 bits and saturated). Per-channel multipliers and shifts come from the host (bind time).

inline int q_srdhm(int a, int b) {
  const long ab = (long)a * (long)b;
  const long nudge = ab >= 0 ? (1L << 30) : (1L - (1L << 30));
  return (int)((ab + nudge) / (1L << 31));  // the multiplier is positive: no saturation case
}
inline int q_rdbpot(int x, int e) {
  const int mask = (int)((1L << e) - 1);
  const int rem = x & mask;
  const int thr = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (rem > thr ? 1 : 0);
}
inline int q_mbqm(int x, int mult, int shift) {
  if (shift <= 0) return q_rdbpot(q_srdhm(x, mult), -shift);
  const long p = (long)x * (long)mult;
  const int s = 31 - shift;
  const long r = (p + (1L << (s - 1))) >> s;
  return (int)clamp(r, (long)INT_MIN, (long)INT_MAX);
}
inline char q_requant(int acc, int mult, int shift, int zp, int lo, int hi) {
  const long v = (long)q_mbqm(acc, mult, shift) + zp;
  return (char)clamp(v, (long)lo, (long)hi);
}

// clamp(round_half_even(x * (1 / scale)) + zero_point) in float; NaN reports through err.
__kernel void quantize(__global const uchar* xb, ulong xo, int xt, __global uchar* yb, ulong yo, long n, float inv, float zp, float lo, float hi,
                       __global int* err, int code) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const float v = ldf(CGPTR(xb, xo), xt, i);
  if (isnan(v)) {
    report_index(err, code, i);
    return;
  }
  ((__global char*)GPTR(yb, yo))[i] = (char)clamp(rint(v * inv) + zp, lo, hi);
}

__kernel void dequantize(__global const uchar* xb, ulong xo, __global uchar* yb, ulong yo, int yt, long n, float scale, int zp) {
  const long i = get_global_id(0);
  if (i >= n) return;
  stf(GPTR(yb, yo), yt, i, scale * (float)(((__global const char*)CGPTR(xb, xo))[i] - zp));
}

// One work-item per output (n, k, oh, ow). d: N C H W K kh kw OH OW sh sw ph pw dh dw G x_zp out_zp out_min out_max.
__kernel void qconv2d(__global const uchar* xb, ulong xo, __global const uchar* wb, ulong wo, __global const uchar* bb, ulong bo, int has_bias,
                      __constant const int* mult, __constant const int* shift, __constant const long* d, __global uchar* yb, ulong yo) {
  const long i = get_global_id(0);
  const long N = d[0], C = d[1], H = d[2], W = d[3], K = d[4], kh = d[5], kw = d[6], OH = d[7], OW = d[8];
  if (i >= N * K * OH * OW) return;
  const long ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
  const long G = d[15], Cg = C / G, g = k / (K / G);
  const int xzp = (int)d[16];
  __global const char* x = (__global const char*)CGPTR(xb, xo) + (n * C + g * Cg) * H * W;
  __global const char* w = (__global const char*)CGPTR(wb, wo) + k * Cg * kh * kw;
  int acc = has_bias ? ((__global const int*)CGPTR(bb, bo))[k] : 0;
  for (long c = 0; c < Cg; ++c)
    for (long r = 0; r < kh; ++r) {
      const long ih = oh * d[9] - d[11] + r * d[13];
      if (ih < 0 || ih >= H) continue;
      for (long s = 0; s < kw; ++s) {
        const long iw = ow * d[10] - d[12] + s * d[14];
        if (iw < 0 || iw >= W) continue;
        acc += ((int)x[(c * H + ih) * W + iw] - xzp) * (int)w[(c * kh + r) * kw + s];
      }
    }
  ((__global char*)GPTR(yb, yo))[i] = q_requant(acc, mult[k], shift[k], (int)d[17], (int)d[18], (int)d[19]);
}

// One work-item per output (m, n). d: M K N x_zp out_zp out_min out_max.
__kernel void qlinear(__global const uchar* xb, ulong xo, __global const uchar* wb, ulong wo, __global const uchar* bb, ulong bo, int has_bias,
                      __constant const int* mult, __constant const int* shift, __constant const long* d, __global uchar* yb, ulong yo) {
  const long i = get_global_id(0);
  const long M = d[0], Kd = d[1], Nd = d[2];
  if (i >= M * Nd) return;
  const long m = i / Nd, o = i % Nd;
  const int xzp = (int)d[3];
  __global const char* x = (__global const char*)CGPTR(xb, xo) + m * Kd;
  __global const char* w = (__global const char*)CGPTR(wb, wo) + o * Kd;
  int acc = has_bias ? ((__global const int*)CGPTR(bb, bo))[o] : 0;
  for (long k = 0; k < Kd; ++k) acc += ((int)x[k] - xzp) * (int)w[k];
  ((__global char*)GPTR(yb, yo))[i] = q_requant(acc, mult[o], shift[o], (int)d[4], (int)d[5], (int)d[6]);
}

// TFLite's int8 add. p: a_offset b_offset out_offset out_min out_max a_mult a_shift b_mult b_shift out_mult out_shift.
__kernel void qadd(__global const uchar* ab, ulong ao, __global const uchar* bb, ulong bo, __global uchar* yb, ulong yo, long n, __constant const int* p) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const int qa = ((__global const char*)CGPTR(ab, ao))[i], qb = ((__global const char*)CGPTR(bb, bo))[i];
  const int sa = q_mbqm((qa + p[0]) * (1 << 20), p[5], p[6]);
  const int sb = q_mbqm((qb + p[1]) * (1 << 20), p[7], p[8]);
  const int r = q_mbqm(sa + sb, p[9], p[10]) + p[2];
  ((__global char*)GPTR(yb, yo))[i] = (char)clamp(r, p[3], p[4]);
}

// One input of a qcat: its outer x len codes into the output rows (row codes each) at offset at,
// rescaled. p: identity multiplier shift zero_point out_zero_point.
__kernel void qcat_part(__global const uchar* xb, ulong xo, __global uchar* yb, ulong yo, long outer, long len, long row, long at, __constant const int* p) {
  const long i = get_global_id(0);
  if (i >= outer * len) return;
  const long o = i / len, j = i % len;
  const int q = ((__global const char*)CGPTR(xb, xo))[i];
  const long v = p[0] ? (long)q : clamp((long)q_mbqm(q - p[3], p[1], p[2]) + p[4], -128L, 127L);
  ((__global char*)GPTR(yb, yo))[o * row + at + j] = (char)v;
}

// Max pooling of int8 codes. d: NC H W OH OW kh kw sh sw ph pw dh dw.
__kernel void qmax_pool2d(__global const uchar* xb, ulong xo, __global uchar* yb, ulong yo, __constant const long* d) {
  const long i = get_global_id(0);
  const long NC = d[0], H = d[1], W = d[2], OH = d[3], OW = d[4];
  if (i >= NC * OH * OW) return;
  const long ow = i % OW, oh = (i / OW) % OH, c = i / (OW * OH);
  __global const char* x = (__global const char*)CGPTR(xb, xo) + c * H * W;
  int m = -128;
  for (long r = 0; r < d[5]; ++r) {
    const long ih = oh * d[7] - d[9] + r * d[11];
    if (ih < 0 || ih >= H) continue;
    for (long s = 0; s < d[6]; ++s) {
      const long iw = ow * d[8] - d[10] + s * d[12];
      if (iw >= 0 && iw < W) m = max(m, (int)x[ih * W + iw]);
    }
  }
  ((__global char*)GPTR(yb, yo))[i] = (char)m;
}

// ---- convolutions on a padded image of 4-channel words: dp4a ------------------------------------
// d4(a, b, c) = c + the dot product of a's and b's four signed bytes: one PTX dp4a on NVIDIA GPUs
// (compute capability >= 6.1), the same sum in plain arithmetic elsewhere.
inline int q_dot4(int a, int b, int c) {
#ifdef Q_DP4A_PTX
  int d;
  asm volatile("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  const char4 x = as_char4(a), y = as_char4(b);
  return c + (int)x.s0 * (int)y.s0 + (int)x.s1 * (int)y.s1 + (int)x.s2 * (int)y.s2 + (int)x.s3 * (int)y.s3;
#endif
}

// NCHW int8 -> the padded image img[((n * Hp + hp) * Wp + wp) * C4w + c4]: channels 4 c4 .. 4 c4 + 3
// of a pixel in one word; the border holds the input's zero point (the value 0), channels past C 0
// (their weights are 0). d: N C H W Hp Wp ph pw C4w x_zp.
__kernel void q_image(__global const uchar* xb, ulong xo, __global int* img, __constant const long* d) {
  const long i = get_global_id(0);
  const long N = d[0], C = d[1], H = d[2], W = d[3], Hp = d[4], Wp = d[5], C4w = d[8];
  if (i >= N * Hp * Wp * C4w) return;
  const long c4 = i % C4w, wp = (i / C4w) % Wp, hp = (i / (C4w * Wp)) % Hp, n = i / (C4w * Wp * Hp);
  const long h = hp - d[6], w = wp - d[7];
  const bool inside = h >= 0 && h < H && w >= 0 && w < W;
  __global const char* x = (__global const char*)CGPTR(xb, xo) + n * C * H * W + h * W + w;
  uint word = 0;
  for (int b = 0; b < 4; ++b) {
    const long c = c4 * 4 + b;
    const char v = c >= C ? (char)0 : inside ? x[c * H * W] : (char)d[9];
    word |= ((uint)(uchar)v) << (8 * b);
  }
  img[i] = (int)word;
}

// A work-group of 64 items: 64 output channels x 32 output pixels (of the flattened OH x OW),
// each item 8 channels x 4 pixels. Per kernel tap, the image's words (4 channels each) go through
// local memory 8 at a time (32 pixels x 8 words and 64 channels x 8 words), then every item adds
// its 8 x 4 x 8 dp4a. w4[k][r][s][c4] words; start[k] = bias - x_zp * sum(w) (the image holds
// codes, not codes minus the zero point). Words past C4w and channels past K read as 0.
// d: N K OH OW kh kw sh sw dh dw Hp Wp C4w out_zp out_min out_max.
#define QTK 64
#define QTP 32
#define QKB 8
#define QRK 8
#define QRP 4
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void qconv2d_dp4a(__global const int* img, __global const int* w4, __global const int* start,
                                                                          __global const int* mult, __global const int* shift, __constant const long* d,
                                                                          __global uchar* yb, ulong yo) {
  const long N = d[0], K = d[1], OH = d[2], OW = d[3], kh = d[4], kw = d[5], Hp = d[10], Wp = d[11], C4w = d[12];
  const long P = OH * OW, Pt = (P + QTP - 1) / QTP, Kt = (K + QTK - 1) / QTK;
  const long grp = get_group_id(0);
  const int l = (int)get_local_id(0);
  const long pt = grp % Pt, kt = (grp / Pt) % Kt, n = grp / (Pt * Kt);
  if (n >= N) return;
  __local int xs[QTP][QKB + 1];
  __local int ws[QTK][QKB + 1];
  const int kk = l / 8, pp = l % 8;  // this item's 8 channels and 4 pixels
  int acc[QRK][QRP];
  for (int t = 0; t < QRK; ++t) {
    const long k = kt * QTK + kk * QRK + t;
    for (int p = 0; p < QRP; ++p) acc[t][p] = k < K ? start[k] : 0;
  }
  // Loading: item l brings 4 words of pixel l % 32 (the first or second half of the 8) and the
  // 8 words of channel l.
  const int lp = l % QTP, lw = (l / QTP) * 4;
  const long pg = pt * QTP + lp;
  const bool pvalid = pg < P;
  const long poh = pvalid ? pg / OW : 0, pw = pvalid ? pg % OW : 0;
  const long kl = min(kt * QTK + l, K - 1);
  for (long r = 0; r < kh; ++r)
    for (long s = 0; s < kw; ++s) {
      const long xbase = ((n * Hp + poh * d[6] + r * d[8]) * Wp + pw * d[7] + s * d[9]) * C4w;
      const long wbase = ((kl * kh + r) * kw + s) * C4w;
      for (long c0 = 0; c0 < C4w; c0 += QKB) {
        for (int j = 0; j < 4; ++j) {
          const long c = c0 + lw + j;
          xs[lp][lw + j] = pvalid && c < C4w ? img[xbase + c] : 0;
        }
        for (int j = 0; j < QKB; ++j) ws[l][j] = c0 + j < C4w ? w4[wbase + c0 + j] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < QKB; ++j) {
          int xv[QRP];
          for (int p = 0; p < QRP; ++p) xv[p] = xs[pp * QRP + p][j];
          for (int t = 0; t < QRK; ++t) {
            const int wv = ws[kk * QRK + t][j];
            for (int p = 0; p < QRP; ++p) acc[t][p] = q_dot4(xv[p], wv, acc[t][p]);
          }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
    }
  __global char* y = (__global char*)GPTR(yb, yo);
  for (int t = 0; t < QRK; ++t) {
    const long k = kt * QTK + kk * QRK + t;
    if (k >= K) break;
    for (int p = 0; p < QRP; ++p) {
      const long q = pt * QTP + pp * QRP + p;
      if (q >= P) break;
      y[(n * K + k) * P + q] = q_requant(acc[t][p], mult[k], shift[k], (int)d[13], (int)d[14], (int)d[15]);
    }
  }
}
