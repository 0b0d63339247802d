// Per-kernel profiling, part of the target contract (target/executor.hpp): executors record one
// event per kernel (host wall time, and device time where the target has it); the profiler sums
// them by kernel kind and writes a Chrome/Perfetto trace (JSON "traceEvents", complete events in
// microseconds).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"

namespace npusim::inline NPUSIM_ABI {

struct ProfileEvent {
  std::string name;       // kernel label, e.g. "k18 attention"
  std::string kind;       // kernel kind ("linear", "attention", "transfer", ...)
  std::string target;     // where it ran
  double start_us = 0;    // host time since the profiler's origin
  double dur_us = 0;      // host wall time
  double device_us = -1;  // device execution time, when the target measures it
  int track = 0;          // trace row (partition index)
  int kernel = -1;        // kernel index in the partition, where the executor knows it
};

class Profiler {
 public:
  using clock = std::chrono::steady_clock;
  Profiler() : origin_(clock::now()) {}

  double now_us() const { return std::chrono::duration<double, std::micro>(clock::now() - origin_).count(); }
  void add(ProfileEvent e) { events_.push_back(std::move(e)); }
  void clear() {
    events_.clear();
    origin_ = clock::now();
  }
  const std::vector<ProfileEvent>& events() const { return events_; }

  struct KindTotal {
    std::string kind;
    std::int64_t count = 0;
    double host_us = 0, device_us = 0;
  };
  std::vector<KindTotal> by_kind() const {
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

  // Table by kernel kind; `wall_us` is the run's measured wall time (the share column uses it).
  void print_summary(std::FILE* out, double wall_us, int runs = 1) const {
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

  std::string trace_json() const {
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
  void write_trace(const std::string& path) const { write_file_atomic(path, trace_json()); }

 private:
  clock::time_point origin_;
  std::vector<ProfileEvent> events_;
};

// Times a scope into a profiler (no-op when the profiler is null).
class ProfileScope {
 public:
  ProfileScope(Profiler* p, std::string name, std::string kind, std::string target, int track, int kernel = -1)
      : p_(p), start_(p ? p->now_us() : 0) {
    if (p_) e_ = {std::move(name), std::move(kind), std::move(target), start_, 0, -1, track, kernel};
  }
  ~ProfileScope() {
    if (!p_) return;
    e_.dur_us = p_->now_us() - start_;
    p_->add(std::move(e_));
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler* p_;
  double start_;
  ProfileEvent e_;
};

}  // namespace npusim::inline NPUSIM_ABI
