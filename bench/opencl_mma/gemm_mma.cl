// Tensor-core GEMM in OpenCL C with inline PTX (NVIDIA OpenCL, compute capability >= 8.0).
//   C[M,N] = A[M,K] * W[N,K]^T      A, W: bf16 as ushort bit patterns, both K-contiguous (row-major);
//                                   fp32 accumulation; C f32 (or bf16 with -DOUT_BF16=1).
// One work-group computes a BM x BN tile; its warps (WARPS_M x WARPS_N) each a WM x WN sub-tile made
// of (WM/16) x (WN/8) mma.sync.m16n8k16 (.row.col: A row-major, B "column-major" = W rows).
// K is walked in BK (16, 32 or 64) slices staged in local memory, A rows then W rows per stage.
// All of it must fit NVIDIA OpenCL's 48 KB of local memory per work-group (no opt-in beyond that).
// Build-time switches:
//   USE_LDSM    1: fragments via ldmatrix.sync.aligned.m8n8.x4.shared.b16; 0: plain 32-bit local loads
//   SWZ         0: local rows padded by 16 bytes; 1: unpadded, XOR-swizzled 16-byte chunks (needs USE_LDSM)
//   USE_CPASYNC 1: global->local with cp.async.cg.shared.global (16 B), STAGES-deep pipeline;
//               0: 16-byte loads through registers (STAGES 1: load/sync/compute/sync; 2: prefetch next)
//   Split-K: get_group_id(2) = kz computes K range [kz*kchunk, (kz+1)*kchunk) and writes (f32) to
//            C + kz*M*N; gemm_splitk_reduce adds the slices up (and converts to bf16 if OUT_BF16).
// Requires M % BM == 0, N % BN == 0, kchunk % BK == 0, K % 8 == 0 (checked on the host).
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef USE_LDSM
#define USE_LDSM 1
#endif
#ifndef USE_CPASYNC
#define USE_CPASYNC 1
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
// Inline-assembly keyword: NVIDIA's OpenCL frontend takes `asm` (plain clang in OpenCL mode wants
// __asm__; the offline check builds with -DASM_KW=__asm__).
#ifndef ASM_KW
#define ASM_KW asm
#endif
#ifndef BK
#define BK 32
#endif
#ifndef SWZ
#define SWZ 0
#endif
#define CPR (BK / 8)  // 16-byte chunks per local row
// Byte offset of 16-byte chunk ch of local row r. SWZ 0: rows padded by 16 bytes (80-byte rows for
// BK 32). SWZ 1: unpadded rows, chunk index XORed with a function of the row so that the 8 rows an
// 8x8 ldmatrix reads (and the 8 chunks a quarter-warp writes) land in 8 distinct 16-byte bank groups.
#if SWZ
#define LDS BK
#define SWZF(r) (((r) / (8 / CPR)) & (CPR - 1))
#define SOFF(r, ch) ((uint)(((r) * LDS + (((ch) ^ SWZF(r)) * 8)) * 2))
#else
#define LDS (BK + 8)
#define SWZF(r) 0
#define SOFF(r, ch) ((uint)(((r) * LDS + (ch) * 8) * 2))
#endif
#if SWZ && !USE_LDSM
#error "SWZ needs USE_LDSM"
#endif
#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define NTHREADS (WARPS_M * WARPS_N * 32)
#define MI (WM / 16)
#define NI (WN / 8)
#define A_CHUNKS (BM * BK / 8)  // 16-byte chunks per stage
#define B_CHUNKS (BN * BK / 8)
#define A_PER_T ((A_CHUNKS + NTHREADS - 1) / NTHREADS)
#define B_PER_T ((B_CHUNKS + NTHREADS - 1) / NTHREADS)
#define STAGE_U4 ((BM + BN) * LDS / 8)  // uint4 per stage (A rows then B rows)

#if OUT_BF16
typedef ushort out_t;
#else
typedef float out_t;
#endif

inline ushort f2bf(float f) {  // round to nearest even
  uint u = as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}

