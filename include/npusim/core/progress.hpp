// Progress reporting for long steps (weight synthesis, big model runs). Library code calls a
// Progress callback; front ends decide how to show it (the CLI draws a line on stderr).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI {

// (stage, done, total): done == total marks the end of a stage.
using Progress = std::function<void(std::string_view stage, std::uint64_t done, std::uint64_t total)>;

// A stderr progress line: redrawn in place on a terminal, a line every 10% otherwise.
class ConsoleProgress {
 public:
  explicit ConsoleProgress(std::FILE* out = stderr, double min_seconds = 0.5) : out_(out), min_seconds_(min_seconds) {}

  void operator()(std::string_view stage, std::uint64_t done, std::uint64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (stage != stage_ || done < done_) {  // a new stage (or the same one restarted)
      stage_ = std::string(stage);
      start_ = now;
      last_decile_ = -1;
      shown_ = ended_ = false;
    }
    done_ = done;
    double elapsed = std::chrono::duration<double>(now - start_).count();
    bool end = done >= total;
    if (ended_ || (elapsed < min_seconds_ && !(end && shown_))) return;  // short steps stay quiet
    ended_ = end;
    int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : 100;
    if (tty_) {
      std::fprintf(out_, "\r%s: %3d%% (%.1fs)%s", stage_.c_str(), pct, elapsed, end ? "\n" : "");
    } else if (pct / 10 != last_decile_ || end) {
      last_decile_ = pct / 10;
      std::fprintf(out_, "%s: %d%% (%.1fs)\n", stage_.c_str(), pct, elapsed);
    }
    std::fflush(out_);
    shown_ = true;
  }

  bool tty_ = false;

 private:
  std::FILE* out_;
  double min_seconds_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
  int last_decile_ = -1;
  std::uint64_t done_ = 0;
  bool shown_ = false, ended_ = false;
};

}  // namespace npusim::inline NPUSIM_ABI
