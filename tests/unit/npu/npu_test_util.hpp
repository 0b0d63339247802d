// Shared by the NPU cost-model tests: a small description with round numbers (1-byte banks, so
// no bank rounding; no DMA latency) and hand-built workloads.
#pragma once

#include "npusim/npu/cost_model.hpp"
#include "npusim/npu/description_json.hpp"
#include "npusim/npu/record.hpp"

namespace npusim::test {

inline npu::Description test_npu(std::int64_t rows = 16, std::int64_t cols = 16, std::int64_t sram = std::int64_t{1} << 20, double gb_per_s = 10,
                                 double mhz = 1000) {
  npu::Description d;
  d.name = "test";
  d.clock_mhz = mhz;
  d.mac_arrays = {{DType::i8, {rows, cols}}, {DType::f16, {rows, cols}}, {DType::f32, {rows, cols}}};
  d.vector_width_bytes = 64;
  d.sram_bytes = sram;
  d.sram_banks = sram;  // one-byte banks: buffers are not rounded
  d.dma_gb_per_s = gb_per_s;
  d.dma_latency_ns = 0;
  d.dtypes = {DType::i8, DType::f16, DType::f32};
  for (auto c : npu::all_op_classes)
    if (c != ops::OpClass::view && c != ops::OpClass::noop) d.op_classes.push_back(c);
  d.host = {10, 5, 1, 10};
  return d;
}

// C[m, n] = A[m, k] * W[k, n] with 1-byte elements; W a weight.
inline npu::Workload gemm_work(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t e = 1) {
  npu::Workload w;
  w.model = npu::Model::gemm;
  w.inputs = {{"a", m * k * e, m * k, false}, {"w", k * n * e, k * n, true}};
  w.outputs = {{"c", m * n * e, m * n, false}};
  w.gemm.m = m, w.gemm.k = k, w.gemm.n = n, w.gemm.a_elem = w.gemm.b_elem = w.gemm.c_elem = e;
  w.gemm.a = 0, w.gemm.b = 1;
  w.macs = m * k * n;
  return w;
}

inline npu::Workload conv_work(std::int64_t cin, std::int64_t h, std::int64_t wd, std::int64_t cout, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  npu::Workload w;
  w.model = npu::Model::conv;
  npu::ConvWork& c = w.conv;
  c.batch = 1, c.cin = cin, c.h = h, c.w = wd, c.cout = cout, c.kh = c.kw = k, c.sh = c.sw = stride, c.ph = c.pw = pad;
  c.oh = (h + 2 * pad - k) / stride + 1, c.ow = (wd + 2 * pad - k) / stride + 1;
  c.x_elem = c.w_elem = 1, c.x = 0, c.weight = 1;
  w.inputs = {{"x", cin * h * wd, cin * h * wd, false}, {"w", cout * cin * k * k, cout * cin * k * k, true}};
  w.outputs = {{"y", cout * c.oh * c.ow, cout * c.oh * c.ow, false}};
  w.macs = c.oh * c.ow * cout * cin * k * k;
  return w;
}

// Q [1, heads, sq, d] against K, V [1, kv_heads, skv, d]; an optional mask [1, 1, sq, skv].
inline npu::Workload attention_work(std::int64_t heads, std::int64_t kv_heads, std::int64_t sq, std::int64_t skv, std::int64_t d, bool mask) {
  npu::Workload w;
  w.model = npu::Model::attention;
  npu::AttentionWork& a = w.attention;
  a.batch = 1, a.heads = heads, a.kv_heads = kv_heads, a.sq = sq, a.skv = skv, a.d = d, a.elem = 1, a.q = 0, a.k = 1, a.v = 2;
  w.inputs = {{"q", heads * sq * d, heads * sq * d, false}, {"k", kv_heads * skv * d, kv_heads * skv * d, false}, {"v", kv_heads * skv * d, kv_heads * skv * d, false}};
  if (mask) a.mask = 3, a.mask_elem = 1, w.inputs.push_back({"mask", sq * skv, sq * skv, false});
  w.outputs = {{"o", heads * sq * d, heads * sq * d, false}};
  w.macs = 2 * heads * sq * skv * d;
  return w;
}

}  // namespace npusim::test
