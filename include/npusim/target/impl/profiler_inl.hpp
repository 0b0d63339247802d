// Definitions for npusim/target/profiler.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <map>

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/target/profiler.hpp"

namespace npusim::inline NPUSIM_ABI {

NPUSIM_FUNC void Profiler::clear() {
  events_.clear();
  origin_ = clock::now();
}

NPUSIM_FUNC auto Profiler::by_kind() const -> std::vector<KindTotal> {
  std::map<std::string, KindTotal> m;
  for (const auto& e : events_) {
    auto& k = m[e.kind];
    k.kind = e.kind;
    ++k.count;
    k.host_us += e.dur_us;
    if (e.device_us >= 0) k.device_us += e.device_us;
  }
  std::vector<KindTotal> v;
  for (auto& [_, k] : m) v.push_back(k);
  std::sort(v.begin(), v.end(), [](const KindTotal& a, const KindTotal& b) { return a.host_us + a.device_us > b.host_us + b.device_us; });
  return v;
}

NPUSIM_FUNC void Profiler::print_summary(std::FILE* out, double wall_us, int runs) const {
  if (runs < 1) throw Error(ErrorCode::attr, "profile summary: the number of runs must be at least 1", {.expected = ">= 1", .found = std::to_string(runs)});
  double total = 0;
  bool device = false;
  for (const auto& e : events_) total += e.dur_us, device = device || e.device_us >= 0;
  std::fprintf(out, "%-22s %8s %12s %8s%s\n", "kernel kind", "count", "host ms/run", "share", device ? "  device ms/run" : "");
  for (const auto& k : by_kind()) {
    std::fprintf(out, "%-22s %8lld %12.3f %7.1f%%", k.kind.c_str(), static_cast<long long>(k.count / runs), k.host_us / 1000.0 / runs,
                 wall_us > 0 ? 100.0 * k.host_us / wall_us : 0.0);
    if (device) std::fprintf(out, "  %14.3f", k.device_us / 1000.0 / runs);
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "%-22s %8zu %12.3f %7.1f%%  (wall %.3f ms/run)\n", "total kernels", events_.size() / static_cast<std::size_t>(runs),
               total / 1000.0 / runs, wall_us > 0 ? 100.0 * total / wall_us : 0.0, wall_us / 1000.0 / runs);
}

NPUSIM_FUNC std::string Profiler::trace_json() const {
  ir::json j;
  j["displayTimeUnit"] = "ms";
  j["traceEvents"] = ir::json::array();
  std::map<int, std::string> tracks;
  for (const auto& e : events_) {
    tracks[e.track] = e.target;
    // Where the target measured device time, the event spans the device execution (its start is
    // on the profiler's clock) and the host time spent issuing it goes to args.
    ir::json ev = {{"name", e.name}, {"cat", e.kind}, {"ph", "X"}, {"ts", e.start_us}, {"dur", e.device_us >= 0 ? e.device_us : e.dur_us},
                   {"pid", 1}, {"tid", e.track}};
    if (e.device_us >= 0) ev["args"] = {{"device_us", e.device_us}, {"host_us", e.dur_us}, {"target", e.target}};
    else ev["args"] = {{"target", e.target}};
    j["traceEvents"].push_back(std::move(ev));
  }
  j["traceEvents"].push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "npusim"}}}});
  for (const auto& [t, name] : tracks)
    j["traceEvents"].push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"name", "partition " + std::to_string(t) + " (" + name + ")"}}}});
  return j.dump(1);
}

}  // namespace npusim::inline NPUSIM_ABI
