// Definitions for npusim/npu/report.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <cstdio>
#include <map>
#include <sstream>

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/npu/report.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC std::string format(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

NPUSIM_FUNC std::string describe(const Description& d, DType dt) {
  std::ostringstream s;
  s << d.name << " (" << dtype_short_name(dt) << "): ";
  if (const MacArray* a = d.mac_array(dt))
    s << a->rows << "x" << a->columns << " MACs at " << format("%g", d.clock_mhz) << " MHz = " << format("%.2f", 2 * d.peak_macs_per_s(dt) * 1e-12) << " TOPS";
  else
    s << "no MAC array in " << dtype_short_name(dt);
  s << ", SRAM " << bytes(d.sram_bytes) << " in " << d.sram_banks << " banks";
  if (d.weight_cache_bytes) s << " (" << bytes(d.weight_cache_bytes) << " weight cache)";
  if (d.activation_bytes) s << " (" << bytes(d.activation_bytes) << " activations)";
  s << ", DMA " << format("%g", d.dma_gb_per_s) << " GB/s";
  return s.str();
}

NPUSIM_FUNC std::string totals_text(const Estimate& e) {
  std::ostringstream s;
  s << "estimate: latency " << ms(e.latency_ns) << "; DRAM traffic " << bytes(e.dram.total()) << " (weights " << bytes(e.dram.weights)
    << ", activations in " << bytes(e.dram.activations_in) << ", out " << bytes(e.dram.activations_out) << ", spills " << bytes(e.dram.spills)
    << "); SRAM peak " << bytes(e.sram_peak_bytes) << "; MAC utilisation " << format("%.1f%%", 100 * e.mac_utilisation) << "\n";
  s << "kernels: " << e.npu_kernels << " on the NPU (" << ms(e.npu_ns) << "), " << e.host_kernels << " on the host (" << ms(e.host_ns);
  if (e.transfer_bytes) s << ", crossings " << bytes(e.transfer_bytes) << " in " << ms(e.transfer_ns);
  s << "); time by bound:";
  for (Bound b : {Bound::compute, Bound::dma, Bound::sram, Bound::host})
    if (e.bound_ns[static_cast<int>(b)] > 0) s << " " << bound_name(b) << " " << ms(e.bound_ns[static_cast<int>(b)]);
  s << "\n";
  return s.str();
}

NPUSIM_FUNC std::string kernel_brief(const KernelEstimate& k) {
  std::ostringstream s;
  if (k.placement == Placement::free) return "free (zero-copy)";
  s << (k.placement == Placement::npu ? "npu " : "host ") << us(k.time_ns);
  if (k.placement == Placement::npu) {
    s << " " << bound_name(k.bound) << "-bound, DMA " << bytes(k.dma.total());
    if (k.macs) s << ", util " << format("%.0f%%", 100 * k.utilisation);
  } else {
    s << " (" << k.host_reason << ")";
  }
  return s.str();
}

NPUSIM_FUNC std::vector<KindRow> by_kind(const Estimate& e) {
  std::map<std::string, KindRow> m;
  for (const auto& k : e.kernels) {
    if (k.placement == Placement::free) continue;
    KindRow& r = m[k.kind];
    r.kind = k.kind, ++r.count, r.ns += k.time_ns, r.macs += k.macs, r.host += k.placement == Placement::host;
    if (k.placement == Placement::npu) r.dram += k.dma.total();
    r.bound_ns[static_cast<int>(k.bound)] += k.time_ns;
  }
  std::vector<KindRow> v;
  for (auto& [_, r] : m) v.push_back(r);
  std::sort(v.begin(), v.end(), [](const KindRow& a, const KindRow& b) { return a.ns > b.ns; });
  return v;
}

NPUSIM_FUNC const char* main_bound(const KindRow& r) {
  int best = 0;
  for (int b = 1; b < 5; ++b)
    if (r.bound_ns[b] > r.bound_ns[best]) best = b;
  return bound_name(static_cast<Bound>(best));
}

NPUSIM_FUNC std::string kind_table(const Estimate& e) {
  std::ostringstream s;
  char line[200];
  std::snprintf(line, sizeof line, "%-22s %6s %12s %7s %12s %10s %8s\n", "kernel kind", "count", "estimate ms", "share", "DRAM", "GMAC", "bound");
  s << line;
  for (const auto& r : by_kind(e)) {
    std::snprintf(line, sizeof line, "%-22s %6d %12.3f %6.1f%% %12s %10.3f %8s%s\n", r.kind.c_str(), r.count, r.ns * 1e-6,
                  e.latency_ns > 0 ? 100 * r.ns / e.latency_ns : 0.0, bytes(r.dram).c_str(), static_cast<double>(r.macs) * 1e-9, main_bound(r),
                  r.host ? (" (" + std::to_string(r.host) + " on the host)").c_str() : "");
    s << line;
  }
  return s.str();
}

NPUSIM_FUNC std::string top_kernels(const Estimate& e, std::size_t n) {
  std::vector<const KernelEstimate*> v;
  for (const auto& k : e.kernels)
    if (k.placement != Placement::free) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const KernelEstimate* a, const KernelEstimate* b) { return a->time_ns > b->time_ns; });
  std::ostringstream s;
  for (std::size_t i = 0; i < std::min(n, v.size()); ++i) {
    const KernelEstimate& k = *v[i];
    s << "  p" << k.partition << " k" << k.kernel << " " << k.kind << " " << k.name << ": " << kernel_brief(k);
    if (k.placement == Placement::npu) s << "; " << k.tiling;
    s << "\n";
  }
  return s.str();
}

