// What the cost model says about a compiled program on an NPU: one record per kernel (where it
// runs, its tiling, DMA bytes by kind, cycles, time, utilisation and what bounds it) and the
// model's totals (latency, DRAM traffic, SRAM peak, MAC utilisation).
#pragma once

#include <string>
#include <vector>

#include "npusim/npu/tiling.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

enum class Placement : std::uint8_t { npu, host, free };  // free: a zero-copy view
enum class Bound : std::uint8_t { compute, dma, sram, host, none };

const char* placement_name(Placement p);

// compute: the MAC array or vector unit is the longer stage; dma: moving the operands once
// already takes longer than computing; sram: DMA-bound only because the SRAM forces operands to
// be re-read (with every operand read once it would be compute-bound); host: runs on the host.
const char* bound_name(Bound b);

struct KernelEstimate {
  std::int32_t partition = 0, kernel = 0;
  std::string kind, name;  // kernel kind and its last member node
  Model model = Model::vector;
  Placement placement = Placement::npu;
  std::string host_reason;  // why it runs on the host
  Bound bound = Bound::none;
  std::string tiling;
  std::int64_t macs = 0;
  double vector_ops = 0;
  Traffic dma;  // NPU kernels: DRAM traffic; host kernels: the host's memory traffic
  std::int64_t transfers = 0, tiles = 0;
  bool double_buffered = false;
  std::int64_t mac_cycles = 0;
  double vector_cycles = 0;
  double load_ns = 0, store_ns = 0, compute_ns = 0;
  double transfer_ns = 0;              // host <-> NPU crossings charged to this kernel
  std::int64_t transfer_bytes = 0;
  double start_ns = 0, time_ns = 0;    // time_ns includes transfer_ns
  std::int64_t sram_bytes = 0;         // weight cache + activation region in use + forwarded tensors + tile buffers
  double utilisation = 0;              // MACs / (MAC array peak * time)
  bool input_on_chip = false, output_on_chip = false;  // forwarded from / to the neighbouring kernel
  std::int64_t cached_weight_bytes = 0;                // of its weights, held in the weight cache
  double dma_ns() const { return load_ns + store_ns; }
  double end_ns() const { return start_ns + time_ns; }
};

struct Estimate {
  std::string npu;         // the description's name
  DType dtype = DType::f32;
  double clock_mhz = 0, peak_macs_per_s = 0, dma_gb_per_s = 0;
  std::vector<KernelEstimate> kernels;  // every kernel of every partition, in execution order
  double latency_ns = 0;
  Traffic dram;                      // NPU kernels' DMA traffic
  std::int64_t transfer_bytes = 0;   // host <-> NPU crossings
  std::int64_t host_bytes = 0;       // host kernels' memory traffic
  std::int64_t sram_peak_bytes = 0;
  std::int64_t weight_cache_used = 0;
  std::int64_t activation_used = 0;  // of the activation region
  std::int64_t macs = 0, npu_macs = 0;
  double mac_utilisation = 0;        // NPU MACs / (peak * latency)
  int npu_kernels = 0, host_kernels = 0;
  double npu_ns = 0, host_ns = 0, transfer_ns = 0;
  double bound_ns[5] = {0, 0, 0, 0, 0};  // time by Bound
};

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/estimate_inl.hpp"
#endif
