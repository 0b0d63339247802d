// Rotary-embedding inverse frequencies (the `rotary_emb.inv_freq` buffer checkpoints do not store)
// computed from a Hugging Face config.json as transformers computes them: the default rule and the
// `linear` and `llama3` scalings, in float32 with transformers' order of operations, so the values
// round to the same bf16/f16 buffer. Other rope types (dynamic, yarn, longrope, ...) change more
// than the buffer (sequence-dependent frequencies, an attention factor) and are refused by name.
#pragma once

#include <string>

#include "npusim/config.hpp"
#include "npusim/core/range.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/json_fwd.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

struct RopeParams {
  std::string type = "default";  // default, linear or llama3
  double theta = 10000.0;        // rope_theta
  std::int64_t dim = 0;          // rotary dimensions: int(head_dim * partial_rotary_factor)
  double factor = 1.0;           // linear, llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position_embeddings = 8192.0;  // llama3

  std::int64_t count() const { return (dim + 1) / 2; }  // inv_freq length: arange(0, dim, 2)
  std::string describe() const;
};

// What config.json's rotary figures may be (docs/robustness.md, "Ranges"): real models use
// rope_theta 10^4..10^7 and factors 1..64; the bounds are wide, but keep float32 frequencies finite.
namespace rope_ranges {
inline constexpr NumberRange theta{1, 1e30, false, false, ""};
inline constexpr NumberRange factor{0.001, 1e6, false, false, ""};  // factor, low_freq_factor, high_freq_factor
inline constexpr NumberRange positions{1, 2147483648.0, false, true, "positions"};  // llama3 original_max_position_embeddings
inline constexpr NumberRange head_dim{1, 65536, false, true, ""};
inline constexpr NumberRange hidden_size{1, 16777216, false, true, ""};
inline constexpr NumberRange heads{1, 65536, false, true, ""};
inline constexpr NumberRange partial{0, 1, true, false, ""};  // partial_rotary_factor
}  // namespace rope_ranges

// Reads rope_theta and the scaling from transformers' two layouts: `rope_theta` + `rope_scaling`
// (v4; the scaling's type under "rope_type" or the older "type") or one `rope_parameters` object
// (v5). head_dim is config.head_dim, else hidden_size // num_attention_heads. Every figure is checked
// against rope_ranges, and the float32 frequencies they give are computed once to check them.
RopeParams rope_params(const ir::json& config, const std::string& file);

namespace detail {
// One float32 operation: the double result of two floats (exact for *, correctly rounded for /,
// +, -) rounded once to float is the float32 result, whatever the compiler contracts into FMAs.
inline float f32(double x) { return static_cast<float>(x); }
}  // namespace detail

// inv_freq as float32 [count()], by transformers' _compute_default_rope_parameters,
// _compute_linear_scaling_rope_parameters and _compute_llama3_parameters. PyTorch evaluates
// `scalar / tensor` as reciprocal(tensor) * scalar, and that is what is written here.
Tensor rope_inv_freq(const RopeParams& p);

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/rope_inl.hpp"
#endif
