// Benchmark plumbing shared by `npusim bench` and bench/: repeated timing with warm-up (median,
// p10, p90), a description of the machine, a memory-read bandwidth probe (the floor of a
// memory-bound run is measured in the same process), and a small SVG line chart.
#pragma once

#include <thread>

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "npusim/core/file.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace npusim::inline NPUSIM_ABI::bench {

struct Stats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0, mean_ms = 0;
  int runs = 0;
};

inline Stats stats_of(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<std::size_t>(std::min<double>(static_cast<double>(ms.size() - 1), std::floor(q * static_cast<double>(ms.size() - 1) + 0.5)))]; };
  s.median_ms = at(0.5), s.p10_ms = at(0.1), s.p90_ms = at(0.9), s.min_ms = ms.front();
  for (double x : ms) s.mean_ms += x;
  s.mean_ms /= static_cast<double>(ms.size());
  s.runs = static_cast<int>(ms.size());
  return s;
}

// Calls f() `warmup` times untimed, then `repeats` times timed (f must be synchronous: targets'
// run() returns when the device is done).
inline Stats time_it(const std::function<void()>& f, int warmup, int repeats) {
  if (warmup < 0 || repeats < 1)
    throw Error(ErrorCode::attr, "bench: warm-up runs must be >= 0 and timed runs >= 1",
                {.expected = "warmup >= 0, repeats >= 1", .found = "warmup " + std::to_string(warmup) + ", repeats " + std::to_string(repeats)});
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return stats_of(std::move(ms));
}

struct Machine {
  std::string cpu, kernel, host;
  std::string device;  // the accelerator a target runs on (OpenCL device), empty for the CPU
  int cores = 0, threads = 0;
  double memory_gib = 0;
};

inline Machine machine() {
  Machine m;
  std::ifstream ci("/proc/cpuinfo");
  std::string line;
  while (std::getline(ci, line)) {
    if (m.cpu.empty() && line.rfind("model name", 0) == 0) m.cpu = line.substr(line.find(':') + 2);
    if (line.rfind("processor", 0) == 0) ++m.cores;
  }
  std::ifstream mi("/proc/meminfo");
  while (std::getline(mi, line))
    if (line.rfind("MemTotal:", 0) == 0) m.memory_gib = std::stod(line.substr(9)) / (1024.0 * 1024.0);
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release, m.host = u.machine;
#ifdef _OPENMP
  m.threads = omp_get_max_threads();
#else
  m.threads = 1;
#endif
  return m;
}

inline std::string describe(const Machine& m) {
  std::ostringstream s;
  s << m.cpu << ", " << m.cores << " logical CPUs, " << m.threads << " threads used, " << static_cast<int>(m.memory_gib + 0.5) << " GiB, " << m.kernel;
  if (!m.device.empty()) s << "; device: " << m.device;
  return s.str();
}

// Memory read bandwidth over a buffer far larger than the caches, `threads` threads each summing
// its slice with 8 independent accumulators (bound by memory, not by the latency of one chain of
// additions). The buffer is made (and first touched by its readers) once, so a long benchmark can
// measure again next to each of its phases: a shared host's bandwidth moves from minute to minute.
class ReadProbe {
 public:
  explicit ReadProbe(int threads, std::size_t bytes = std::size_t{1} << 30)
      : threads_(std::max(1, threads)), n_(bytes / sizeof(double) / 8 * 8), buf_(new double[n_]), sums_(static_cast<std::size_t>(threads_)) {
    slice([&](int, std::size_t b, std::size_t e) { std::fill(buf_.get() + b, buf_.get() + e, 1.0); });
  }
  // Median GB/s of `repeats` passes (after one unmeasured pass).
  double gbs(int repeats = 5) {
    std::vector<double> r;
    for (int i = 0; i < repeats + 1; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      slice([&](int t, std::size_t b, std::size_t e) {
        double a[8] = {};
        for (std::size_t k = b; k < e; k += 8)
          for (int j = 0; j < 8; ++j) a[j] += buf_[k + static_cast<std::size_t>(j)];
        sums_[static_cast<std::size_t>(t)] = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
      });
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i > 0) r.push_back(static_cast<double>(n_ * sizeof(double)) / sec / 1e9);
    }
    std::sort(r.begin(), r.end());
    return sums_[0] > 0 ? r[r.size() / 2] : 0.0;
  }

 private:
  template <class F>
  void slice(F&& f) {  // f(thread, begin, end) on every thread's slice, joined
    const std::size_t per = (n_ / static_cast<std::size_t>(threads_)) / 8 * 8;
    std::vector<std::thread> ts;
    for (int i = 0; i < threads_; ++i) {
      const std::size_t b = per * static_cast<std::size_t>(i), e = i + 1 == threads_ ? n_ : b + per;
      ts.emplace_back([&, i, b, e] { f(i, b, e); });
    }
    for (auto& x : ts) x.join();
  }
  int threads_;
  std::size_t n_;
  std::unique_ptr<double[]> buf_;
  std::vector<double> sums_;
};

// A line chart (log2 x axis when `log_x`) as standalone SVG.
struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
};

inline std::string svg_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel, const std::vector<Series>& series, bool log_x) {
  const double W = 760, H = 420, L = 70, R = 20, T = 40, B = 60;
  double x0 = 1e300, x1 = -1e300, y1 = 0;
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      const double xv = log_x ? std::log2(std::max(x, 1.0)) : x;
      x0 = std::min(x0, xv), x1 = std::max(x1, xv), y1 = std::max(y1, y);
    }
  if (x1 <= x0) x1 = x0 + 1;
  y1 = y1 > 0 ? y1 * 1.1 : 1;
  auto px = [&](double x) { return L + (W - L - R) * ((log_x ? std::log2(std::max(x, 1.0)) : x) - x0) / (x1 - x0); };
  auto py = [&](double y) { return H - B - (H - T - B) * y / y1; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << title << "</text>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {  // y ticks
    const double v = y1 * i / 5.0;
    s << "<line x1=\"" << L - 4 << "\" y1=\"" << py(v) << "\" x2=\"" << W - R << "\" y2=\"" << py(v) << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << L - 8 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">" << std::round(v * 100) / 100 << "</text>\n";
  }
  if (!series.empty())
    for (auto [x, y] : series.front().points) {  // x ticks at the first series' points
      (void)y;
      s << "<text x=\"" << px(x) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">" << static_cast<long long>(x) << "</text>\n";
    }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 15 << "\" text-anchor=\"middle\">" << xlabel << "</text>\n";
  s << "<text x=\"18\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << (T + H - B) / 2 << ")\">" << ylabel << "</text>\n";
  int k = 0;
  for (const auto& se : series) {
    s << "<polyline fill=\"none\" stroke=\"" << se.color << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : se.points) s << px(x) << "," << py(y) << " ";
    s << "\"/>\n";
    for (auto [x, y] : se.points) s << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << se.color << "\"/>\n";
    s << "<text x=\"" << L + 10 << "\" y=\"" << T + 16 * (k + 1) << "\" fill=\"" << se.color << "\">" << se.name << "</text>\n";
    ++k;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace npusim::inline NPUSIM_ABI::bench