// Local pointer -> 32-bit shared-window address for ldmatrix / cp.async. If the compiler handed us a
// generic address instead, isspacep/cvta.to.shared converts it; a shared-window address is kept.
inline uint smem_addr(__local const void* p) {
  uint r;
  ulong g = (ulong)p;
  ASM_KW volatile("{ .reg .pred q; .reg .u64 a;\n\t"
               "isspacep.shared q, %1;\n\t"
               "@q cvta.to.shared.u64 a, %1;\n\t"
               "@!q mov.u64 a, %1;\n\t"
               "cvt.u32.u64 %0, a; }"
               : "=r"(r) : "l"(g));
  return r;
}

#define MMA_BF16(c, a, b)                                                                                  \
  ASM_KW("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "        \
      "{%10,%11,%12,%13};"                                                                                 \
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])                                                     \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), \
        "f"(c[3]))

#define LDSM_X4(r0, r1, r2, r3, addr)                                                              \
  ASM_KW volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"                     \
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory")

#define CP_ASYNC16(saddr, gptr) \
  ASM_KW volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(saddr), "l"((ulong)(gptr)) : "memory")
#define CP_COMMIT() ASM_KW volatile("cp.async.commit_group;" ::: "memory")
#define CP_WAIT_(n) ASM_KW volatile("cp.async.wait_group " #n ";" ::: "memory")
#define CP_WAIT(n) CP_WAIT_(n)
#if STAGES == 2
#define PENDING 0
#elif STAGES == 3
#define PENDING 1
#elif STAGES == 4
#define PENDING 2
#elif STAGES == 5
#define PENDING 3
#elif STAGES == 6
#define PENDING 4
#else
#define PENDING 0
#endif

__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1))) void gemm_mma(
    __global const ushort* restrict A, __global const ushort* restrict W, __global out_t* restrict C, int M, int N, int K,
    int kchunk, __global float* restrict part) {
  __local uint4 smem[STAGES * STAGE_U4];
  const int tid = get_local_id(0);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  const int kz = get_group_id(2);
  const int kbeg = kz * kchunk;
  const int ktiles = kchunk / BK;
  __global const ushort* Ag = A + (size_t)m0 * K + kbeg;
  __global const ushort* Wg = W + (size_t)n0 * K + kbeg;
  __local ushort* sm = (__local ushort*)smem;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

#if USE_LDSM || USE_CPASYNC
  const uint sbase = smem_addr(smem);
#endif

  // One stage: A rows [0,BM) then W rows [BM, BM+BN), each LDS ushorts; chunk c of A: row c/4, col (c%4)*8.
#if USE_CPASYNC
#define LOAD_STAGE(s, kt)                                                                          \
  {                                                                                                \
    const uint st = sbase + (uint)((s) * STAGE_U4 * 16);                                           \
    _Pragma("unroll") for (int i = 0; i < A_PER_T; ++i) {                                          \
      const int c = tid + i * NTHREADS;                                                            \
      if (A_CHUNKS % NTHREADS == 0 || c < A_CHUNKS) {                                              \
        const int row = c / CPR, ch = c % CPR;                                                     \
        CP_ASYNC16(st + SOFF(row, ch), Ag + (size_t)row * K + (kt) * BK + ch * 8);                 \
      }                                                                                            \
    }                                                                                              \
    _Pragma("unroll") for (int i = 0; i < B_PER_T; ++i) {                                          \
      const int c = tid + i * NTHREADS;                                                            \
      if (B_CHUNKS % NTHREADS == 0 || c < B_CHUNKS) {                                              \
        const int row = c / CPR, ch = c % CPR;                                                     \
        CP_ASYNC16(st + SOFF(BM + row, ch), Wg + (size_t)row * K + (kt) * BK + ch * 8);            \
      }                                                                                            \
    }                                                                                              \
  }
#else
  uint4 ra[A_PER_T], rb[B_PER_T];
#define LOAD_REGS(kt)                                                                               \
  {                                                                                                 \
    _Pragma("unroll") for (int i = 0; i < A_PER_T; ++i) {                                           \
      const int c = tid + i * NTHREADS;                                                             \
      if (A_CHUNKS % NTHREADS == 0 || c < A_CHUNKS) {                                               \
        const int row = c / CPR, ch = c % CPR;                                                      \
        ra[i] = *(__global const uint4*)(Ag + (size_t)row * K + (kt) * BK + ch * 8);                \
      }                                                                                             \
    }                                                                                               \
    _Pragma("unroll") for (int i = 0; i < B_PER_T; ++i) {                                           \
      const int c = tid + i * NTHREADS;                                                             \
      if (B_CHUNKS % NTHREADS == 0 || c < B_CHUNKS) {                                               \
        const int row = c / CPR, ch = c % CPR;                                                      \
        rb[i] = *(__global const uint4*)(Wg + (size_t)row * K + (kt) * BK + ch * 8);                \
      }                                                                                             \
    }                                                                                               \
  }
#define STORE_REGS(s)                                                                               \
  {                                                                                                 \
    __local uint4* st = smem + (s) * STAGE_U4;                                                      \
    _Pragma("unroll") for (int i = 0; i < A_PER_T; ++i) {                                           \
      const int c = tid + i * NTHREADS;                                                             \
      if (A_CHUNKS % NTHREADS == 0 || c < A_CHUNKS) st[SOFF(c / CPR, c % CPR) / 16] = ra[i];        \
    }                                                                                               \
    _Pragma("unroll") for (int i = 0; i < B_PER_T; ++i) {                                           \
      const int c = tid + i * NTHREADS;                                                             \
      if (B_CHUNKS % NTHREADS == 0 || c < B_CHUNKS) st[SOFF(BM + c / CPR, c % CPR) / 16] = rb[i];   \
    }                                                                                               \
  }
#endif

  // Compute on one stage: BK/16 k-steps, each MI A fragments, NI B fragments, MI*NI mma.
#if USE_LDSM
  // A: lane supplies row (lane%16), k offset (lane/16)*8 -> a0..a3 of m16k16.
  // B: lane supplies W row (lane/16)*8 + lane%8, k offset ((lane/8)&1)*8 -> b0,b1 of two n8 blocks.
  // Row offsets i*16 / j*16 keep SWZF(row) (16 is a multiple of the swizzle period), so the chunk
  // XOR is per lane and per k-step only.
  const int a_row = wm * WM + (lane & 15), b_row = BM + wn * WN + (lane >> 4) * 8 + (lane & 7);
  uint a_off[BK / 16], b_off[BK / 16];
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    a_off[kk] = SOFF(a_row, kk * 2 + (lane >> 4));
    b_off[kk] = SOFF(b_row, kk * 2 + ((lane >> 3) & 1));
  }
