// Definitions for npusim/runtime/model_dir.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <filesystem>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/weights/open.hpp"
#include "npusim/runtime/model_dir.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC const ir::json& ModelDir::meta() const {
  static const ir::json none;
  return meta_json ? *meta_json : none;
}

NPUSIM_FUNC std::string ModelDir::kind() const { return ir::get_string_or(meta(), "kind", "", "meta.json", dir + "/meta.json"); }

NPUSIM_FUNC ModelDir ModelDir::open(const std::string& dir, const std::string& weights) {
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
  if (own_io && fs::exists(d / "meta.json")) c.meta_json = std::make_shared<const ir::json>(ir::parse_json(read_file((d / "meta.json").string()), (d / "meta.json").string()));
  return c;
}

NPUSIM_FUNC std::vector<Tensor> ModelDir::inputs() const {
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

NPUSIM_FUNC std::optional<Tensor> ModelDir::llm_input(const ir::TensorInfo& info) const {
  if (!llm::has_token_input(graph)) return std::nullopt;
  const llm::Roles roles = llm::detect_roles(graph);
  if (info.name == roles.attention_mask) return llm::causal_mask(info.dtype, info.shape[2], info.shape[3], 0);
  if (info.name == roles.position_ids || info.name == roles.cache_position) return llm::positions(info.shape, 0);
  return std::nullopt;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
