// Which matrix kernels a device gets. NVIDIA GPUs of compute capability >= 8.0 (queried through
// cl_nv_device_attribute_query) can run half-precision matrix products and convolutions on the
// tensor cores: gemm_mma in cl/gemm.cl, OpenCL C with inline PTX (mma.sync.m16n8k16, ldmatrix),
// which NVIDIA's compiler hands to ptxas. Before the first use a probe program is built (and
// cached like every program) and run on a 16 x 16 x 16 product of small integers for both half
// types and both B layouts, A staged by cp.async; the path is taken only if every result is exact. Every other device
// (PoCL, other vendors, older NVIDIA parts, a probe that does not build or is inexact) keeps the
// FP32 kernels; a probe that builds and then faults is an error (the driver is unusable after it).
// The tensor-core kernels are on by default where they have been validated on a GPU: compute
// capability 9.x (an H100, 2026-11-26: probe exact, the matrix-kernel test, the 61 f16 op fixtures,
// ResNet-18/50 top-5 and the Qwen2.5-1.5B check pass; docs/opencl.md). Other capable devices
// (8.x) keep the FP32 kernels unless NPUSIM_OPENCL_MMA=1 and say so in `npusim devices`.
// NPUSIM_OPENCL_MMA=0 turns the path off; NPUSIM_OPENCL_MMA=emulate runs the same kernels on any device with
// ldmatrix and mma.sync emulated in portable OpenCL C by their documented fragment layouts (slow:
// for testing the kernels' tiling, addressing and epilogue where there is no NVIDIA GPU, as CI
// does). The decision and its reason are kept with the Device (`npusim devices` prints them).
#pragma once

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "npusim/core/tensor.hpp"
#include "npusim/target/opencl/device.hpp"
#include "npusim/target/opencl/kernels_cl.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

namespace detail {
// The probe built but failed when run: the kernel faulted. NVIDIA's driver then refuses every later
// OpenCL call of the process (seen on an H100, driver 580.159.04: CL_OUT_OF_RESOURCES reading the
// result, then clCreateContext failing with -9999), so there is nothing to fall back to.
struct MmaProbeFault {
  std::string what;
};
}  // namespace detail

// Runs the probe for one half type (code 1 f16, 2 bf16); an empty string when it is exact. A build
// failure throws Error; a failure once built throws detail::MmaProbeFault.
inline std::string run_mma_probe(Device& dev, int type_code) {
  std::string src;
  src.append(cl_source::common).append("\n").append(cl_source::gemm);
  const std::string t = std::to_string(type_code);
  cl_program p = dev.program("gemm", src, "-DMMA=1 -DMMA_T=" + t + " -DTA=" + t + " -DTB=" + t + " -DTC=" + t);
  KernelHandle k = dev.kernel(p, "mma_probe");
  const DType dt = type_code == 1 ? DType::f16 : DType::bf16;
  std::vector<float> a(256), w(256);
  for (int i = 0; i < 256; ++i) a[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 11 - 5), w[static_cast<std::size_t>(i)] = static_cast<float>((i * 5) % 9 - 4);
  std::vector<std::uint16_t> ah(256), wh(256), bh(256);
  convert_elements(DType::f32, a.data(), dt, ah.data(), 256);
  convert_elements(DType::f32, w.data(), dt, wh.data(), 256);
  for (int kk = 0; kk < 16; ++kk)
    for (int n = 0; n < 16; ++n) bh[static_cast<std::size_t>(kk * 16 + n)] = wh[static_cast<std::size_t>(n * 16 + kk)];  // B[k][n] = W[n][k]
  std::vector<float> c(512, std::nanf(""));
  try {
    Mem ab = dev.alloc(512, "the tensor-core probe"), wb = dev.alloc(512, "the tensor-core probe"), bb = dev.alloc(512, "the tensor-core probe"),
        cb = dev.alloc(512 * sizeof(float), "the tensor-core probe");
    dev.write(ab.get(), 0, 512, ah.data(), true);
    dev.write(wb.get(), 0, 512, wh.data(), true);
    dev.write(bb.get(), 0, 512, bh.data(), true);
    dev.write(cb.get(), 0, c.size() * sizeof(float), c.data(), true);
    cl_mem args[] = {ab.get(), wb.get(), bb.get(), cb.get()};
    for (cl_uint i = 0; i < 4; ++i) check(clSetKernelArg(k.get(), i, sizeof(cl_mem), &args[i]), "setting the tensor-core probe's arguments", dev.info().name);
    const std::size_t g = 32;
    check(clEnqueueNDRangeKernel(dev.queue(), k.get(), 1, nullptr, &g, &g, 0, nullptr, nullptr), "running the tensor-core probe", dev.info().name);
    check(clEnqueueReadBuffer(dev.queue(), cb.get(), CL_TRUE, 0, c.size() * sizeof(float), c.data(), 0, nullptr, nullptr), "reading the tensor-core probe",
          dev.info().name);
  } catch (const Error& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    throw detail::MmaProbeFault{std::move(what)};
  }
  for (int way = 0; way < 2; ++way)
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        double ref = 0;
        for (int kk = 0; kk < 16; ++kk) ref += static_cast<double>(a[static_cast<std::size_t>(m * 16 + kk)]) * w[static_cast<std::size_t>(n * 16 + kk)];
        const float got = c[static_cast<std::size_t>(way * 256 + m * 16 + n)];
        if (!(static_cast<double>(got) == ref))
          return std::string(dtype_name(dt)) + " product " + (way ? "(B through ldmatrix.trans) " : "") + "wrong at (" + std::to_string(m) + ", " +
                 std::to_string(n) + "): expected " + std::to_string(ref) + ", found " + std::to_string(got);
      }
  return {};
}

