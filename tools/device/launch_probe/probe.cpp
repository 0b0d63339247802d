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

// Real work with its buffers passed two ways: as buffer arguments, and as device addresses
// (ulong, what pk_address reads): a GEMV (one warp a row, 16-byte loads of bf16 weights) and a
// one-work-group row norm, each with 8 buffers it reads.
#ifdef USE_PTX
inline float wsum(float v, __local float* r) {
  float t;
  for (int o = 16; o > 0; o >>= 1) { asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(t) : "f"(v), "r"(o)); v += t; }
  return v;
}
#else
inline float wsum(float v, __local float* r) {
  const int l = get_local_id(0), b = l & ~31;
  r[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = 0.0f;
  for (int i = 0; i < 32; ++i) s += r[b + i];
  barrier(CLK_LOCAL_MEM_FENCE);
  return s;
}
#endif
inline float bf(uint u, int hi) { return as_float(hi ? (u & 0xffff0000u) : (u << 16)); }
inline void gemv_body(__global const uint4* w, __global const float* x, __global float* y, __global const float* d0, __global const float* d1,
                      __global const float* d2, __global const float* d3, __global const float* d4, int k8, __local float* r) {
  const int row = get_global_id(0) / 32, lane = get_local_id(0) & 31;
  float s = 0.0f;
  for (int c = lane; c < k8; c += 32) {
    const uint4 u = w[(long)row * k8 + c];
    __global const float* xc = x + c * 8;
    s += bf(u.x, 0) * xc[0] + bf(u.x, 1) * xc[1] + bf(u.y, 0) * xc[2] + bf(u.y, 1) * xc[3] + bf(u.z, 0) * xc[4] + bf(u.z, 1) * xc[5] +
         bf(u.w, 0) * xc[6] + bf(u.w, 1) * xc[7];
  }
  s = wsum(s, r);
  if (lane == 0) y[row] = s * d0[row & 7] + d1[0] + d2[0] + d3[0] + d4[0];
}
inline void norm_body(__global const float* x, __global float* y, __global const float* d0, __global const float* d1, __global const float* d2,
                      __global const float* d3, __global const float* d4, __global const float* d5, int n, __local float* r) {
  __local float* part = r + 256;
  const int l = get_local_id(0);
  float v[6], ss = 0.0f;
  for (int j = 0; j < 6; ++j) { v[j] = l + j * 256 < n ? x[l + j * 256] : 0.0f; ss += v[j] * v[j]; }
  ss = wsum(ss, r);
  if ((l & 31) == 0) part[l >> 5] = ss;
  barrier(CLK_LOCAL_MEM_FENCE);
  float t = 0.0f;
  for (int i = 0; i < 8; ++i) t += part[i];
  const float inv = rsqrt(t / n + 1e-6f) + d1[0] + d2[0] + d3[0] + d4[0] + d5[0];
  for (int j = 0; j < 6; ++j) if (l + j * 256 < n) y[l + j * 256] = v[j] * inv * d0[(l + j * 256) & 7];
}
__kernel void gemv_bufs(__global const uint4* w, __global const float* x, __global float* y, __global const float* d0, __global const float* d1,
                        __global const float* d2, __global const float* d3, __global const float* d4, int k8) {
  __local float r[264];
  gemv_body(w, x, y, d0, d1, d2, d3, d4, k8, r);
}
__kernel void gemv_addr(ulong w, ulong x, ulong y, ulong d0, ulong d1, ulong d2, ulong d3, ulong d4, int k8) {
  __local float r[264];
  gemv_body((__global const uint4*)w, (__global const float*)x, (__global float*)y, (__global const float*)d0, (__global const float*)d1,
            (__global const float*)d2, (__global const float*)d3, (__global const float*)d4, k8, r);
}
__kernel void norm_bufs(__global const float* x, __global float* y, __global const float* d0, __global const float* d1, __global const float* d2,
                        __global const float* d3, __global const float* d4, __global const float* d5, int n) {
  __local float r[264];
  norm_body(x, y, d0, d1, d2, d3, d4, d5, n, r);
}
__kernel void norm_addr(ulong x, ulong y, ulong d0, ulong d1, ulong d2, ulong d3, ulong d4, ulong d5, int n) {
  __local float r[264];
  norm_body((__global const float*)x, (__global float*)y, (__global const float*)d0, (__global const float*)d1, (__global const float*)d2,
            (__global const float*)d3, (__global const float*)d4, (__global const float*)d5, n, r);
}
__kernel void address_of(__global uchar* b, __global ulong* out, int i) { if (get_global_id(0) == 0) out[i] = (ulong)b; }

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
  // Real work, buffers as arguments vs as addresses: a chain of GEMV -> norm -> GEMV ... (each
  // reads what the last wrote; in-order queue), host time per launch and, on a profiling queue,
  // each kind's START..END and the gap from one kernel's END to the next one's START.
  {
    const int rows = 1536, k = 1536, k8 = k / 8;
    cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::size_t(rows) * k * 2, nullptr, &e);
    ck(e, "w");
    std::vector<unsigned short> wh(std::size_t(rows) * k);
    for (std::size_t i = 0; i < wh.size(); ++i) wh[i] = 0x3c00 + (i * 2654435761u >> 24) % 64;  // bf16 values near 0.0078..
    ck(clEnqueueWriteBuffer(q, w, CL_TRUE, 0, wh.size() * 2, wh.data(), 0, nullptr, nullptr), "w write");
    std::vector<float> ones(4096, 1.0f);
    for (auto& b : bufs) ck(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, ones.size() * 4, ones.data(), 0, nullptr, nullptr), "fill");
    cl_mem xb = bufs[0], yb = bufs[1];
    cl_mem addrs = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 32 * 8, nullptr, &e);
    cl_kernel ka = kern("address_of");
    std::vector<cl_mem> all{w};
    for (auto b : bufs) all.push_back(b);
    for (int i = 0; i < static_cast<int>(all.size()); ++i) {
      std::size_t one = 1;
      clSetKernelArg(ka, 0, sizeof(cl_mem), &all[i]), clSetKernelArg(ka, 1, sizeof(cl_mem), &addrs), clSetKernelArg(ka, 2, sizeof i, &i);
      ck(clEnqueueNDRangeKernel(q, ka, 1, nullptr, &one, &one, 0, nullptr, nullptr), "address_of");
    }
    std::vector<cl_ulong> ad(all.size());
    ck(clEnqueueReadBuffer(q, addrs, CL_TRUE, 0, ad.size() * 8, ad.data(), 0, nullptr, nullptr), "addresses");
    // gemv: x = bufs[0] -> y = bufs[1]; norm: bufs[1] -> bufs[0]; extras bufs[2..7].
    cl_kernel gb = kern("gemv_bufs"), ga = kern("gemv_addr"), nb_ = kern("norm_bufs"), na = kern("norm_addr");
    cl_mem gbuf[8] = {w, xb, yb, bufs[2], bufs[3], bufs[4], bufs[5], bufs[6]};
    cl_mem nbuf[8] = {yb, xb, bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7]};
    for (int i = 0; i < 8; ++i) clSetKernelArg(gb, i, sizeof(cl_mem), &gbuf[i]), clSetKernelArg(nb_, i, sizeof(cl_mem), &nbuf[i]);
    auto addr_of = [&](cl_mem m) { for (std::size_t i = 0; i < all.size(); ++i) if (all[i] == m) return ad[i]; return cl_ulong(0); };
    for (int i = 0; i < 8; ++i) {
      cl_ulong a = addr_of(gbuf[i]), b = addr_of(nbuf[i]);
      clSetKernelArg(ga, i, 8, &a), clSetKernelArg(na, i, 8, &b);
    }
    clSetKernelArg(gb, 8, 4, &k8), clSetKernelArg(ga, 8, 4, &k8), clSetKernelArg(nb_, 8, 4, &k), clSetKernelArg(na, 8, 4, &k);
    const std::size_t gg = std::size_t(rows) * 32, gl = 128, ng = 256, nl = 256;
    cl_command_queue pq = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e);
    ck(e, "profiling queue");
    for (int variant = 0; variant < 4; ++variant) {
      const bool addr = variant & 1;
      cl_kernel g = addr ? ga : gb, nk = addr ? na : nb_;
      const int pairs = 300;
      double best = 1e30, best_enq = 1e30;
      for (int rep = 0; rep < 4; ++rep) {
        clFinish(q);
        double t0 = now_us();
        for (int i = 0; i < pairs; ++i) {
          ck(clEnqueueNDRangeKernel(q, g, 1, nullptr, &gg, &gl, 0, nullptr, nullptr), "gemv");
          ck(clEnqueueNDRangeKernel(q, nk, 1, nullptr, &ng, &nl, 0, nullptr, nullptr), "norm");
        }
        double t1 = now_us();
        ck(clFinish(q), "chain");
        double t2 = now_us();
        best = std::min(best, (t2 - t0) / pairs), best_enq = std::min(best_enq, (t1 - t0) / pairs);
      }
      // The same chain on a profiling queue: START..END per kind and END -> next START.
      std::vector<cl_event> ev(2 * 100);
      for (int i = 0; i < 100; ++i) {
        clEnqueueNDRangeKernel(pq, g, 1, nullptr, &gg, &gl, 0, nullptr, &ev[2 * i]);
        clEnqueueNDRangeKernel(pq, nk, 1, nullptr, &ng, &nl, 0, nullptr, &ev[2 * i + 1]);
      }
      clFinish(pq);
      std::vector<double> dg, dn, gap;
      cl_ulong prev_end = 0;
      for (std::size_t i = 0; i < ev.size(); ++i) {
        cl_ulong s0 = 0, s1 = 0;
        clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, 8, &s0, nullptr);
        clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, 8, &s1, nullptr);
        (i % 2 ? dn : dg).push_back((s1 - s0) / 1e3);
        if (prev_end && i > 10) gap.push_back((double(s0) - double(prev_end)) / 1e3);
        prev_end = s1;
        clReleaseEvent(ev[i]);
      }
      auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      std::printf("work %-5s (round %d): gemv 1536x1536 bf16 + norm 1536, per pair: %.2f us (host enqueue %.2f); profiled: gemv %.2f us, norm %.2f us, "
                  "gap END->START %.2f us (medians)\n",
                  addr ? "addr" : "bufs", variant / 2 + 1, best, best_enq, med(dg), med(dn), med(gap));
    }
    clReleaseCommandQueue(pq);
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
