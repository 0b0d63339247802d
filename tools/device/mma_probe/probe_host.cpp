// Runs gemm.cl's mma_probe kernel on the NVIDIA GPU, one source variant per process (a fault kills the
// process's OpenCL): builds it, dumps the program binary (PTX) to OUT_PTX, runs 32 work-items, counts
// wrong elements. tools/device/mma_probe/run.sh drives it.
//   probe_host OUT_PTX SOURCE.cl... -- BUILD OPTIONS
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
static std::string slurp(const char* p) { std::ifstream f(p); std::stringstream s; s << f.rdbuf(); return s.str(); }
#define CK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) { std::printf("  %s -> %d\n", #x, e_); return 1; } } while (0)
int main(int argc, char** argv) {
  // argv: out_ptx src1 src2 ... -- options
  std::string src, opts; const char* ptx_out = argv[1]; int i = 2;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) src += slurp(argv[i]) + "\n";
  for (++i; i < argc; ++i) opts += std::string(argv[i]) + " ";
  cl_uint np = 0; clGetPlatformIDs(0, nullptr, &np); std::vector<cl_platform_id> ps(np); clGetPlatformIDs(np, ps.data(), nullptr);
  cl_device_id dev = nullptr;
  for (auto p : ps) { char n[256]; clGetPlatformInfo(p, CL_PLATFORM_NAME, 256, n, nullptr); if (std::string(n).find("NVIDIA") != std::string::npos) clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, &dev, nullptr); }
  if (!dev) { std::printf("  no NVIDIA device\n"); return 1; }
  cl_int e; cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &e); CK(e);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e); CK(e);
  const char* s = src.c_str(); cl_program prog = clCreateProgramWithSource(ctx, 1, &s, nullptr, &e); CK(e);
  e = clBuildProgram(prog, 1, &dev, opts.c_str(), nullptr, nullptr);
  size_t ls = 0; clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &ls); std::string log(ls, 0); clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, ls, log.data(), nullptr);
  if (e != CL_SUCCESS) { std::printf("  build %d: %s\n", e, log.c_str()); return 1; }
  size_t bs = 0; clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bs, &bs, nullptr); std::string bin(bs, 0); unsigned char* bp = (unsigned char*)bin.data();
  clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bp, &bp, nullptr); std::ofstream(ptx_out) << bin;
  cl_kernel k = clCreateKernel(prog, "mma_probe", &e); CK(e);
  const bool f16 = opts.find("MMA_T=1") != std::string::npos;
  std::vector<float> a(256), w(256); std::vector<unsigned short> ah(256), wh(256), bh(256);
  auto cvt = [&](float v) -> unsigned short { if (!f16) { unsigned u; std::memcpy(&u, &v, 4); return (unsigned short)(u >> 16); }
    // small integers: exact in f16
    int iv = (int)v; if (iv == 0) return 0; unsigned sgn = iv < 0 ? 0x8000 : 0; unsigned m = (unsigned)std::abs(iv); int ex = 31 - __builtin_clz(m);
    return (unsigned short)(sgn | ((ex + 15) << 10) | ((m << (10 - ex)) & 0x3ff)); };
  for (int j = 0; j < 256; ++j) { a[j] = (float)((j * 7) % 11 - 5); w[j] = (float)((j * 5) % 9 - 4); ah[j] = cvt(a[j]); wh[j] = cvt(w[j]); }
  for (int kk = 0; kk < 16; ++kk) for (int n = 0; n < 16; ++n) bh[kk * 16 + n] = wh[n * 16 + kk];
  cl_mem ab = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 512, ah.data(), &e), wb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 512, wh.data(), &e),
         bb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 512, bh.data(), &e), cb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2048, nullptr, &e);
  cl_mem args[] = {ab, wb, bb, cb}; for (cl_uint j = 0; j < 4; ++j) CK(clSetKernelArg(k, j, sizeof(cl_mem), &args[j]));
  size_t g = 32; CK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &g, 0, nullptr, nullptr));
  std::vector<float> c(512, NAN); CK(clEnqueueReadBuffer(q, cb, CL_TRUE, 0, 2048, c.data(), 0, nullptr, nullptr));
  int bad[2] = {0, 0};
  for (int way = 0; way < 2; ++way) for (int m = 0; m < 16; ++m) for (int n = 0; n < 16; ++n) { double r = 0; for (int kk = 0; kk < 16; ++kk) r += (double)a[m * 16 + kk] * w[n * 16 + kk]; if (c[way * 256 + m * 16 + n] != r) ++bad[way]; }
  std::printf("  ran: wrong elements W-rows %d, ldmatrix.trans %d (of 256 each)\n", bad[0], bad[1]);
  return 0;
}