// What NPUSIM_OPENCL_MMA (`mode`) and the device's platform and compute capability decide before
// any probe: `probe` (tensor cores if the probe is exact), or `support` as it stands (FP32 kernels
// or emulation, with the reason). An unknown mode throws.
struct MmaGate {
  bool probe = false;
  MmaSupport support;
};
inline MmaGate mma_gate(std::string_view mode, std::string_view platform_name, int cc_major, int cc_minor) {
  MmaGate g;
  MmaSupport& s = g.support;
  if (mode == "0") {
    s.why = "FP32 kernels (NPUSIM_OPENCL_MMA=0)";
    return g;
  }
  if (mode == "emulate") {
    s.ok = s.emulated = true;
    s.why = "emulated tensor-core kernels (NPUSIM_OPENCL_MMA=emulate: portable OpenCL C, slow; for testing)";
    return g;
  }
  if (!mode.empty() && mode != "1")
    throw Error(ErrorCode::unsupported, "NPUSIM_OPENCL_MMA takes 0, 1 or emulate", {.expected = "0, 1 or emulate", .found = std::string(mode)});
  if (platform_name.find("NVIDIA") == std::string_view::npos || cc_major == 0) {
    s.why = "FP32 kernels (tensor cores need an NVIDIA GPU through NVIDIA's OpenCL)";
    return g;
  }
  const std::string cc = std::to_string(cc_major) + "." + std::to_string(cc_minor);
  if (cc_major < 8) {
    s.why = "FP32 kernels (compute capability " + cc + " < 8.0: no bf16 mma.sync)";
    return g;
  }
  if (mode.empty() && cc_major != 9) {
    s.why = "FP32 kernels (tensor cores available, compute capability " + cc +
            "; opt in with NPUSIM_OPENCL_MMA=1: validated on compute capability 9.x only)";
    return g;
  }
  g.probe = true;
  return g;
}

// The decision for `dev`, made once.
inline const MmaSupport& mma_support(Device& dev) {
  return dev.mma([](Device& d) {
    const DeviceInfo& i = d.info();
    const char* env = std::getenv("NPUSIM_OPENCL_MMA");
    MmaGate g = mma_gate(env ? env : "", i.platform_name, i.cc_major, i.cc_minor);
    MmaSupport& s = g.support;
    if (!g.probe) return s;
    const std::string cc = std::to_string(i.cc_major) + "." + std::to_string(i.cc_minor);
    try {
      for (int t : {2, 1})
        if (std::string bad = run_mma_probe(d, t); !bad.empty()) {
          s.why = "FP32 kernels (the tensor-core probe failed: " + bad + ")";
          return s;
        }
    } catch (const detail::MmaProbeFault& f) {
      throw Error(ErrorCode::runtime,
                  "the tensor-core probe built but faulted when run on " + i.name + " (" + f.what +
                      "); after a kernel fault NVIDIA's driver refuses every later OpenCL call of this process, so there is nothing to fall back to. "
                      "Run with NPUSIM_OPENCL_MMA=0 (the FP32 kernels; docs/opencl.md, \"Tensor cores\")",
                  {.expected = "an exact 16 x 16 x 16 probe product", .found = "a device fault"});
    } catch (const Error& e) {
      std::string what = e.what();
      if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      s.why = "FP32 kernels (the tensor-core probe did not build or run: " + what + ")";
      return s;
    }
    s.ok = true;
    s.why = "tensor cores for f16/bf16 matrix products and convolutions (mma.sync, compute capability " + cc + "; probe exact)";
    return s;
  });
}

}  // namespace npusim::inline NPUSIM_ABI::ocl
