// Post-training int8 quantization end to end (`npusim quantize`, docs/quantization.md):
//   int8_inputs         calibration / evaluation inputs: a folder of images (the classifier
//                       preprocessing of --image), of .npy or .safetensors files, or synthetic:N
//   calibrate           runs the float program with every tensor the int8 rewrite needs as an
//                       extra output and records their ranges (min/max, or a percentile)
//   accuracy_report     float vs int8 on inputs: outputs (cosine, rel L2, top-1 / top-5 for
//                       classifiers) and a per-layer table: each integer op's output against the
//                       float model's, and its own error (the float model's input quantized, that
//                       op alone in int8), ranked worst first
// Programs are run through a RunnerFactory, so any target (and its fallback) runs them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/progress.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

struct Int8Inputs {
  std::vector<std::vector<Tensor>> sets;  // each in graph-input order
  std::string from;                       // what they are, for the report
};

// spec: a folder (its files in name order: images for a model with one image input [1, 3, H, W];
// .npy for a one-input model; .safetensors holding every input by name), or "synthetic:N": N
// inputs by the npusim-int8-synth-v1 rule (docs/quantization.md). `skip` files are passed over
// first, then at most `count` taken (0: all); synthetic sets are numbered from `skip` and drawn
// with `synthetic_seed`. An empty folder, a file of the wrong shape or dtype, and NaN or infinite
// values are errors naming the file.
Int8Inputs int8_inputs(const std::string& spec, const std::vector<program::IoSpec>& inputs, std::int64_t count, std::int64_t skip = 0,
                       std::uint64_t synthetic_seed = 0);

// npusim-int8-synth-v1: input set i (0-based) of the spec "synthetic:N", for `seed` 0 for
// calibration and 1 for evaluation: every element is a standard normal value from splitmix64
// (state = seed * 2^32 + i * 2^20 + input index) through Box-Muller, in float32.
std::vector<Tensor> synthetic_input_set(const std::vector<program::IoSpec>& inputs, std::int64_t i, std::uint64_t seed);

enum class Observer { minmax, percentile };

struct CalibrateOptions {
  Observer observer = Observer::minmax;
  double percentile = 99.99;  // percentile: lo and hi are this percentile of each input's values (and 100 - it), averaged over inputs
};

using RunnerFactory = std::function<std::unique_ptr<Runner>(const program::CompiledProgram&)>;

struct Calibration {
  std::map<std::string, passes::Int8Range, std::less<>> ranges;
  std::int64_t inputs = 0;
};

// `opt` is the float compilation (target, dtype); opt.int8 names the layers kept in float.
Calibration calibrate(const ir::Graph& g, const partition::TargetInfo& target, const program::CompileOptions& opt, const RunnerFactory& make,
                      const std::vector<std::vector<Tensor>>& inputs, const CalibrateOptions& co, const Progress& progress = {});

struct Int8Error {
  double dot = 0, aa = 0, bb = 0, diff = 0;  // sums over the compared values (a: float, b: int8)
  void add(const float* a, const float* b, std::int64_t n);
  double cosine() const;
  double rel_l2() const;
};

struct Int8OutputRow {
  std::string name;
  Int8Error err;
  std::int64_t rows = 0, top1_same = 0;  // classifier outputs ([N, C], C >= 5)
  double top5_overlap = 0;               // summed over rows: |top5(float) & top5(int8)| / 5
};

struct Int8LayerRow {
  std::string node, op, tensor;  // the integer op's node, its kind, the float tensor its output stands for
  Int8Error out, own;            // its output in the int8 model; its own error alone
};

struct Int8Report {
  std::int64_t inputs = 0;
  std::string from;
  std::vector<Int8OutputRow> outputs;
  std::vector<Int8LayerRow> layers;  // worst own rel L2 first
};

// float_opt compiles the float model; int8_opt the int8 one (int8_opt.int8 holds the ranges). The
// factory binds the weights (the int8 programs' recipes derive the integer ones).
Int8Report accuracy_report(const ir::Graph& g, const partition::TargetInfo& target, const program::CompileOptions& float_opt,
                           const program::CompileOptions& int8_opt, const RunnerFactory& make, const Int8Inputs& inputs,
                           const Progress& progress = {});

void print_report(std::FILE* out, const Int8Report& r, std::size_t max_layers);
nlohmann::json report_json(const Int8Report& r);

}  // namespace npusim::inline NPUSIM_ABI::runtime

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/int8_inl.hpp"
#endif
