// Matrix products over q8_0 / q4_0 weights (docs/quantization.md). A weight [N, K] is stored on the
// device as ocl::pack_device_blocks lays it out: every block's codes first, row after row (q8_0: 32
// signed bytes; q4_0: GGML's 16 bytes, byte j = value j in the low nibble and value j + 16 in the
// high one, code c standing for c - 8), then every block's scale as f16 in the same order. A row
// has nb = ceil(K / 32) blocks; the last one's missing values are codes for 0.
//   gemv_q: y = x W^T for GV_M <= 4 rows of x (decode): the dequantized product, f32 sums in
//           another order, with up to three segments, a gate, bias, residual, ReLU.
// More rows (prefill) run the tiled GEMMs of gemm.cl, which read the same layout (-DGQ_FMT).
// -DGQ_FMT=1 (q8_0) or 2 (q4_0).
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
//@pk+
// gemv_q: a team of `team` work-items per row of W (and, with `gated`, the same row of the
// up-projection U in the same pass), sized by the host (ocl::gemv_q_team) so that each takes at
// most 8 parts of 16 bytes of codes (a whole q4_0 block of 32 values, or half a q8_0 block), GQ_U
// of them in flight at once: a team reads
// its row's consecutive bytes, and a short row (K = 1536: 768 bytes of q4_0) is not spread over 32
// items that would each wait for one load. 128 items per work-group, 128 / team rows. x comes
// straight from global memory (cached: every team reads the same x). Rows [0, end0) use segment 0
// (W0, bias0, C0), [end0, end1) segment 1, [end1, end2) segment 2. vec: bit 0, x's 8-value loads
// are aligned; bit 1, every weight's codes start on 16 bytes.
#if GQ_FMT == 1
#define GQ_CB 32
#define GQ_P 2  // work-items per block
#define GQ_VALS 16
#else
#define GQ_CB 16
#define GQ_P 1
#define GQ_VALS 32
#endif
#define GQ_WG 128
#ifndef GQ_U
#if GV_M == 1
#define GQ_U 4  // 16-byte loads in flight per work-item and weight
#else
#define GQ_U 2  // (fewer with more rows of x: the unrolled code grows with both)
#endif
#endif
// A code as a float without a conversion instruction: 2^23 + bits, then 2^23 (and the code's
// offset) off, exactly.
#if GQ_FMT == 1
#define GQ_VAL(bits) (as_float(0x4B000000u | (bits)) - 8388736.0f)  // 2^23 + 128: q8_0 codes flipped to unsigned
#else
#define GQ_VAL(bits) (as_float(0x4B000000u | (bits)) - 8388616.0f)  // 2^23 + 8: q4_0
#endif
// The dot product of 16 bytes of codes with their values of x (GQ_VALS floats).
inline float gq_dot16(uint4 w, const float* x) {
  float s = 0.0f;
  const uint v[4] = {w.x, w.y, w.z, w.w};
#if GQ_FMT == 1
  // q8_0: bytes 0..15 are values 0..15 of this half block.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint u = v[i] ^ 0x80808080u;
    s = fma(GQ_VAL(u & 0xffu), x[4 * i], s);
    s = fma(GQ_VAL((u >> 8) & 0xffu), x[4 * i + 1], s);
    s = fma(GQ_VAL((u >> 16) & 0xffu), x[4 * i + 2], s);
    s = fma(GQ_VAL(u >> 24), x[4 * i + 3], s);
  }
#else
  // q4_0: byte j holds value j (low nibble) and value j + 16 (high nibble).
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint u = v[i];
    s = fma(GQ_VAL(u & 0xfu), x[4 * i], s);
    s = fma(GQ_VAL((u >> 8) & 0xfu), x[4 * i + 1], s);
    s = fma(GQ_VAL((u >> 16) & 0xfu), x[4 * i + 2], s);
    s = fma(GQ_VAL((u >> 24) & 0xfu), x[4 * i + 3], s);
    s = fma(GQ_VAL((u >> 4) & 0xfu), x[16 + 4 * i], s);
    s = fma(GQ_VAL((u >> 12) & 0xfu), x[16 + 4 * i + 1], s);
    s = fma(GQ_VAL((u >> 20) & 0xfu), x[16 + 4 * i + 2], s);
    s = fma(GQ_VAL(u >> 28), x[16 + 4 * i + 3], s);
  }
#endif
  return s;
}

// x[m, k + j] for j < 8 as floats (ta: x's storage type); zeros past K.
inline void gq_x8(__global const uchar* X, long off, long k, long K, int vec, int ta, float* o) {
  if (vec && k + 8 <= K && ta == DT_BF16) {
    const uint4 u = *(__global const uint4*)(X + (off + k) * 2);
    o[0] = as_float(u.x << 16); o[1] = as_float(u.x & 0xffff0000u); o[2] = as_float(u.y << 16); o[3] = as_float(u.y & 0xffff0000u);
    o[4] = as_float(u.z << 16); o[5] = as_float(u.z & 0xffff0000u); o[6] = as_float(u.w << 16); o[7] = as_float(u.w & 0xffff0000u);
  } else if (vec && k + 8 <= K && ta == DT_F32) {
    const float4 a = *(__global const float4*)(X + (off + k) * 4), b = *(__global const float4*)(X + (off + k) * 4 + 16);
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w; o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
  } else {
    for (int j = 0; j < 8; ++j) o[j] = k + j < K ? LD_T(ta, X, off + k + j) : 0.0f;
  }
}