#define COMPUTE_STAGE(s)                                                                              \
  {                                                                                                   \
    const uint st = sbase + (uint)((s) * STAGE_U4 * 16);                                              \
    _Pragma("unroll") for (int kk = 0; kk < BK / 16; ++kk) {                                          \
      uint af[MI][4], bfr[NI][2];                                                                     \
      _Pragma("unroll") for (int i = 0; i < MI; ++i)                                                  \
          LDSM_X4(af[i][0], af[i][1], af[i][2], af[i][3], st + a_off[kk] + (uint)(i * 16 * LDS * 2));        \
      _Pragma("unroll") for (int j = 0; j < NI / 2; ++j)                                              \
          LDSM_X4(bfr[2 * j][0], bfr[2 * j][1], bfr[2 * j + 1][0], bfr[2 * j + 1][1],                 \
                  st + b_off[kk] + (uint)(j * 16 * LDS * 2));                                         \
      _Pragma("unroll") for (int i = 0; i < MI; ++i)                                                  \
          _Pragma("unroll") for (int j = 0; j < NI; ++j) MMA_BF16(acc[i][j], af[i], bfr[j]);          \
    }                                                                                                 \
  }
#else
  const int g = lane >> 2, t = lane & 3;
#define COMPUTE_STAGE(s)                                                                              \
  {                                                                                                   \
    __local const uint* st = (__local const uint*)(smem + (s) * STAGE_U4);                            \
    _Pragma("unroll") for (int kk = 0; kk < BK / 16; ++kk) {                                          \
      uint af[MI][4], bfr[NI][2];                                                                     \
      _Pragma("unroll") for (int i = 0; i < MI; ++i) {                                                \
        const int r = wm * WM + i * 16 + g, k = kk * 16 + 2 * t;                                      \
        af[i][0] = st[(r * LDS + k) >> 1];                                                            \
        af[i][1] = st[((r + 8) * LDS + k) >> 1];                                                      \
        af[i][2] = st[(r * LDS + k + 8) >> 1];                                                        \
        af[i][3] = st[((r + 8) * LDS + k + 8) >> 1];                                                  \
      }                                                                                               \
      _Pragma("unroll") for (int j = 0; j < NI; ++j) {                                                \
        const int n = BM + wn * WN + j * 8 + g, k = kk * 16 + 2 * t;                                  \
        bfr[j][0] = st[(n * LDS + k) >> 1];                                                           \
        bfr[j][1] = st[(n * LDS + k + 8) >> 1];                                                       \
      }                                                                                               \
      _Pragma("unroll") for (int i = 0; i < MI; ++i)                                                  \
          _Pragma("unroll") for (int j = 0; j < NI; ++j) MMA_BF16(acc[i][j], af[i], bfr[j]);          \
    }                                                                                                 \
  }
