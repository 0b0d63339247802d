// Definitions for npusim/npu/trace.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/npu/trace.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC std::string trace_json(const Estimate& e, const std::string& process) {
  using ir::json;
  json j;
  j["displayTimeUnit"] = "ns";
  json ev = json::array();
  auto add = [&](const KernelEstimate& k, const std::string& name, int lane, double start_ns, double dur_ns, json args) {
    if (dur_ns <= 0) return;
    args["kernel"] = "p" + std::to_string(k.partition) + " k" + std::to_string(k.kernel);
    args["kind"] = k.kind, args["bound"] = bound_name(k.bound);
    ev.push_back({{"name", name}, {"cat", k.kind}, {"ph", "X"}, {"ts", start_ns * 1e-3}, {"dur", dur_ns * 1e-3}, {"pid", 1}, {"tid", lane}, {"args", std::move(args)}});
  };
  for (const auto& k : e.kernels) {
    const std::string label = k.kind + " " + k.name;
    if (k.placement == Placement::npu) {
      const double end = k.end_ns();
      add(k, label, lane_dma, k.start_ns, std::min(k.dma_ns(), k.time_ns),
          {{"weights_bytes", k.dma.weights}, {"activations_in_bytes", k.dma.activations_in}, {"activations_out_bytes", k.dma.activations_out},
           {"spill_bytes", k.dma.spills}, {"transfers", k.transfers}});
      const double first_load = k.double_buffered ? k.load_ns / static_cast<double>(std::max<std::int64_t>(k.tiles, 1)) : k.load_ns;
      const double c0 = std::min(k.start_ns + first_load, end);
      add(k, label, lane_compute, c0, std::min(k.compute_ns, end - c0),
          {{"macs", k.macs}, {"mac_cycles", k.mac_cycles}, {"vector_cycles", k.vector_cycles}, {"utilisation", k.utilisation}, {"tiling", k.tiling}});
    } else if (k.placement == Placement::host) {
      add(k, "transfer " + label, lane_host, k.start_ns, k.transfer_ns, {{"bytes", k.transfer_bytes}});
      add(k, label, lane_host, k.start_ns + k.transfer_ns, k.compute_ns, {{"reason", k.host_reason}});
    }
  }
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", process}}}});
  for (auto [lane, name] : {std::pair{lane_dma, "NPU DMA"}, std::pair{lane_compute, "NPU compute"}, std::pair{lane_host, "host"}}) {
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", lane}, {"args", {{"name", name}}}});
    ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", lane}, {"args", {{"sort_index", lane}}}});
  }
  j["traceEvents"] = std::move(ev);
  return j.dump(1);
}

}  // namespace npusim::inline NPUSIM_ABI::npu