PK_GROUP_FN(gemv_q, GQ_WG)
    __global const uchar* ab, ulong ao, long lda,
    __global const uchar* w0b, ulong w0o, __global const uchar* b0b, ulong b0o, int b0t, int hb0, __global uchar* c0b, ulong c0o, long end0,
    __global const uchar* w1b, ulong w1o, __global const uchar* b1b, ulong b1o, int b1t, int hb1, __global uchar* c1b, ulong c1o, long end1,
    __global const uchar* w2b, ulong w2o, __global const uchar* b2b, ulong b2o, int b2t, int hb2, __global uchar* c2b, ulong c2o, long end2,
    __global const uchar* rb, ulong ro, int rt, int has_res, int relu, long K, int vec, __global const uchar* ub, ulong uo, int gated,
    int team) {
  PK_LOCAL(float, red, 2 * GV_M * GQ_WG);
  const int lid = get_local_id(0), lane = lid % team, part = lane % GQ_P;
  const long nb = (K + 31) / 32;
  const long row = PK_GROUP_ID * (GQ_WG / team) + lid / team;
  const int seg = row < end0 ? 0 : row < end1 ? 1 : 2;
  const long start = seg == 0 ? 0 : seg == 1 ? end0 : end1, N = (seg == 0 ? end0 : seg == 1 ? end1 : end2) - start;
  const long n = row - start, nn = row < end2 ? n : N - 1;
  __global const uchar* X = CGPTR(ab, ao);
  __global const uchar* W = seg == 0 ? CGPTR(w0b, w0o) : seg == 1 ? CGPTR(w1b, w1o) : CGPTR(w2b, w2o);
  __global const uchar* U = CGPTR(ub, uo);
  __global const uchar* codes = W + nn * nb * GQ_CB + part * 16;
  __global const half* scales = (__global const half*)(W + N * nb * GQ_CB) + nn * nb;
  __global const uchar* ucodes = U + nn * nb * GQ_CB + part * 16;
  __global const half* uscales = (__global const half*)(U + N * nb * GQ_CB) + nn * nb;
  const int xvec = vec & 1, aligned = (vec >> 1) & 1;
  float acc[GV_M], acc2[GV_M];
#pragma unroll
  for (int m = 0; m < GV_M; ++m) acc[m] = 0.0f, acc2[m] = 0.0f;
  const long step = team / GQ_P;  // blocks a team takes at a time
  for (long b0 = lane / GQ_P; b0 < nb; b0 += step * GQ_U) {
    uint4 w[GQ_U], w2[GQ_U];
    float d[GQ_U], d2[GQ_U];
#pragma unroll
    for (int u = 0; u < GQ_U; ++u) {
      const long blk = b0 + step * u;
      const int in = blk < nb;
      __global const uchar* p = codes + blk * GQ_CB;
      __global const uchar* p2 = ucodes + blk * GQ_CB;
      w[u] = !in ? (uint4)(0) : aligned ? *(__global const uint4*)p : vload4(0, (__global const uint*)p);
      d[u] = in ? vload_half(blk, scales) : 0.0f;
      w2[u] = !(in && gated) ? (uint4)(0) : aligned ? *(__global const uint4*)p2 : vload4(0, (__global const uint*)p2);
      d2[u] = in && gated ? vload_half(blk, uscales) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < GQ_U; ++u) {
      const long blk = b0 + step * u;
      if (blk >= nb) break;
#pragma unroll
      for (int m = 0; m < GV_M; ++m) {
        float x[GQ_VALS];
        const long k = blk * 32 + part * 16;
#pragma unroll
        for (int e = 0; e < GQ_VALS; e += 8) gq_x8(X, m * lda, k + e, K, xvec, TA, x + e);
        acc[m] = fma(d[u], gq_dot16(w[u], x), acc[m]);
        if (gated) acc2[m] = fma(d2[u], gq_dot16(w2[u], x), acc2[m]);
      }
    }
  }
  // Each team's sums through local memory (one barrier; items leave the loop above at different
  // times, so no warp shuffles), then the epilogue by the team's first item.
  __global const uchar* biasb = seg == 0 ? CGPTR(b0b, b0o) : seg == 1 ? CGPTR(b1b, b1o) : CGPTR(b2b, b2o);
  const int biast = seg == 0 ? b0t : seg == 1 ? b1t : b2t, has_bias = seg == 0 ? hb0 : seg == 1 ? hb1 : hb2;
  __global uchar* C = seg == 0 ? GPTR(c0b, c0o) : seg == 1 ? GPTR(c1b, c1o) : GPTR(c2b, c2o);
#pragma unroll
  for (int m = 0; m < GV_M; ++m) red[2 * m * GQ_WG + lid] = acc[m], red[(2 * m + 1) * GQ_WG + lid] = acc2[m];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int m = 0; m < GV_M; ++m) {
    float v = 0.0f, up = 0.0f;
    if (lane == 0)
      for (int t = 0; t < team; ++t) v += red[2 * m * GQ_WG + lid + t], up += red[(2 * m + 1) * GQ_WG + lid + t];
    if (gated) {
      // Gate and up rounded to the stored type first, as the unfused model stores them.
      float g = round_to(v, TC);
      g = g / (1.0f + exp(-g));
      v = round_to(g, TC) * round_to(up, TC);
    }
    if (lane == 0 && row < end2) {
      const long off = m * N + n;
      ST_T(TC, C, off, epilogue(v, m, n, off, biasb, biast, has_bias, CGPTR(rb, ro), rt, has_res, relu));
    }
  }
}
//@pk-
