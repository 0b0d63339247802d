// The NPU cost model from the command line: `npusim simulate MODEL --npu CONFIG` (totals, a table
// by kernel kind, the longest kernels, a roofline SVG, a Perfetto trace, JSON), and the estimate
// next to what `compile`, `inspect`, `explain` and `run --profile` print (docs/npu-simulation.md).
#pragma once

#include <cstdio>
#include <filesystem>

#include "npusim/npu/record.hpp"
#include "npusim/npu/report.hpp"
#include "npusim/target/profiler.hpp"
#include "model.hpp"
#include "targets.hpp"

namespace npusim::cli {

// --npu CONFIG and --npu-dtype D (simulate calls the latter --dtype).
struct NpuArgs {
  std::string npu, dtype;
  std::optional<npu::FoundDescription> found;  // load_npu(): read before anything is compiled
};

// Bundled descriptions beside an installed executable (bin/../share/npusim/npu), after
// $NPUSIM_NPU_PATH and the directory the build gives the library.
std::vector<std::string> npu_extra_dirs();

npu::FoundDescription find_npu(const std::string& spec);

std::string npu_help(const std::string& what);

DType parse_npu_dtype(const std::string& s, const char* flag);

// The estimate's dtype when none is given: the program's compute dtype where the NPU computes
// in it, else the first dtype the description lists (its native one).
DType default_npu_dtype(const npu::Description& d, DType compute);

struct NpuChoice {
  npu::Description description;
  DType dtype = DType::f32;
  std::string from;  // where the description came from
};

// The NPU to show estimates for: --npu, else the one the program was compiled against; none when
// neither. --npu-dtype without either is an error, not ignored.
// Reads --npu's description and checks --npu-dtype, so that a wrong one is refused before any work.
void load_npu(NpuArgs& a);

// --npu-dtype alone applies only to a program that carries an NPU description.
void check_npu_dtype_alone(const NpuArgs& a, bool program_has_npu, const std::string& file);

std::optional<NpuChoice> npu_choice(NpuArgs a, const program::CompiledProgram& p, const std::string& file);

npu::Estimate estimate_for(const NpuChoice& c, const program::CompiledProgram& p);

void print_npu_header(const NpuChoice& c, FILE* out = stdout);

// `compile --npu`, `explain --npu`: the header and the totals.
void print_npu_summary(const NpuChoice& c, const npu::Estimate& e, FILE* out = stdout);

// `explain --npu`: the longest kernels with their estimates, and every kernel the NPU leaves to
// its host, and why.
void print_npu_explain(const NpuChoice& c, const npu::Estimate& e);

// `run --profile` with an NPU: the estimate next to the measured time, by kernel kind and for
// the kernels the estimate finds longest.
void print_npu_vs_measured(const NpuChoice& c, const npu::Estimate& e, const Profiler& prof, int runs, const std::string& target);

struct SimulateArgs {
  std::string model, npu, dtype, svg, trace, json;
  int top = 10;
  bool kernels = false;
};

int cmd_simulate(const SimulateArgs& a, TargetChoice tc);

}  // namespace npusim::cli