#endif

  // Main loop.
#if USE_CPASYNC
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) LOAD_STAGE(s, s);
    CP_COMMIT();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    CP_WAIT(PENDING);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int nk = kt + STAGES - 1;
    if (nk < ktiles) LOAD_STAGE(nk % STAGES, nk);  // the stage computed in iteration kt-1
    CP_COMMIT();
    COMPUTE_STAGE(kt % STAGES);
  }
  CP_WAIT(0);
#elif STAGES == 1
  for (int kt = 0; kt < ktiles; ++kt) {
    LOAD_REGS(kt);
    STORE_REGS(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    COMPUTE_STAGE(0);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#else  // 2 stages through registers: global loads of tile kt+1 in flight while tile kt is computed
  LOAD_REGS(0);
  STORE_REGS(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + 1 < ktiles) LOAD_REGS(kt + 1);
    COMPUTE_STAGE(kt & 1);
    if (kt + 1 < ktiles) STORE_REGS((kt + 1) & 1);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif

  // Epilogue: c0,c1 at (row g, cols 2t, 2t+1), c2,c3 at (row g+8, same cols).
  const int gr = lane >> 2, tc = (lane & 3) * 2;
  const int split = get_num_groups(2) > 1;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = m0 + wm * WM + i * 16 + gr;
      const int col = n0 + wn * WN + j * 8 + tc;
      if (split) {
        __global float* P = part + (size_t)kz * M * N;
        *(__global float2*)(P + (size_t)row * N + col) = (float2)(acc[i][j][0], acc[i][j][1]);
        *(__global float2*)(P + (size_t)(row + 8) * N + col) = (float2)(acc[i][j][2], acc[i][j][3]);
      } else {
#if OUT_BF16
        *(__global uint*)(C + (size_t)row * N + col) = (uint)f2bf(acc[i][j][0]) | ((uint)f2bf(acc[i][j][1]) << 16);
        *(__global uint*)(C + (size_t)(row + 8) * N + col) = (uint)f2bf(acc[i][j][2]) | ((uint)f2bf(acc[i][j][3]) << 16);
#else
        *(__global float2*)(C + (size_t)row * N + col) = (float2)(acc[i][j][0], acc[i][j][1]);
        *(__global float2*)(C + (size_t)(row + 8) * N + col) = (float2)(acc[i][j][2], acc[i][j][3]);
#endif
      }
    }
}

// C[i] = sum over s < S of part[s*MN + i], 4 elements per work-item (MN % 4 == 0).
__kernel void gemm_splitk_reduce(__global const float4* restrict part, __global out_t* restrict C, int MN, int S) {
  const int i = get_global_id(0);
  if (i * 4 >= MN) return;
  float4 v = part[i];
  for (int s = 1; s < S; ++s) v += part[(size_t)s * (MN / 4) + i];
#if OUT_BF16
  *(__global uint2*)(C + (size_t)i * 4) = (uint2)((uint)f2bf(v.x) | ((uint)f2bf(v.y) << 16), (uint)f2bf(v.z) | ((uint)f2bf(v.w) << 16));
#else
  *(__global float4*)(C + (size_t)i * 4) = v;
#endif
}
