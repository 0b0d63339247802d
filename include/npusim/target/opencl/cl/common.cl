// Shared prelude of every npusim OpenCL program (OpenCL C 1.2, no cl_khr_fp16): dtype codes,
// loads and stores with conversion. f16 goes through vload_half/vstore_half_rte, bf16 is kept as
// ushort bits (round to nearest even on store); all arithmetic is float.
#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_I64 3
#define DT_I32 4
#define DT_U8 5
#define DT_I8 6
#define DT_I16 7

// Kernels the persistent program (persistent.cl) also runs are written once with these macros: in
// an ordinary program PK_GROUP_FN declares a __kernel of `wg` work-items per group and PK_ITEM_FN a
// __kernel indexed by get_global_id(0); in the persistent program both are inline functions that
// its stage loop calls with a virtual group (or item) index and a slice of its local memory, and
// TA/TB/TC/TK, the storage types, are their arguments. Sources between //@pk+ and //@pk- lines
// are what the persistent program takes from a file.
#ifndef NPUSIM_PERSISTENT
#define PK_GROUP_FN(name, wg) __kernel __attribute__((reqd_work_group_size(wg, 1, 1))) void name(
#define PK_ITEM_FN(name) __kernel void name(
#define PK_LOCAL(type, var, n) __local type var[n]
#define PK_GROUP_ID get_group_id(0)
#define PK_GLOBAL_ID get_global_id(0)
#define PK_CONST __constant
#endif

#define GPTR(b, off) ((__global uchar*)(b) + (off))
#define CGPTR(b, off) ((__global const uchar*)(b) + (off))

