// Definitions for npusim/weights/open.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <filesystem>

#include "npusim/core/file.hpp"

#include "npusim/weights/open.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC std::unique_ptr<WeightSource> open_weights(const std::string& path, const ir::Graph* graph) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (fs::is_directory(p)) {
    if (const std::string kind = path_kind((p / HfCheckpointSource::config_name).string()); kind != "a regular file")
      throw Error(ErrorCode::io, "a weights directory must be a Hugging Face model directory", {.file = path,
                  .expected = "config.json with model.safetensors or model.safetensors.index.json",
                  .found = kind == "none" ? "no config.json" : "config.json is " + kind});
    auto src = std::make_unique<HfCheckpointSource>(path);
    if (graph) src->bind_to(*graph);
    return src;
  }
  if (path.ends_with(HfCheckpointSource::index_name) || p.filename() == HfCheckpointSource::config_name)
    throw Error(ErrorCode::io, "give the model directory, not one of its files", {.file = path,
                .expected = p.parent_path().string().empty() ? "." : p.parent_path().string(), .found = path});
  if (path.ends_with(".json")) return std::make_unique<SynthSource>(SynthSource::read(path));
  if (fs::is_regular_file(p)) return std::make_unique<SafetensorsSource>(path);
  throw Error(ErrorCode::io, fs::exists(p) ? "not a weights file or directory" : "no such weights file or directory",
              {.file = path, .expected = "a .safetensors file, a synth .json manifest or a Hugging Face model directory"});
}

}  // namespace npusim::inline NPUSIM_ABI::weights
