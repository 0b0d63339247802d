// Matrix products over q8_0 / q4_0 weights (docs/quantization.md). A weight [N, K] is stored on the
// device as ocl::pack_device_blocks lays it out: every block's codes first, row after row (q8_0: 32
// signed bytes; q4_0: GGML's 16 bytes, byte j = value j in the low nibble and value j + 16 in the
// high one, code c standing for c - 8), then every block's scale as f16 in the same order. A row
// has nb = ceil(K / 32) blocks; the last one's missing values are codes for 0.
//   gemv_q:         y = x W^T for GV_M <= 4 rows of x (decode): the dequantized product, f32 sums
//                   in another order, with up to three segments, a gate, bias, residual, ReLU.
//   dequant_blocks: W's values in TC (a prefill's GEMM then multiplies them on the tensor cores).
// -DGQ_FMT=1 (q8_0) or 2 (q4_0); -DGQ_S: streams (rows of W) per work-group.
#ifndef TA
#define TA DT_F32
#endif
#ifndef TC
#define TC DT_F32
#endif
#ifndef GQ_FMT
#define GQ_FMT 2
#endif
#ifndef GV_M
#define GV_M 1
#endif
#if GQ_FMT == 1
#define GQ_CB 32
#else
#define GQ_CB 16
#endif
#define GQ_WG 128
#ifndef GQ_U
#define GQ_U 2  // blocks in flight per work-item and stream
#endif

// Exact small integers as floats without a conversion instruction: 2^23 + c, then 2^23 off.
inline float gq_code(uint bits) { return as_float(0x4B000000u | bits) - 8388608.0f; }

// The partial dot product of one lane: 8 values of block `blk` (part s of 4) of a row against x.
#if GQ_FMT == 1
// q8_0: values 8s .. 8s+7, two words of signed bytes (flipped to unsigned, 128 off after).
inline float gq_dot(uint2 w, const float* x) {
  w ^= (uint2)(0x80808080u);
  float s = 0.0f;
  s = fma(gq_code(w.x & 0xffu) - 128.0f, x[0], s);
  s = fma(gq_code((w.x >> 8) & 0xffu) - 128.0f, x[1], s);
  s = fma(gq_code((w.x >> 16) & 0xffu) - 128.0f, x[2], s);
  s = fma(gq_code(w.x >> 24) - 128.0f, x[3], s);
  s = fma(gq_code(w.y & 0xffu) - 128.0f, x[4], s);
  s = fma(gq_code((w.y >> 8) & 0xffu) - 128.0f, x[5], s);
  s = fma(gq_code((w.y >> 16) & 0xffu) - 128.0f, x[6], s);
  s = fma(gq_code(w.y >> 24) - 128.0f, x[7], s);
  return s;
}
typedef uint2 gq_word;
#define GQ_LOAD(codes, blk, s) (*(__global const uint2*)((codes) + (blk) * GQ_CB + (s) * 8))
#define GQ_DOT(w, x) gq_dot((w), (x))
#else
// q4_0: bytes 4s .. 4s+3: values 4s .. 4s+3 (low nibbles) and 16+4s .. 16+4s+3 (high nibbles).
inline float gq_dot(uint w, const float* xl, const float* xh) {
  float s = 0.0f;
  s = fma(gq_code(w & 0xfu) - 8.0f, xl[0], s);
  s = fma(gq_code((w >> 8) & 0xfu) - 8.0f, xl[1], s);
  s = fma(gq_code((w >> 16) & 0xfu) - 8.0f, xl[2], s);
  s = fma(gq_code((w >> 24) & 0xfu) - 8.0f, xl[3], s);
  s = fma(gq_code((w >> 4) & 0xfu) - 8.0f, xh[0], s);
  s = fma(gq_code((w >> 12) & 0xfu) - 8.0f, xh[1], s);
  s = fma(gq_code((w >> 20) & 0xfu) - 8.0f, xh[2], s);
  s = fma(gq_code(w >> 28) - 8.0f, xh[3], s);
  return s;
}
typedef uint gq_word;
#define GQ_LOAD(codes, blk, s) (*(__global const uint*)((codes) + (blk) * GQ_CB + (s) * 4))
#define GQ_DOT(w, x) gq_dot((w), (x), (x) + 4)
#endif

