// Issue 38 probe: what a launch costs on an OpenCL device (host enqueue, device throughput), and
// what a grid-wide barrier inside one persistent launch costs (and whether it is correct).
//   g++ -O2 -std=c++17 probe.cpp -lOpenCL -o probe && ./probe [device-substring]
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void ck(cl_int e, const char* w) {
  if (e != CL_SUCCESS) { std::fprintf(stderr, "%s failed: %d\n", w, e); std::exit(1); }
}
static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static const char* src = R"CL(
__kernel void empty0() {}
__kernel void args30(__global float* a0, __global float* a1, __global float* a2, __global float* a3, __global float* a4,
  __global float* a5, __global float* a6, __global float* a7, __global float* a8, __global float* a9, __global float* a10,
  __global float* a11, __global float* a12, __global float* a13, __global float* a14, __global float* a15,
  int s0, int s1, int s2, int s3, int s4, int s5, int s6, int s7, int s8, int s9, int s10, int s11, int s12, int s13) {
  if (get_global_id(0) == 0xffffffffu) a0[0] = a1[0] + a2[0] + a3[0] + a4[0] + a5[0] + a6[0] + a7[0] + a8[0] + a9[0] + a10[0] + a11[0]
      + a12[0] + a13[0] + a14[0] + a15[0] + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13;
}
__kernel void chain(__global float* x) { if (get_global_id(0) == 0) x[0] += 1.0f; }
// What the argument count costs by kind: 16 buffers alone, and 30 scalars (16 of them device
// addresses as ulong, which is how the persistent program reaches its buffers).
__kernel void bufs16(__global float* a0, __global float* a1, __global float* a2, __global float* a3, __global float* a4,
  __global float* a5, __global float* a6, __global float* a7, __global float* a8, __global float* a9, __global float* a10,
  __global float* a11, __global float* a12, __global float* a13, __global float* a14, __global float* a15) {
  if (get_global_id(0) == 0xffffffffu) a0[0] = a1[0] + a2[0] + a3[0] + a4[0] + a5[0] + a6[0] + a7[0] + a8[0] + a9[0] + a10[0] + a11[0]
      + a12[0] + a13[0] + a14[0] + a15[0];
}
__kernel void scal30(ulong a0, ulong a1, ulong a2, ulong a3, ulong a4, ulong a5, ulong a6, ulong a7, ulong a8, ulong a9, ulong a10,
  ulong a11, ulong a12, ulong a13, ulong a14, ulong a15,
  int s0, int s1, int s2, int s3, int s4, int s5, int s6, int s7, int s8, int s9, int s10, int s11, int s12, int s13) {
  if (get_global_id(0) == 0xffffffffu) ((__global float*)a0)[0] = (float)(a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15)
      + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13;
}

