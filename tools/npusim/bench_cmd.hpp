// `npusim bench` (a model case: compile time, weight-load time, latency and throughput) and
// `npusim bench-llm` (time to first token, decode step time at log2-spaced cache positions with a
// check against the reference at every position, the memory-bandwidth floor measured in the same
// run, JSON and an SVG chart).
#pragma once

#include <charconv>

#include <cstdio>

#include "npusim/harness/bench.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/runtime/generate.hpp"
#include "model.hpp"
#include "targets.hpp"

namespace npusim::cli {

struct BenchArgs {
  int warmup = 3, repeats = 20;
  std::string json, svg, positions = "log2";
  bool check = true;
};

double ms_since(std::chrono::steady_clock::time_point t);

ir::json stats_json(const bench::Stats& s);

ir::json machine_json(const bench::Machine& m);

// The machine, with the thread count the chosen target runs with.
bench::Machine machine_for(const TargetChoice& tc);

// MODEL is a case directory, an IR file or a .npubin (then "compile" is its load); inputs are
// the case's, the given ones, or else synthetic (timing does not depend on the values).
int cmd_bench(const std::string& path, TargetChoice tc, const BenchArgs& a, const std::string& weights, const InputArgs& inputs);

// Bytes of weights one decode step reads: every bound weight once, except tables only an
// embedding reads (one row of those).
std::int64_t decode_weight_bytes(const program::CompiledProgram& p);

std::vector<std::int64_t> parse_positions(const std::string& spec, std::int64_t max_pos);

int cmd_bench_llm(const std::string& pdir, const std::string& ddir, const TargetChoice& tc, const BenchArgs& a);

}  // namespace npusim::cli