// gemv_q: a work-group computes GQ_S streams: GQ_S rows of W, or (gated) GQ_S / 2 rows of W and
// the same rows of the up-projection U. Its 128 work-items split K: item l reads part l % 4 of
// blocks l / 4, l / 4 + 32, ... of every stream, with x read straight from global memory (cached:
// every work-group reads the same x). Rows [0, end0) use segment 0 (W0, bias0, C0), [end0, end1)
// segment 1, [end1, end2) segment 2. An RMSNorm before it runs as its own kernel (its rows are
// normalised once, not once per work-group).
#ifndef GQ_S
#define GQ_S 4
#endif
#define GQ_V (GQ_S * GV_M)

// x[m, k + j] for j < n (n = 4 or 8) as floats; zeros past K.
inline void gq_x(__global const uchar* X, long off, long k, long K, int n, int vec, float* o) {
  if (vec && k + n <= K) {
    if (TA == DT_BF16) {
      if (n == 8) {
        uint4 u = *(__global const uint4*)(X + (off + k) * 2);
        o[0] = as_float(u.x << 16); o[1] = as_float(u.x & 0xffff0000u); o[2] = as_float(u.y << 16); o[3] = as_float(u.y & 0xffff0000u);
        o[4] = as_float(u.z << 16); o[5] = as_float(u.z & 0xffff0000u); o[6] = as_float(u.w << 16); o[7] = as_float(u.w & 0xffff0000u);
      } else {
        uint2 u = *(__global const uint2*)(X + (off + k) * 2);
        o[0] = as_float(u.x << 16); o[1] = as_float(u.x & 0xffff0000u); o[2] = as_float(u.y << 16); o[3] = as_float(u.y & 0xffff0000u);
      }
      return;
    }
    if (TA == DT_F32) {
      float4 a = *(__global const float4*)(X + (off + k) * 4);
      o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
      if (n == 8) {
        float4 b = *(__global const float4*)(X + (off + k) * 4 + 16);
        o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
      }
      return;
    }
  }
  for (int j = 0; j < n; ++j) o[j] = k + j < K ? LD_T(TA, X, off + k + j) : 0.0f;
}

