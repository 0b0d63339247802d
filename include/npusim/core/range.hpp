// Numbers read from files (NPU descriptions, config.json) checked against the range the quantity
// can physically have, in one place, so that every reader refuses the same way and says the same
// thing: "(expected a number in [1, 10000] MHz, found 1e+30)". A number that passes is finite and
// within bounds that keep what is computed from it finite (docs/robustness.md, "Ranges").
// Values that are converted to a narrower type before use (a float32 rotary frequency) are
// checked again in that type by their user: the range here is necessary, not sufficient.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI {

struct NumberRange {
  double lo = 0, hi = 0;
  bool lo_open = false;  // (lo, hi] instead of [lo, hi]
  bool integer = false;  // whole numbers only
  const char* unit = "";

  bool contains(double v) const {
    return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi && (!integer || v == std::floor(v));
  }
  // "a number in (0, 100000] GB/s", "an integer in [1, 2147483648]"
  std::string describe() const {
    std::string s = std::string(integer ? "an integer in " : "a number in ") + (lo_open ? "(" : "[") + format(lo) + ", " + format(hi) + "]";
    if (*unit) s += std::string(" ") + unit;
    return s;
  }
  // Shortest exact-enough form: 1e+30, 0.001, 16777216.
  static std::string format(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.10g", v);
    return b;
  }
  // Why `v` is outside: "must be positive", "is too large (above the plausible range)", ...
  std::string why(double v) const {
    if (!std::isfinite(v)) return "is not a finite number";
    if (v <= 0 && (lo > 0 || (lo == 0 && (lo_open || v < 0)))) return lo == 0 && !lo_open ? "must not be negative" : "must be positive";
    if (v < lo || (lo_open && v == lo)) return "is too small (below the plausible range)";
    if (v > hi) return "is too large (above the plausible range)";
    return "must be a whole number";
  }
};

// `v` when it lies in `r`; otherwise an Error (`code`) "<what> <why>" with the range as expected
// and `v` as found, in `ctx`'s file.
inline double check_range(double v, const NumberRange& r, const std::string& what, ErrorContext ctx = {}, ErrorCode code = ErrorCode::attr) {
  if (r.contains(v)) return v;
  ctx.expected = r.describe(), ctx.found = NumberRange::format(v);
  throw Error(code, what + " " + r.why(v), std::move(ctx));
}

}  // namespace npusim::inline NPUSIM_ABI
