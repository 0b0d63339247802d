// What `run`, `bench` and `compile` take as MODEL, and what a run reads and writes:
//   - a case directory (ir.json, weights.safetensors or synth.json, optional io.safetensors with
//     inputs and expected outputs, meta.json), or an IR file (weights looked up beside it);
//   - a compiled .npubin, with its weights embedded or given by --weights.
// Inputs come from --input NAME=FILE and --image FILE first, then from the case's io.safetensors
// (and, for LLM prefill graphs, the mask/positions rule of the fixtures); a missing input is an
// error that names every one of them. Outputs are compared with the expected ones only when every
// input came from the case (the expected values belong to those inputs); otherwise each output is
// summarised (top-5 for classifiers) and may be written with --output.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "npusim/program/program.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "targets.hpp"

namespace npusim::cli {

struct Model {
  std::string path, name;
  std::optional<runtime::ModelDir> source;              // a case directory or an IR file
  std::optional<program::CompiledProgram> program;  // a .npubin
  std::unique_ptr<weights::WeightSource> program_weights;

  bool compiled() const;
  const weights::WeightSource* weights() const;
  std::string kind() const;

  std::vector<program::IoSpec> inputs() const;
  std::vector<program::IoSpec> outputs() const;

 private:
  static std::vector<program::IoSpec> specs(const ir::Graph& g, const std::vector<ir::TensorId>& ids);
};

inline bool is_npubin_path(const std::string& p) { return p.ends_with(".npubin"); }

// weights: "auto" (what the case holds), "none", "safetensors", "synth", or a path (a .safetensors
// file, a synth.json, or a Hugging Face model directory). A .npubin uses its embedded weights
// unless --weights names others; one without weights needs --weights.
Model open_model(const std::string& path, const std::string& weights_spec);

// A .npubin fixes its target and dtype: --target/--dtype may repeat them, not change them, and
// nothing that acts at compile time applies.
void adopt_program_target(TargetChoice& tc, const Model& m);

// The model's program: the .npubin's, or the IR compiled for the chosen target.
program::CompiledProgram program_for(const TargetChoice& tc, const Model& m);

// --input NAME=FILE (NAME may be left out when the model has one input) and --image FILE.
struct InputArgs {
  std::vector<std::string> inputs;
  std::string image;
  bool given() const;
};

struct GatheredInputs {
  std::vector<Tensor> tensors;
  bool from_case = true;   // every value came from the case (its expected outputs apply)
  std::vector<std::string> notes;  // where each input came from
};

// The image input: the one float input of shape [N, 3, H, W].
std::optional<std::size_t> image_input(const std::vector<program::IoSpec>& in);

std::string describe_spec(const program::IoSpec& s);

// synthetic: fill what has no value with a fixed pattern (benchmarks) instead of failing.
GatheredInputs gather_inputs(const Model& m, const InputArgs& a, bool synthetic = false);

// Expected outputs: --expected FILE, else the case's io.safetensors when every input came from
// the case (its expected values belong to its own inputs).
struct Expected {
  std::string from;  // where they come from, for the report
  std::function<std::optional<Tensor>(const std::string&)> lookup;
  explicit operator bool() const;
};

Expected expected_outputs(const Model& m, const std::string& file, bool inputs_from_case);

// The default relative-L2 tolerance: by the model's dtype and longest reduction (a .npubin: over
// its partitions' graphs).
double default_tolerance(const Model& m, bool half);

// The relative-L2 tolerance of outputs computed with linear weights quantized to a block format
// ("q8"/"q8_0", "q4"/"q4_0"), against the float model's: the format's own error, set from the tiny
// Qwen2 and Qwen2.5-1.5B fixtures (docs/quantization.md, "Quality"); nullopt for float weights.
// generate --check uses it for the logits of each step, run --expected for every output.
std::optional<double> quantized_tolerance(const std::string& weights_dtype);

// Shape, dtype and statistics of each output; for a classifier's logits ([N, C], C >= 5, or a
// model whose meta.json says "vision") the top-5 classes with softmax probabilities.
void print_output_summary(std::FILE* out, const Model& m, const std::vector<program::IoSpec>& specs, const std::vector<Tensor>& outs);

// --output FILE: .safetensors holds every output by name; .npy one output; NAME=FILE one output.
// Returns notes for the user (a bf16 output written to .npy as float32).
std::vector<std::string> write_outputs(const std::string& spec, const std::vector<program::IoSpec>& specs, const std::vector<Tensor>& outs);

}  // namespace npusim::cli
