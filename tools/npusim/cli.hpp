// What the CLI's translation units share: the arguments of each subcommand, the helpers they all
// use (common.cpp), and one function per subcommand, each in its own TU (run.cpp, generate.cpp,
// compile.cpp, inspect.cpp, bench_cmd.cpp, npu_cmd.cpp, ops_doc.cpp, target_opencl.cpp), so that a
// many-core build compiles them in parallel. Each of those files also holds its subcommand's
// options (`add_<name>`, options.hpp); main.cpp is the table of them.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "npusim/core/progress.hpp"
#include "npusim/runtime/sampling.hpp"
#include "model.hpp"
#include "npu_cmd.hpp"
#include "processes.hpp"
#include "targets.hpp"
#include "text_prompt.hpp"

namespace npusim::cli {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t);
std::string fmt_num(double v);
Progress console_progress();

void print_compile_summary(const program::CompiledProgram& p, double secs, FILE* out = stdout);
void print_device(const TargetChoice& tc, FILE* out = stdout);

// A runner for a case graph: compiled for the target (default) or interpreted on the reference.
struct Prepared {
  std::unique_ptr<Runner> runner;
  runtime::ProgramRunner* plan = nullptr;  // when compiled
};

// program_id: make_runner's (under mpirun, which of a command's programs rank 0 runs next).
Prepared prepare(const TargetChoice& tc, const ir::Graph& g, const weights::WeightSource* src, std::unordered_map<std::string, Tensor>* cache,
                 FILE* info = stdout, int program_id = 0);

struct ProfileArgs {
  bool enabled = false;
  int runs = 10;
  std::string trace;  // Chrome/Perfetto trace JSON path
  int time_runs = 0;  // --time N: latency of N more runs (after the checked one, which warms up)
  NpuArgs npu;   // --npu / --npu-dtype: the NPU estimate next to the measured times
};

struct RunArgs {
  std::string model, weights = "auto", output, expected;
  std::optional<double> tol;
  InputArgs inputs;
};

struct GenerateArgs {
  std::string prefill_dir, decode_dir, weights = "auto";
  bool check = false, profile = false;
  std::string trace;
  std::string prompt_ids, prompt_ids_file, eos;
  TextPromptArgs text;
  llm::Sampling sampling;
  std::optional<double> tol;
  int min_matches = -1;
  std::size_t max_new_tokens = 16;
};

struct QuantizeArgs {
  std::string model, output, weights = "auto", calib, eval, observer = "minmax", report_json;
  double percentile = 99.99;
  std::int64_t calib_count = 0, eval_count = 0, auto_keep = 0;
  std::size_t layers_shown = 10;
  std::vector<std::string> keep_float, weight_bits;
  bool embed = false, no_report = false;
};

// "12.3 MiB" for an output written to a regular file; what it went to otherwise (a device, a FIFO).
std::string written_size(const std::string& path);
// An int8 program's float islands (docs/quantization.md): the ops that compute in float on
// dequantized values, each with the int8 tensor it reads; nothing for a float program.
void print_float_islands(const program::CompiledProgram& p, FILE* out = stdout);

int cmd_run(const RunArgs& a, TargetChoice tc, ProfileArgs prof);
int cmd_quantize(const QuantizeArgs& a, const TargetChoice& tc);
int cmd_generate(const GenerateArgs& a, const TargetChoice& tc);
int cmd_compile(const std::string& model, const std::string& out, const TargetChoice& tc, bool verify, bool embed, const std::string& weights,
                NpuArgs npu_args);
int cmd_inspect(const std::string& path, bool json, bool buffers, bool no_kernels, NpuArgs npu_args);
int cmd_explain(const std::string& ir_path, const TargetChoice& tc, bool kernels, NpuArgs npu_args);
int cmd_devices();
int cmd_ops(bool markdown, const std::string& out);
int cmd_targets();

}  // namespace npusim::cli
