// Weight recipes: weights the compiler derives from checkpoint weights (a BatchNorm folded into
// the preceding conv, channels padded for an aligned layout, a dtype cast). The compiler records
// them in the program; the loader applies them, in float64, once per load.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/attr.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

struct Recipe {
  std::string kind;                  // "bn_fold", "pad", "cast"
  std::vector<std::string> inputs;   // source keys ("" for an absent optional input)
  std::vector<std::string> outputs;  // derived keys
  ir::AttrMap params;
  friend bool operator==(const Recipe&, const Recipe&) = default;
};

// bn_fold inputs: conv weight, conv bias?, gamma?, beta?, running_mean, running_var;
// outputs: weight, bias; params: eps.
Recipe bn_fold_recipe(std::vector<std::string> inputs, std::vector<std::string> outputs, double eps);

// pad: zero-pads dims of one tensor to `shape`.
Recipe pad_recipe(std::string input, std::string output, const Shape& shape);

// quantize_per_channel (int8 post-training quantization, passes/quantize_int8.hpp): inputs weight
// ([Cout, ...] float), bias? ([Cout]); params input_scale (the activation's scale), bits (2..8);
// outputs the int8 codes (symmetric per output channel: scale = max|w_c| / ((2^bits - 1) / 2), as
// PyTorch's per-channel symmetric observer), the f32 scales [Cout] and the int32 bias [Cout]
// (bias / (input_scale * scale_c), rounded to nearest even; zeros without a bias).
// Applies one recipe. `get` returns a source tensor by key (float tensors in any dtype). Results
// are computed in float64 and returned in float32 (pad keeps its input's dtype); the loader rounds
// them to the dtype the target stores.
// What each kind needs: input and output counts, and its params (a recipe read from a .npubin is
// checked against this before anything is loaded).
void check_recipe(const Recipe& r);

std::vector<Tensor> apply_recipe(const Recipe& r, const std::function<Tensor(const std::string&)>& get);

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/recipes_inl.hpp"
#endif