__kernel __attribute__((reqd_work_group_size(GQ_WG, 1, 1))) void gemv_q(
    __global const uchar* ab, ulong ao, long lda,
    __global const uchar* w0b, ulong w0o, __global const uchar* b0b, ulong b0o, int b0t, int hb0, __global uchar* c0b, ulong c0o, long end0,
    __global const uchar* w1b, ulong w1o, __global const uchar* b1b, ulong b1o, int b1t, int hb1, __global uchar* c1b, ulong c1o, long end1,
    __global const uchar* w2b, ulong w2o, __global const uchar* b2b, ulong b2o, int b2t, int hb2, __global uchar* c2b, ulong c2o, long end2,
    __global const uchar* rb, ulong ro, int rt, int has_res, int relu, long K, int vec, __global const uchar* ub, ulong uo, int gated) {
  __local float red[GQ_V * GQ_WG];
  const int lid = get_local_id(0), part = lid % 4;
  const long nb = (K + 31) / 32;
  __global const uchar* X = CGPTR(ab, ao);
  // The streams: row t (or, gated, row t / 2 of W for even t and of U for odd t).
  const int rows = gated ? GQ_S / 2 : GQ_S;
  long row[GQ_S], nn[GQ_S], Nseg[GQ_S];
  int seg[GQ_S];
  __global const uchar* codes[GQ_S];
  __global const uchar* scales[GQ_S];
#pragma unroll
  for (int t = 0; t < GQ_S; ++t) {
    row[t] = get_group_id(0) * rows + (gated ? t / 2 : t);
    const long r = row[t] < end2 ? row[t] : end2 - 1;
    seg[t] = r < end0 ? 0 : r < end1 ? 1 : 2;
    const long start = seg[t] == 0 ? 0 : seg[t] == 1 ? end0 : end1;
    Nseg[t] = (seg[t] == 0 ? end0 : seg[t] == 1 ? end1 : end2) - start;
    nn[t] = r - start;
    __global const uchar* base = (gated && (t & 1)) ? CGPTR(ub, uo) : seg[t] == 0 ? CGPTR(w0b, w0o) : seg[t] == 1 ? CGPTR(w1b, w1o) : CGPTR(w2b, w2o);
    codes[t] = base + nn[t] * nb * GQ_CB;
    scales[t] = base + Nseg[t] * nb * GQ_CB + nn[t] * nb * 2;
  }
  float acc[GQ_S][GV_M];
#pragma unroll
  for (int t = 0; t < GQ_S; ++t)
#pragma unroll
    for (int m = 0; m < GV_M; ++m) acc[t][m] = 0.0f;
  for (long b0 = lid / 4; b0 < nb; b0 += 32 * GQ_U) {
    gq_word w[GQ_S][GQ_U];
    float d[GQ_S][GQ_U];
#pragma unroll
    for (int u = 0; u < GQ_U; ++u) {
      const long blk = b0 + 32 * u;
      const int in = blk < nb;
#pragma unroll
      for (int t = 0; t < GQ_S; ++t) {
        w[t][u] = in ? GQ_LOAD(codes[t], blk, part) : (gq_word)(0);
        d[t][u] = in ? vload_half(blk, (__global const half*)scales[t]) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < GQ_U; ++u) {
      const long blk = b0 + 32 * u;
      if (blk >= nb) break;
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        float x[8];
#if GQ_FMT == 1
        gq_x(X, m * lda, blk * 32 + 8 * part, K, 8, vec, x);
#else
        gq_x(X, m * lda, blk * 32 + 4 * part, K, 4, vec, x);
        gq_x(X, m * lda, blk * 32 + 16 + 4 * part, K, 4, vec, x + 4);
#endif
#pragma unroll
        for (int t = 0; t < GQ_S; ++t) acc[t][m] = fma(d[t][u], GQ_DOT(w[t][u], x), acc[t][m]);
      }
    }
  }
  // Sums over the work-group, every stream and row at once, then the epilogue.
#pragma unroll
  for (int t = 0; t < GQ_S; ++t)
#pragma unroll
    for (int m = 0; m < GV_M; ++m) red[(t * GV_M + m) * GQ_WG + lid] = acc[t][m];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = GQ_WG / 2; s > 0; s >>= 1) {
    if (lid < s)
      for (int v = 0; v < GQ_V; ++v) red[v * GQ_WG + lid] += red[v * GQ_WG + lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid >= rows * GV_M) return;
  const int m = lid % GV_M, t = gated ? 2 * (lid / GV_M) : lid / GV_M;
  if (row[t] >= end2) return;
  float v = red[(t * GV_M + m) * GQ_WG];
  if (gated) {
    // Gate and up rounded to the stored type first, as the unfused model stores them.
    float g = round_to(v, TC);
    g = g / (1.0f + exp(-g));
    v = round_to(g, TC) * round_to(red[((t + 1) * GV_M + m) * GQ_WG], TC);
  }
  const int sg = seg[t];
  __global const uchar* biasb = sg == 0 ? CGPTR(b0b, b0o) : sg == 1 ? CGPTR(b1b, b1o) : CGPTR(b2b, b2o);
  const int biast = sg == 0 ? b0t : sg == 1 ? b1t : b2t, has_bias = sg == 0 ? hb0 : sg == 1 ? hb1 : hb2;
  __global uchar* C = sg == 0 ? GPTR(c0b, c0o) : sg == 1 ? GPTR(c1b, c1o) : GPTR(c2b, c2o);
  const long off = m * Nseg[t] + nn[t];
  ST_T(TC, C, off, epilogue(v, m, nn[t], off, biasb, biast, has_bias, CGPTR(rb, ro), rt, has_res, relu));
}

// W[n, k] = d * code for n < N, k < K, stored as TC: one work-item per (n, block).
__kernel void dequant_blocks(__global const uchar* wb, ulong wo, long N, long K, __global uchar* ob, ulong oo) {
  const long nb = (K + 31) / 32, i = get_global_id(0);
  if (i >= N * nb) return;
  const long n = i / nb, blk = i % nb;
  __global const uchar* base = CGPTR(wb, wo);
  __global const uchar* c = base + i * GQ_CB;
  const float d = vload_half(i, (__global const half*)(base + N * nb * GQ_CB));
  __global uchar* O = GPTR(ob, oo);
  for (int j = 0; j < 32 && blk * 32 + j < K; ++j) {
#if GQ_FMT == 1
    const float v = d * (float)((__global const char*)c)[j];
#else
    const uchar byte = c[j % 16];
    const float v = d * (float)((j < 16 ? (byte & 0xf) : (byte >> 4)) - 8);
#endif
    ST_T(TC, O, n * K + blk * 32 + j, v);
  }
}
