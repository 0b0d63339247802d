// Times the OpenCL target's matrix kernels as a linear layer binds them (ocl::bind_gemm: the
// tensor cores where the device has them, else the FP32 tiles), bf16 in and out, with OpenCL
// profiling events: median of 30 runs after 5, inputs rotating over copies totalling >= 256 MB so
// that no run reads a warm L2. Each shape is checked first against a double-precision product on
// 256 sampled outputs (output poisoned before the run). Without Google Benchmark (the GPU machine
// has no usable one); next to bench/opencl_mma/torch_peer.py (torch.matmul) in the same call:
//   g++ -std=c++20 -O2 -Iinclude -Ibuild/generated/include bench/opencl_gemm_time.cpp -o /tmp/gemm_time -lOpenCL
//   NPUSIM_OPENCL_DEVICE=NVIDIA /tmp/gemm_time [MxKxN ...]     (default: the shapes below)
// Prints one line per shape: GEMM <M>x<K>x<N> <median us> <TFLOP/s> rel_l2 <err> path <mma|fp32>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "npusim/target/opencl/kernels/linalg.hpp"
#include "npusim/target/opencl/mma.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

using namespace npusim;

namespace {

struct Shape3 {
  std::int64_t M, K, N;
};

std::vector<std::uint16_t> random_bf16(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16_bits(d(rng));
  return v;
}

int time_shape(ocl::Device& dev, Shape3 s) {
  ir::Graph g;
  plan::BufferPlan plan;
  std::vector<ocl::Launch> launches;
  std::vector<ocl::Mem> keep;
  std::vector<ocl::IndexCheck> checks;
  ocl::Mem dummy = dev.alloc(64, "bench"), errors = dev.alloc(16, "bench");
  const std::size_t abytes = static_cast<std::size_t>(s.M * s.K) * 2, wbytes = static_cast<std::size_t>(s.N * s.K) * 2,
                    cbytes = static_cast<std::size_t>(s.M * s.N) * 2;
  const std::size_t copies = std::clamp<std::size_t>((256u << 20) / (abytes + wbytes) + 1, 1, 8);
  std::vector<ocl::Mem> as, ws, cs;
  std::vector<std::vector<std::uint16_t>> ah, wh;
  for (std::size_t i = 0; i < copies; ++i) {
    ah.push_back(random_bf16(abytes / 2, 100 + static_cast<unsigned>(i))), wh.push_back(random_bf16(wbytes / 2, 200 + static_cast<unsigned>(i)));
    as.push_back(dev.alloc(abytes, "A")), ws.push_back(dev.alloc(wbytes, "W")), cs.push_back(dev.alloc(cbytes, "C"));
    dev.write(as.back().get(), 0, abytes, ah.back().data(), true);
    dev.write(ws.back().get(), 0, wbytes, wh.back().data(), true);
  }
  // One bound launch list per copy (bind_gemm sets the arguments once, as the executor does).
  std::vector<std::vector<ocl::Launch>> per(copies);
  for (std::size_t i = 0; i < copies; ++i) {
    ocl::Binder b(dev, g, plan, [](ir::TensorId) { return ocl::TensorRef{}; }, dummy.get(), per[i], keep, checks, errors.get());
    ocl::Gemm gm;
    gm.a = {as[i].get(), 0, DType::bf16}, gm.b = {ws[i].get(), 0, DType::bf16}, gm.c = {cs[i].get(), 0, DType::bf16};
    gm.M = s.M, gm.N = s.N, gm.K = s.K, gm.sam = s.K, gm.sak = 1, gm.sbk = 1, gm.sbn = s.K, gm.scm = s.N, gm.scn = 1;
    ocl::bind_gemm(b, gm);
  }
  cl_command_queue q = dev.profiling_queue();
  auto run = [&](std::size_t i, bool timed) {
    std::vector<cl_event> ev(per[i].size());
    for (std::size_t j = 0; j < per[i].size(); ++j) {
      const auto& l = per[i][j];
      ocl::check(clEnqueueNDRangeKernel(q, l.kernel.get(), l.dims, nullptr, l.global.data(), l.local.data(), 0, nullptr, &ev[j]), l.name);
    }
    ocl::check(clFinish(q), "finish");
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev.front(), CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
    clGetEventProfilingInfo(ev.back(), CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    for (auto e : ev) clReleaseEvent(e);
    return timed ? static_cast<double>(t1 - t0) / 1000.0 : 0.0;
  };
  // Check: poisoned output, 256 sampled elements against float64.
  std::vector<std::uint16_t> poison(cbytes / 2, 0xffff), c(cbytes / 2);
  dev.write(cs[0].get(), 0, cbytes, poison.data(), true);
  run(0, false);
  ocl::check(clEnqueueReadBuffer(dev.queue(), cs[0].get(), CL_TRUE, 0, cbytes, c.data(), 0, nullptr, nullptr), "read C");
  std::mt19937 rng(7);
  double num = 0, den = 0;
  bool unwritten = false;
  for (int t = 0; t < 256; ++t) {
    const std::int64_t m = static_cast<std::int64_t>(rng() % static_cast<unsigned>(s.M)), n = static_cast<std::int64_t>(rng() % static_cast<unsigned>(s.N));
    double ref = 0;
    for (std::int64_t k = 0; k < s.K; ++k)
      ref += static_cast<double>(bf16_bits_to_f32(ah[0][static_cast<std::size_t>(m * s.K + k)])) * bf16_bits_to_f32(wh[0][static_cast<std::size_t>(n * s.K + k)]);
    const float got = bf16_bits_to_f32(c[static_cast<std::size_t>(m * s.N + n)]);
    unwritten = unwritten || !std::isfinite(got);
    num += (got - ref) * (got - ref), den += ref * ref;
  }
  const double err = std::sqrt(num / den);
  for (int i = 0; i < 5; ++i) run(static_cast<std::size_t>(i) % copies, false);
  std::vector<double> us;
  for (int i = 0; i < 30; ++i) us.push_back(run(static_cast<std::size_t>(i) % copies, true));
  std::sort(us.begin(), us.end());
  const double med = us[us.size() / 2], tflops = 2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K) / (med * 1e6);
  const bool ok = !unwritten && err < 1e-2;
  std::printf("GEMM %lldx%lldx%lld %.1f us %.1f TFLOP/s rel_l2 %.2e path %s launches %zu%s\n", static_cast<long long>(s.M), static_cast<long long>(s.K),
              static_cast<long long>(s.N), med, tflops, err, !ocl::mma_support(dev).ok ? "fp32" : ocl::mma_support(dev).emulated ? "mma-emulated" : "mma", per[0].size(), ok ? "" : "  CHECK FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto dev = ocl::open_device();
    std::printf("device: %s\nmatrix kernels: %s\n", dev->info().describe().c_str(), ocl::mma_support(*dev).why.c_str());
    std::vector<Shape3> shapes{{4096, 4096, 4096}, {128, 1536, 1536}, {128, 1536, 8960}, {128, 8960, 1536}, {128, 1536, 151936}};
    if (argc > 1) {
      shapes.clear();
      for (int i = 1; i < argc; ++i) {
        long long m = 0, k = 0, n = 0;
        if (std::sscanf(argv[i], "%lldx%lldx%lld", &m, &k, &n) != 3 || m <= 0 || k <= 0 || n <= 0) {
          std::fprintf(stderr, "shape '%s' is not MxKxN\n", argv[i]);
          return 2;
        }
        shapes.push_back({m, k, n});
      }
    }
    int rc = 0;
    for (const auto& s : shapes) rc |= time_shape(*dev, s);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
