// Estimates as text and JSON: the model's totals, a table by kernel kind, one line per kernel
// (what `inspect`, `explain`, `run --profile` and `simulate` print), and the whole estimate as
// JSON (`simulate --json`).
#pragma once

#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/npu/description.hpp"
#include "npusim/npu/estimate.hpp"
#include "npusim/program/inspect.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

std::string format(const char* fmt, double v);
inline std::string ms(double ns) { return format("%.3f ms", ns * 1e-6); }
inline std::string us(double ns) { return format("%.1f us", ns * 1e-3); }
inline std::string bytes(std::int64_t b) { return program::human_bytes(b); }

// "rk3588 (i8): 3072 MACs/cycle at 1000 MHz = 6.14 TOPS, SRAM 1.12 MiB in 36 banks, DMA 27 GB/s"
std::string describe(const Description& d, DType dt);

std::string totals_text(const Estimate& e);

// "npu 12.3 us dma-bound, DMA 1.2 MiB, util 45%" / "host 30.1 us (op class 'indexing' not supported)"
std::string kernel_brief(const KernelEstimate& k);

struct KindRow {
  std::string kind;
  int count = 0;
  double ns = 0;
  std::int64_t dram = 0, macs = 0;
  double bound_ns[5] = {0, 0, 0, 0, 0};
  int host = 0;
};

std::vector<KindRow> by_kind(const Estimate& e);

const char* main_bound(const KindRow& r);

std::string kind_table(const Estimate& e);

// The `n` longest kernels, one line each.
std::string top_kernels(const Estimate& e, std::size_t n);

const KernelEstimate* find_kernel(const Estimate& e, std::int32_t partition, std::int32_t kernel);

ir::json estimate_json(const Estimate& e, const Description& d);

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/report_inl.hpp"
#endif
