// The persistent program (target/opencl/persistent.hpp): a partition's launches run as stages of
// one launch of a fixed number of work-groups of PK_WG items, a grid-wide barrier between stages.
// The host builds it from this prelude, the //@pk+ regions of the kernel sources (whose kernels
// become inline functions, see common.cl) and a generated stage loop `pk_run` that calls them.
// Every work-group must be resident at once for the barrier: the host launches at most what the
// device holds, and a barrier that waits too long reports PK_TIMEOUT instead of hanging.
#define NPUSIM_PERSISTENT 1
#define PK_WG 128
#define PK_GROUP_FN(name, wg) inline void name(long pk_g, __local float* pk_l, int pk_ta, int pk_tb, int pk_tc,
#define PK_ITEM_FN(name) inline void name(long pk_i, int pk_ta, int pk_tb, int pk_tc,
#define PK_LOCAL(type, var, n) __local type* var = (__local type*)pk_l; pk_l += (n)
#define PK_GROUP_ID pk_g
#define PK_GLOBAL_ID pk_i
#define PK_CONST __global
#define TA pk_ta
#define TB pk_tb
#define TC pk_tc
#define TK pk_ta
#define NORM_WG PK_WG
#define GV_M 1

// Written to err[1] when a barrier gave up: the work-groups were not all resident.
#define PK_TIMEOUT 1

// Release this work-group's writes, arrive, wait until every work-group has arrived (the counter
// reaches `target`, wrap-around safe), acquire the others' writes. On NVIDIA the fences are PTX's
// (a device-scope acquire/release that also orders the L1); elsewhere OpenCL 1.2's global fence.
// With PTX fences the work-group's own barriers need only order it locally (as CUDA's grid sync
// does): item 0's device-scope fences carry the rest.
#ifdef PK_PTX_FENCE
#define PK_WG_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#else
#define PK_WG_BARRIER() barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)
#endif
inline int pk_grid_sync(volatile __global uint* bar, uint target, __global int* err, __local int* timed_out, int spin_limit) {
  PK_WG_BARRIER();
  if (get_local_id(0) == 0) {
#ifdef PK_PTX_FENCE
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
    atomic_add(bar, 1u);
    int spins = 0;
    while ((int)(*bar - target) < 0 && ++spins < spin_limit) {}
    *timed_out = spins >= spin_limit;
    if (*timed_out) atomic_or(err + 1, PK_TIMEOUT);
#ifdef PK_PTX_FENCE
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
  }
  PK_WG_BARRIER();
  return *timed_out;
}

// A device clock in ns for the stage times of a profile (NVIDIA's %globaltimer; 0 elsewhere).
inline ulong pk_now() {
#ifdef PK_PTX_FENCE
  ulong t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return 0;
#endif
}

// The device address of buffer b (stage tables hold addresses, not buffer handles).
__kernel void pk_address(__global uchar* b, __global ulong* out, int i) {
  if (get_global_id(0) == 0) out[i] = (ulong)b;
}