inline float bf2f(ushort b) { return as_float(((uint)b) << 16); }
inline ushort f2bf(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
inline float round_to(float v, int dt) {
  if (dt == DT_BF16) return bf2f(f2bf(v));
  if (dt == DT_F16) {
    ushort h;
    vstore_half_rte(v, 0, (__private half*)&h);
    return vload_half(0, (__private const half*)&h);
  }
  return v;
}
// silu(g) * u from a gate's and an up projection's sums, rounded as the unfused model stores them:
// g and u to the output's type dt, and silu(g) again (the gated GEMV and the tensor cores' gated
// tiles both compute it so; silu_mul reads g and u as stored and rounds silu(g) the same way).
inline float silu_gate_rounded(float g, float u, int dt) {
  g = round_to(g, dt);
  return round_to(g / (1.0f + exp(-g)), dt) * round_to(u, dt);
}

// Sums and maxima over work-items. NV_WARP (NVIDIA GPUs, set by the host): warp shuffles through
// inline PTX, all 32 lanes of each warp taking part (call them outside divergent code); the
// butterfly adds the same pairs in the same order as the local-memory tree below, so lane 0's sum
// is the same bits either way. Elsewhere a tree in local memory.
#ifdef NV_WARP
#define NV_SHFL_STEP(v, t, o, op) \
  asm volatile("shfl.sync.bfly.b32 %0, %1, " #o ", 0x1f, 0xffffffff;" : "=f"(t) : "f"(v)); v = op
inline float warp_sum(float v) {
  float t;
  NV_SHFL_STEP(v, t, 16, v + t); NV_SHFL_STEP(v, t, 8, v + t); NV_SHFL_STEP(v, t, 4, v + t);
  NV_SHFL_STEP(v, t, 2, v + t); NV_SHFL_STEP(v, t, 1, v + t);
  return v;
}
inline float warp_max(float v) {
  float t;
  NV_SHFL_STEP(v, t, 16, fmax(v, t)); NV_SHFL_STEP(v, t, 8, fmax(v, t)); NV_SHFL_STEP(v, t, 4, fmax(v, t));
  NV_SHFL_STEP(v, t, 2, fmax(v, t)); NV_SHFL_STEP(v, t, 1, fmax(v, t));
  return v;
}
#endif
// The sum (is_max: the maximum) of v over a work-group of wg items (a power of two, >= 32 with
// NV_WARP), returned to every item; red holds wg floats (NV_WARP: wg / 32).
inline float group_reduce(float v, __local float* red, int wg, int is_max) {
  const int l = get_local_id(0);
#ifdef NV_WARP
  v = is_max ? warp_max(v) : warp_sum(v);
  if (wg == 32) return v;
  if ((l & 31) == 0) red[l >> 5] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  float r = red[0];
  for (int i = 1; i < wg / 32; ++i) r = is_max ? fmax(r, red[i]) : r + red[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
#else
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = wg / 2; s > 0; s >>= 1) {
    if (l < s) red[l] = is_max ? fmax(red[l], red[l + s]) : red[l] + red[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
#endif
}

// A kernel that meets an index out of range reports the first one through err (int[4], zeroed by
// the executor): err[0] the check's code (1-based, the executor's list), err[2], err[3] the index's
// low and high 32 bits.
inline void report_index(__global int* err, int code, long v) {
  if (atomic_cmpxchg(err, 0, code) == 0) {
    err[2] = (int)(v & 0xffffffffL);
    err[3] = (int)(v >> 32);
  }
}

inline float ldf(__global const uchar* p, int dt, long i) {
  switch (dt) {
    case DT_F32: return ((__global const float*)p)[i];
    case DT_F16: return vload_half(i, (__global const half*)p);
    case DT_BF16: return bf2f(((__global const ushort*)p)[i]);
    case DT_I64: return (float)((__global const long*)p)[i];
    case DT_I32: return (float)((__global const int*)p)[i];
    case DT_I16: return (float)((__global const short*)p)[i];
    case DT_I8: return (float)((__global const char*)p)[i];
    default: return (float)p[i];
  }
}
inline long ldi(__global const uchar* p, int dt, long i) {
  switch (dt) {
    case DT_I64: return ((__global const long*)p)[i];
    case DT_I32: return ((__global const int*)p)[i];
    case DT_I16: return ((__global const short*)p)[i];
    case DT_I8: return ((__global const char*)p)[i];
    case DT_U8: return p[i];
    default: return (long)ldf(p, dt, i);
  }
}
inline void stf(__global uchar* p, int dt, long i, float v) {
  switch (dt) {
    case DT_F32: ((__global float*)p)[i] = v; break;
    case DT_F16: vstore_half_rte(v, i, (__global half*)p); break;
    case DT_BF16: ((__global ushort*)p)[i] = f2bf(v); break;
    case DT_I64: ((__global long*)p)[i] = (long)v; break;
    case DT_I32: ((__global int*)p)[i] = (int)v; break;
    case DT_I16: ((__global short*)p)[i] = (short)v; break;
    case DT_I8: ((__global char*)p)[i] = (char)v; break;
    default: p[i] = v != 0.0f ? 1 : 0; break;  // bool / u8 from a float is only used for bool
  }
}
inline void sti(__global uchar* p, int dt, long i, long v) {
  switch (dt) {
    case DT_I64: ((__global long*)p)[i] = v; break;
    case DT_I32: ((__global int*)p)[i] = (int)v; break;
    case DT_I16: ((__global short*)p)[i] = (short)v; break;
    case DT_I8: ((__global char*)p)[i] = (char)v; break;
    case DT_U8: p[i] = (uchar)v; break;
    default: stf(p, dt, i, (float)v); break;
  }
}
inline int is_int_dt(int dt) { return dt >= DT_I64; }

// Compile-time typed access for the hot kernels: -DTA=<code> etc. pick the storage type.
#define LD_T(T, p, i) ((T) == DT_F32 ? ((__global const float*)(p))[i] : (T) == DT_BF16 ? bf2f(((__global const ushort*)(p))[i]) : vload_half((i), (__global const half*)(p)))
#define ST_T(T, p, i, v) do { if ((T) == DT_F32) ((__global float*)(p))[i] = (v); else if ((T) == DT_BF16) ((__global ushort*)(p))[i] = f2bf(v); else vstore_half_rte((v), (i), (__global half*)(p)); } while (0)

// The 8 bf16 values of a 16-byte word as floats.
inline void bf16x8(uint4 u, float* o) {
  o[0] = as_float(u.x << 16); o[1] = as_float(u.x & 0xffff0000u);
  o[2] = as_float(u.y << 16); o[3] = as_float(u.y & 0xffff0000u);
  o[4] = as_float(u.z << 16); o[5] = as_float(u.z & 0xffff0000u);
  o[6] = as_float(u.w << 16); o[7] = as_float(u.w & 0xffff0000u);
}

// 8 consecutive values starting at element i (16-byte aligned for half types, 32 for float).
inline void ld8(int t, __global const uchar* p, long i, float* o) {
  if (t == DT_BF16) {
    bf16x8(*(__global const uint4*)(p + i * 2), o);
  } else if (t == DT_F16) {
    float8 v = vloada_half8(0, (__global const half*)(p + i * 2));
    o[0] = v.s0; o[1] = v.s1; o[2] = v.s2; o[3] = v.s3; o[4] = v.s4; o[5] = v.s5; o[6] = v.s6; o[7] = v.s7;
  } else {
    float4 a = *(__global const float4*)(p + i * 4), b = *(__global const float4*)(p + i * 4 + 16);
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w; o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
  }
}

// A matrix product's epilogue: bias per column (bias_mode 1) or row (2), residual, ReLU.
inline float epilogue(float v, long m, long n, long coff, __global const uchar* bias, int bt, int bias_mode, __global const uchar* res,
                      int rt, int has_res, int relu) {
  if (bias_mode == 1) v += ldf(bias, bt, n);
  else if (bias_mode == 2) v += ldf(bias, bt, m);
  if (has_res) v += ldf(res, rt, coff);
  if (relu) v = fmax(v, 0.0f);
  return v;
}
