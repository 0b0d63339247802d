// Test helper for binding OpenCL matrix kernels directly (ocl::bind_gemm, as the executor binds a
// kernel): a Binder over no graph, device buffers made from host values, and a run of what was bound.
#pragma once

#include <cmath>
#include <vector>

#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/device.hpp"

namespace npusim::test {

struct OpenCLBuffers {
  std::shared_ptr<ocl::Device> dev = ocl::open_device();
  ir::Graph g;
  plan::BufferPlan plan;
  std::vector<ocl::Launch> launches;
  std::vector<ocl::Mem> keep;
  std::vector<ocl::IndexCheck> checks;
  ocl::Mem dummy = dev->alloc(64, "test"), errors = dev->alloc(16, "test");
  ocl::Binder b{*dev, g, plan, [](ir::TensorId) { return ocl::TensorRef{}; }, dummy.get(), launches, keep, checks, errors.get()};

  // Raw bytes on the device, seen as dtype dt.
  ocl::TensorRef bytes(const std::vector<std::byte>& v, DType dt, std::size_t offset = 0) {
    keep.push_back(dev->alloc(v.size(), "test"));
    dev->write(keep.back().get(), 0, v.size(), v.data(), true);
    return {keep.back().get(), static_cast<cl_ulong>(offset), dt};
  }
  // Values stored as `dt` (the host copy keeps what the device sees, as floats); `pad` elements of
  // NaN before the data make the device offset unaligned when odd.
  ocl::TensorRef upload(const std::vector<float>& v, DType dt, std::size_t pad = 0) {
    const std::size_t esz = dtype_size(dt);
    std::vector<float> all(pad, std::nanf(""));
    all.insert(all.end(), v.begin(), v.end());
    std::vector<std::byte> b(all.size() * esz);
    convert_elements(DType::f32, all.data(), dt, b.data(), static_cast<std::int64_t>(all.size()));
    return bytes(b, dt, pad * esz);
  }
  std::vector<float> download(const ocl::TensorRef& r, std::size_t n) {
    std::vector<std::byte> bytes(n * dtype_size(r.dtype));
    ocl::check(clEnqueueReadBuffer(dev->queue(), r.mem, CL_TRUE, r.off, bytes.size(), bytes.data(), 0, nullptr, nullptr), "read");
    std::vector<float> v(n);
    convert_elements(r.dtype, bytes.data(), DType::f32, v.data(), static_cast<std::int64_t>(n));
    return v;
  }
  void run() {
    for (const auto& l : launches)
      ocl::check(clEnqueueNDRangeKernel(dev->queue(), l.kernel.get(), l.dims, nullptr, l.global.data(), l.local.data(), 0, nullptr, nullptr), l.name);
    ocl::check(clFinish(dev->queue()), "finish");
  }
};

}  // namespace npusim::test