#ifdef USE_PTX
#define FENCE() asm volatile("fence.acq_rel.gpu;" ::: "memory")
#else
#define FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#endif
inline void grid_sync(volatile __global uint* bar, uint target) {
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    FENCE();
    atomic_add(bar, 1u);
    while ((int)(*bar - target) < 0) {}
    FENCE();
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
}
// Every work-group writes its slot, syncs, then reads every other work-group's slot of this round.
__kernel void gridbar(volatile __global uint* bar, __global uint* data, uint iters, uint base, __global uint* err) {
  const uint nb = get_num_groups(0), g = get_group_id(0), l = get_local_id(0);
  uint target = base;
  uint bad = 0;
  for (uint it = 0; it < iters; ++it) {
    __global uint* d = data + (it & 1u) * nb * 64u;
    if (l < 64) d[g * 64 + l] = it * 7919u + g * 64 + l;
    target += nb;
    grid_sync(bar, target);
    for (uint j = l; j < nb * 64u; j += get_local_size(0))
      if (d[j] != it * 7919u + j) ++bad;
  }
  if (bad) atomic_add(err, bad);
}
__kernel void gridbar_only(volatile __global uint* bar, uint iters, uint base) {
  const uint nb = get_num_groups(0);
  uint target = base;
  for (uint it = 0; it < iters; ++it) { target += nb; grid_sync(bar, target); }
}
)CL";

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* want = argc > 1 ? argv[1] : "NVIDIA";
  cl_uint np = 0;
  clGetPlatformIDs(0, nullptr, &np);
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  cl_device_id dev = nullptr;
  for (auto p : ps) {
    char name[256] = {};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if (std::strstr(name, want)) { clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, nullptr); break; }
  }
  if (!dev) { std::fprintf(stderr, "no device matching %s\n", want); return 1; }
  char dname[256] = {}, drv[128] = {};
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, nullptr);
  clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, nullptr);
  cl_uint cus = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, nullptr);
  std::size_t extn = 0;
  clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, nullptr, &extn);
  std::string ext(extn, '\0');
  clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, extn, ext.data(), nullptr);
  std::printf("device: %s, driver %s, %u compute units\nextensions: %s\n", dname, drv, cus, ext.c_str());
  cl_int e;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &e);
  ck(e, "context");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  ck(e, "queue");
  bool nv = std::strstr(want, "NVIDIA") != nullptr;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &e);
  ck(e, "program");
  if (clBuildProgram(prog, 1, &dev, nv ? "-DUSE_PTX" : "", nullptr, nullptr) != CL_SUCCESS) {
    char log[8192] = {};
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, nullptr);
    std::fprintf(stderr, "build failed:\n%s\n", log);
    return 1;
  }
  auto kern = [&](const char* n) { cl_kernel k = clCreateKernel(prog, n, &e); ck(e, n); return k; };
  std::vector<cl_mem> bufs(16);
  for (auto& b : bufs) { b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, nullptr, &e); ck(e, "buffer"); }
  cl_kernel k0 = kern("empty0"), k30 = kern("args30"), kch = kern("chain");
  for (int i = 0; i < 16; ++i) ck(clSetKernelArg(k30, i, sizeof(cl_mem), &bufs[i]), "arg");
  for (int i = 16; i < 30; ++i) { int v = i; ck(clSetKernelArg(k30, i, sizeof v, &v), "arg"); }
  ck(clSetKernelArg(kch, 0, sizeof(cl_mem), &bufs[0]), "arg");
  cl_kernel kb16 = kern("bufs16"), kb16s = kern("bufs16"), ks30 = kern("scal30");
  for (int i = 0; i < 16; ++i) ck(clSetKernelArg(kb16, i, sizeof(cl_mem), &bufs[i]), "arg"), ck(clSetKernelArg(kb16s, i, sizeof(cl_mem), &bufs[0]), "arg");
  for (int i = 0; i < 16; ++i) { cl_ulong v = 0; ck(clSetKernelArg(ks30, i, sizeof v, &v), "arg"); }
  for (int i = 16; i < 30; ++i) { int v = i; ck(clSetKernelArg(ks30, i, sizeof v, &v), "arg"); }
  // Host enqueue cost and total time per launch, for N back-to-back launches.
  auto launches = [&](cl_kernel k, std::size_t global, std::size_t local, int n, bool gated) {
    double best_enq = 1e30, best_tot = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      cl_event gate = nullptr;
      if (gated) { gate = clCreateUserEvent(ctx, &e); ck(e, "user event"); ck(clEnqueueMarkerWithWaitList(q, 1, &gate, nullptr), "marker"); }
      double t0 = now_us();
      for (int i = 0; i < n; ++i) ck(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr), "enqueue");
      double t1 = now_us();
      if (gated) ck(clSetUserEventStatus(gate, CL_COMPLETE), "release");
      double t2 = now_us();
      ck(clFinish(q), "finish");
      double t3 = now_us();
      if (gate) clReleaseEvent(gate);
      best_enq = std::min(best_enq, (t1 - t0) / n);
      best_tot = std::min(best_tot, gated ? (t3 - t2) / n : (t3 - t0) / n);
    }
    return std::pair{best_enq, best_tot};
  };
  struct Case { const char* name; cl_kernel k; std::size_t g, l; };
  for (auto c : {Case{"empty0 1x64", k0, 64, 64}, Case{"empty0 132x256", k0, 132 * 256, 256}, Case{"args30 1x64", k30, 64, 64},
                 Case{"args30 264x256", k30, 264 * 256, 256}, Case{"chain 1x64", kch, 64, 64},
                 Case{"bufs16 264x256", kb16, 264 * 256, 256}, Case{"bufs16same 264x256", kb16s, 264 * 256, 256},
                 Case{"scal30 264x256", ks30, 264 * 256, 256}}) {
    auto [enq, tot] = launches(c.k, c.g, c.l, 1000, false);
    auto [genq, gtot] = launches(c.k, c.g, c.l, 1000, true);
    std::printf("launch %-16s: host enqueue %.2f us, enqueue..finish %.2f us per launch; behind a gate: enqueue %.2f us, device %.2f us per launch\n",
                c.name, enq, tot, genq, gtot);
  }
  // Grid barrier: correctness and cost for 1..4 work-groups per compute unit (GPUs only: a CPU
  // driver runs work-groups one after another, so a grid barrier there never completes).
  if (!nv) return 0;
  cl_kernel kb = kern("gridbar"), kbo = kern("gridbar_only");
  cl_mem bar = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, nullptr, &e), data = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * 1024 * 64 * 4, nullptr, &e),
         err = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, nullptr, &e);
  unsigned base = 0;
  const unsigned zero = 0;
  ck(clEnqueueWriteBuffer(q, bar, CL_TRUE, 0, 4, &zero, 0, nullptr, nullptr), "zero");
  for (unsigned per : {1u, 2u, 4u}) {
    for (std::size_t local : {std::size_t(256), std::size_t(512)}) {
      unsigned nb = cus * per;
      if (nb > 1024) continue;
      std::size_t global = nb * local;
      unsigned iters = 2000;
      ck(clEnqueueWriteBuffer(q, err, CL_TRUE, 0, 4, &zero, 0, nullptr, nullptr), "zero");
      clSetKernelArg(kb, 0, sizeof bar, &bar), clSetKernelArg(kb, 1, sizeof data, &data), clSetKernelArg(kb, 2, 4, &iters);
      clSetKernelArg(kb, 3, 4, &base), clSetKernelArg(kb, 4, sizeof err, &err);
      double t0 = now_us();
      ck(clEnqueueNDRangeKernel(q, kb, 1, nullptr, &global, &local, 0, nullptr, nullptr), "gridbar");
      ck(clFinish(q), "gridbar finish");
      double t1 = now_us();
      base += nb * iters;
      unsigned bad = 0;
      clEnqueueReadBuffer(q, err, CL_TRUE, 0, 4, &bad, 0, nullptr, nullptr);
      clSetKernelArg(kbo, 0, sizeof bar, &bar), clSetKernelArg(kbo, 1, 4, &iters), clSetKernelArg(kbo, 2, 4, &base);
      double t2 = now_us();
      ck(clEnqueueNDRangeKernel(q, kbo, 1, nullptr, &global, &local, 0, nullptr, nullptr), "gridbar_only");
      ck(clFinish(q), "gridbar_only finish");
      double t3 = now_us();
      base += nb * iters;
      std::printf("grid barrier %4u groups x %3zu: %.3f us per barrier with data check (%u bad reads), %.3f us barrier only\n", nb, local,
                  (t1 - t0) / iters, bad, (t3 - t2) / iters);
    }
  }
  return 0;
}
