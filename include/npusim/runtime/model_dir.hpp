// An exported model folder (what npusim-export writes, and the layout of the bundled fixtures):
// ir.json, weights.safetensors or synth.json, and optionally io.safetensors (inputs and PyTorch's
// outputs) and meta.json. Opening one reads the IR and opens the weights; inputs() gathers the
// graph inputs from io.safetensors, building an LLM prefill's mask and positions by the fixtures'
// rule. (Checking outputs against the folder's references is test and tool plumbing:
// harness/npusim/harness/check.hpp.)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "npusim/config.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

struct ModelDir {
  std::string dir, name;
  ir::Graph graph;
  std::unique_ptr<weights::WeightSource> weights;  // null when the case has no weights file
  std::optional<weights::SafetensorsFile> io;
  std::shared_ptr<const ir::json> meta_json;  // meta.json, when the folder has one

  // weights: "auto" (weights.safetensors, else synth.json), "safetensors", "synth", "none" or a path
  // (a .safetensors file, a synth .json, or a Hugging Face model directory: weights::open_weights).
  static ModelDir open(const std::string& dir, const std::string& weights = "auto");

  // meta.json (include npusim/ir/json.hpp to read it); a null value when there is none.
  const ir::json& meta() const;
  std::string kind() const;

  weights::BoundWeights bind(const weights::BindOptions& opt = {}) const { return weights::bind_weights(graph, weights.get(), opt); }

  // Graph inputs from io.safetensors by name; for LLM prefill cases the mask and positions (not
  // stored) are built by the rule in the fixtures README.
  std::vector<Tensor> inputs() const;

  // An LLM prefill input the fixtures do not store (attention mask, positions), built by their
  // rule; nothing for any other input, or when the graph is not an LLM.
  std::optional<Tensor> llm_input(const ir::TensorInfo& info) const;
};

}  // namespace npusim::inline NPUSIM_ABI::runtime

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/model_dir_inl.hpp"
#endif
