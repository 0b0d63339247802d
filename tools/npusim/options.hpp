// What the subcommands' option tables share (CLI11): validators, the target and input options, and
// the registration every subcommand file provides, `Registered add_<name>(Shared&)`: its options
// and its handler in one place (main.cpp is the table of them).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "model.hpp"
#include "targets.hpp"

namespace npusim::cli {

// A number option in [lo, hi] (lo excluded when lo_open); NaN and infinities are refused at parse
// time (CLI::Range lets NaN through: no comparison with it is true).
CLI::Validator finite_range(double lo, double hi, bool lo_open = false);

// A whole-number option in [lo, hi]. CLI11's Range says "2.5 not in range 1 to 4096" for a
// fraction, reads "-1" into an unsigned as 2^64-1 and saturates 2^64: all refused here, by what
// is wrong with the value.
CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi);

// What every subcommand's registration gets: the program's app and the target choice the target
// options fill (one per process: one subcommand runs).
struct Shared {
  CLI::App& app;
  TargetChoice& tc;
};

// --target, --dtype, --force-fallback, --weights-dtype, --keep, [--interpret], --device.
void add_target_options(CLI::App* sub, TargetChoice& tc, bool interpret);
// --input NAME=FILE ..., --image FILE.
void add_input_options(CLI::App* sub, InputArgs& in);

// A subcommand as registered: CLI11's app for it, and what runs it once the line is parsed.
struct Registered {
  CLI::App* app;
  std::function<int()> run;
};

Registered add_run(Shared& s);
Registered add_generate(Shared& s);
Registered add_targets(Shared& s);
Registered add_compile(Shared& s);
Registered add_quantize(Shared& s);
Registered add_inspect(Shared& s);
Registered add_explain(Shared& s);
Registered add_simulate(Shared& s);
Registered add_ops(Shared& s);
Registered add_devices(Shared& s);
Registered add_bench(Shared& s);
Registered add_bench_llm(Shared& s);

}  // namespace npusim::cli