NPUSIM_FUNC const KernelEstimate* find_kernel(const Estimate& e, std::int32_t partition, std::int32_t kernel) {
  for (const auto& k : e.kernels)
    if (k.partition == partition && k.kernel == kernel) return &k;
  return nullptr;
}

NPUSIM_FUNC ir::json estimate_json(const Estimate& e, const Description& d) {
  using ir::json;
  auto traffic = [](const Traffic& t) {
    return json{{"weights", t.weights}, {"activations_in", t.activations_in}, {"activations_out", t.activations_out}, {"spills", t.spills}, {"total", t.total()}};
  };
  json j;
  j["npu"] = d.name, j["dtype"] = dtype_short_name(e.dtype), j["clock_mhz"] = d.clock_mhz, j["peak_macs_per_s"] = e.peak_macs_per_s;
  j["sram_bytes"] = d.sram_bytes, j["dma_gb_per_s"] = d.dma_gb_per_s;
  j["latency_ms"] = e.latency_ns * 1e-6, j["dram"] = traffic(e.dram), j["sram_peak_bytes"] = e.sram_peak_bytes;
  j["weight_cache_used_bytes"] = e.weight_cache_used, j["activation_region_used_bytes"] = e.activation_used;
  j["macs"] = e.macs, j["npu_macs"] = e.npu_macs, j["mac_utilisation"] = e.mac_utilisation;
  j["npu_kernels"] = e.npu_kernels, j["host_kernels"] = e.host_kernels, j["npu_ms"] = e.npu_ns * 1e-6, j["host_ms"] = e.host_ns * 1e-6;
  j["transfer_ms"] = e.transfer_ns * 1e-6, j["transfer_bytes"] = e.transfer_bytes;
  for (Bound b : {Bound::compute, Bound::dma, Bound::sram, Bound::host}) j["ms_by_bound"][bound_name(b)] = e.bound_ns[static_cast<int>(b)] * 1e-6;
  j["kernels"] = json::array();
  for (const auto& k : e.kernels) {
    if (k.placement == Placement::free) continue;
    json x = {{"partition", k.partition}, {"kernel", k.kernel}, {"kind", k.kind}, {"name", k.name}, {"model", model_name(k.model)},
              {"placement", placement_name(k.placement)}, {"bound", bound_name(k.bound)}, {"start_us", k.start_ns * 1e-3}, {"time_us", k.time_ns * 1e-3},
              {"compute_us", k.compute_ns * 1e-3}, {"dma_us", k.dma_ns() * 1e-3}, {"macs", k.macs}, {"vector_ops", k.vector_ops}, {"dma", traffic(k.dma)},
              {"transfers", k.transfers}, {"tiles", k.tiles}, {"sram_bytes", k.sram_bytes}, {"utilisation", k.utilisation}, {"tiling", k.tiling}};
    if (k.placement == Placement::host) x["host_reason"] = k.host_reason, x["crossing_bytes"] = k.transfer_bytes, x["crossing_us"] = k.transfer_ns * 1e-3;
    j["kernels"].push_back(std::move(x));
  }
  return j;
}

}  // namespace npusim::inline NPUSIM_ABI::npu
