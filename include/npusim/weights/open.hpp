// One entry point from a path to a weights source, so every front end accepts the same things:
// a synth manifest (.json), a safetensors file, or a Hugging Face model directory (config.json +
// model.safetensors or sharded files with model.safetensors.index.json).
#pragma once

#include <memory>

#include "npusim/config.hpp"
#include "npusim/weights/hf_checkpoint.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

// `graph`: the model's IR; a Hugging Face directory is bound to it (HfCheckpointSource::bind_to:
// naming rule, rotary check, one error listing every missing weight). Without it, only exact
// names resolve until bind_to is called.
std::unique_ptr<WeightSource> open_weights(const std::string& path, const ir::Graph* graph = nullptr);

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/open_inl.hpp"
#endif
