// An exported model folder (what npusim-export writes, and the layout of the bundled fixtures):
// ir.json, weights.safetensors or synth.json, and optionally io.safetensors (inputs and PyTorch's
// outputs) and meta.json. Opening one reads the IR and opens the weights; inputs() gathers the
// graph inputs from io.safetensors, building an LLM prefill's mask and positions by the fixtures'
// rule. (Checking outputs against the folder's references is test and tool plumbing:
// harness/npusim/harness/check.hpp.)
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "npusim/ir/reader.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/weights/open.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

struct ModelDir {
  std::string dir, name;
  ir::Graph graph;
  std::unique_ptr<weights::WeightSource> weights;  // null when the case has no weights file
  std::optional<weights::SafetensorsFile> io;
  ir::json meta;  // null when there is no meta.json

  // weights: "auto" (weights.safetensors, else synth.json), "safetensors", "synth", "none" or a path
  // (a .safetensors file, a synth .json, or a Hugging Face model directory: weights::open_weights).
  static ModelDir open(const std::string& dir, const std::string& weights = "auto") {
    namespace fs = std::filesystem;
    ModelDir c;
    c.dir = dir;
    c.name = fs::path(dir).lexically_normal().filename().string();
    if (c.name.empty()) c.name = fs::path(dir).lexically_normal().parent_path().filename().string();
    // An IR file stands for its folder: weights are looked up beside it, and there is no
    // io.safetensors of its own unless the file is the folder's ir.json.
    const bool ir_file = fs::is_regular_file(dir) && dir.ends_with(".json");
    const fs::path d = ir_file ? fs::path(dir).parent_path() : fs::path(dir);
    if (ir_file) c.name = fs::path(dir).stem() == "ir" ? d.filename().string() : fs::path(dir).stem().string();
    if (!ir_file && !fs::is_directory(d))
      throw Error(ErrorCode::io, fs::exists(d) ? "not a model: expected a case directory, an IR .json file or a .npubin" : "no such file or directory",
                  {.file = dir});
    if (!ir_file && !fs::exists(d / "ir.json"))
      throw Error(ErrorCode::io, "the directory has no ir.json (export the model with npusim-export; see docs/export.md)", {.file = dir});
    c.graph = ir::read_ir_file(ir_file ? dir : (d / "ir.json").string());
    auto st = d / "weights.safetensors", sy = d / "synth.json";
    std::string wpath = weights == "none" ? std::string()
                        : weights == "auto" ? (fs::exists(st) ? st.string() : fs::exists(sy) ? sy.string() : std::string())
                        : weights == "safetensors" ? st.string()
                        : weights == "synth" ? sy.string() : weights;
    if (!wpath.empty()) c.weights = weights::open_weights(wpath, &c.graph);
    const bool own_io = !ir_file || fs::path(dir).filename() == "ir.json";
    if (own_io && fs::exists(d / "io.safetensors")) c.io = weights::SafetensorsFile::open((d / "io.safetensors").string());
    if (own_io && fs::exists(d / "meta.json")) c.meta = ir::parse_json(read_file((d / "meta.json").string()), (d / "meta.json").string());
    return c;
  }

  std::string kind() const { return meta.is_object() ? meta.value("kind", "") : ""; }

  weights::BoundWeights bind(const weights::BindOptions& opt = {}) const { return weights::bind_weights(graph, weights.get(), opt); }

  // Graph inputs from io.safetensors by name; for LLM prefill cases the mask and positions (not
  // stored) are built by the rule in the fixtures README.
  std::vector<Tensor> inputs() const {
    std::vector<Tensor> in;
    for (ir::TensorId t : graph.inputs) {
      const ir::TensorInfo& info = graph.tensor(t);
      if (io && io->find(info.name)) in.push_back(io->tensor(info.name));
      else if (auto derived = llm_input(info)) in.push_back(std::move(*derived));
      else
        throw Error(ErrorCode::io, std::string("graph input has no value") + (io ? " in io.safetensors" : " (the case has no io.safetensors)"),
                    {.file = dir, .tensor = info.name, .expected = "a " + std::string(dtype_name(info.dtype)) + " " + to_string(info.shape) + " tensor"});
    }
    return in;
  }

  // An LLM prefill input the fixtures do not store (attention mask, positions), built by their
  // rule; nothing for any other input, or when the graph is not an LLM.
  std::optional<Tensor> llm_input(const ir::TensorInfo& info) const {
    if (!llm::has_token_input(graph)) return std::nullopt;
    const llm::Roles roles = llm::detect_roles(graph);
    if (info.name == roles.attention_mask) return llm::causal_mask(info.dtype, info.shape[2], info.shape[3], 0);
    if (info.name == roles.position_ids || info.name == roles.cache_position) return llm::positions(info.shape, 0);
    return std::nullopt;
  }
};

}  // namespace npusim::inline NPUSIM_ABI::runtime
