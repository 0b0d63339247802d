// Per-kernel profiling, part of the target contract (target/executor.hpp): executors record one
// event per kernel (host wall time, and device time where the target has it); the profiler sums
// them by kernel kind and writes a Chrome/Perfetto trace (JSON "traceEvents", complete events in
// microseconds).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"

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
  void clear();
  const std::vector<ProfileEvent>& events() const { return events_; }

  struct KindTotal {
    std::string kind;
    std::int64_t count = 0;
    double host_us = 0, device_us = 0;
  };
  std::vector<KindTotal> by_kind() const;

  // Table by kernel kind; `wall_us` is the run's measured wall time (the share column uses it).
  void print_summary(std::FILE* out, double wall_us, int runs = 1) const;

  std::string trace_json() const;
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

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/impl/profiler_inl.hpp"
#endif
