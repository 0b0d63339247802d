// An NPU description: what the cost model (npu/cost_model.hpp) needs to know about an NPU, as plain
// data. The JSON schema that fills it is npu/description_json.hpp's (docs/npu-simulation.md).
//
//   MAC array      rows x columns per compute dtype: each cycle it multiplies a row vector of
//                  `rows` operands (the reduction dimension) by a rows x columns block (the
//                  output columns), i.e. rows * columns MACs per cycle
//   vector unit    width in bytes per cycle (elements per cycle = width / element size); exp,
//                  tanh, rsqrt, ... cost `transcendental_ops` vector operations per element
//   SRAM           bytes and banks (buffers are allocated in whole banks), in three regions:
//                  `weight_cache_bytes` hold weights across inferences (a parameter cache),
//                  `activation_bytes` hold intermediate tensors between kernels (the bottom of
//                  the program's activation arena), the rest is the kernels' working memory
//   DMA            bandwidth to DRAM and latency per transfer
//   dtypes, op classes that the NPU runs; every other kernel runs on the host, whose throughput
//                  and link to the NPU the description also gives
// Every figure of a bundled description carries its public source or says it is assumed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

struct MacArray {
  std::int64_t rows = 0, columns = 0;
  std::int64_t macs_per_cycle() const { return rows * columns; }
  friend bool operator==(const MacArray&, const MacArray&) = default;
};

struct HostSide {
  double gflops = 0;               // what the host computes in (GFLOP/s; a MAC is 2 flops)
  double memory_gb_per_s = 0;      // the host's memory bandwidth for its kernels
  double transfer_gb_per_s = 0;    // a tensor crossing between NPU and host
  double transfer_latency_us = 0;  // per tensor crossing
  friend bool operator==(const HostSide&, const HostSide&) = default;
};

// A figure and where it comes from (a URL, a document, "assumed: ...").
struct Source {
  std::string figure, source;
  friend bool operator==(const Source&, const Source&) = default;
};

struct Description {
  std::string name;
  std::string summary;
  double clock_mhz = 0;
  std::vector<std::pair<DType, MacArray>> mac_arrays;  // by compute dtype
  std::int64_t vector_width_bytes = 0;
  double transcendental_ops = 4;
  std::int64_t sram_bytes = 0, sram_banks = 1, weight_cache_bytes = 0, activation_bytes = 0;
  double dma_gb_per_s = 0, dma_latency_ns = 0;
  std::vector<DType> dtypes;              // storage/compute dtypes the NPU runs
  std::vector<ops::OpClass> op_classes;   // op classes it runs (views and no-ops always)
  HostSide host;
  std::vector<Source> sources;
  std::vector<std::string> assumptions;
  friend bool operator==(const Description&, const Description&) = default;

  const MacArray* mac_array(DType d) const;
  bool supports(DType d) const { return std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end(); }
  bool supports(ops::OpClass c) const;
  double clock_hz() const { return clock_mhz * 1e6; }
  std::int64_t bank_bytes() const { return sram_banks > 0 ? sram_bytes / sram_banks : sram_bytes; }
  // What kernels may use for tiles: the SRAM less the weight cache and the activation region.
  std::int64_t working_bytes() const { return sram_bytes - weight_cache_bytes - activation_bytes; }
  // Peak multiply-accumulates per second in `d` (0 when the MAC array does not compute in it).
  double peak_macs_per_s(DType d) const;
  // Vector elements per cycle for elements of `bytes` bytes (at least one).
  double vector_elements_per_cycle(std::int64_t bytes) const;
};

// The dtypes a description may name: the float types npusim computes in and the integer types
// NPUs quantise to.
inline constexpr DType npu_dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::i16, DType::i8};

inline bool is_npu_dtype(DType d) { return std::find(std::begin(npu_dtypes), std::end(npu_dtypes), d) != std::end(npu_dtypes); }

// Accumulator width of the MAC array in bytes: int32 for integer operands, float32 for floats.
inline std::int64_t accumulator_bytes(DType) { return 4; }

inline constexpr ops::OpClass all_op_classes[] = {ops::OpClass::elementwise, ops::OpClass::view,      ops::OpClass::movement,
                                                  ops::OpClass::reduction,   ops::OpClass::normalization, ops::OpClass::matmul,
                                                  ops::OpClass::conv,        ops::OpClass::pool,      ops::OpClass::indexing,
                                                  ops::OpClass::attention,   ops::OpClass::creation,  ops::OpClass::quantization,
                                                  ops::OpClass::noop};
// The name of an op class in descriptions ("matmul", "conv", ...): the registry's own.
inline const char* op_class_id(ops::OpClass c) { return ops::op_class_name(c); }

static_assert(std::size(all_op_classes) == static_cast<std::size_t>(ops::OpClass::noop) + 1,
              "NPUSIM: npu::all_op_classes must list every ops::OpClass (noop is the last)");

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/description_inl.hpp"
#endif
