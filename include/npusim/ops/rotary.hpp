// Higher-order ops whose body torch_ir does not serialise. torch.export emits
// `wrap_with_set_grad_enabled` for no_grad regions; in HF decoder LLMs that region is the rotary
// embedding. We accept it only when its signature is exactly the HF rotary one:
//   inputs  inv_freq [D/2] (float), position_ids [B, S] (integer)
//   outputs cos, sin [B, S, D] (float)
// cos/sin = cos/sin(cat(f, f)) with f[b,s,i] = float(position_ids[b,s]) * inv_freq[i] in float32,
// cast to the output dtype. Any other signature is an error naming the op, never a guess.
#pragma once

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct RotaryHop {
  static constexpr std::string_view id = "rotary_embedding";
  static constexpr std::array aten{"wrap_with_set_grad_enabled"sv};
  static constexpr OpClass op_class = OpClass::creation;
  using Attrs = NoAttrs;
  // The output dtype is the model's activation dtype, which the signature does not carry.
  static constexpr bool output_dtype_from_ir = true;
  static Specs infer(const Attrs&, InSpecs in) {
    auto fail = [&](const std::string& why) {
      std::string sig;
      for (const auto& t : in) sig += (sig.empty() ? "" : ", ") + to_string(t);
      return Error(ErrorCode::unsupported,
                   "wrap_with_set_grad_enabled (a higher-order op whose body is not in the IR) is only understood as the "
                   "HF rotary embedding, and this node does not have that signature: " + why,
                   {.expected = "inputs (inv_freq [D/2] float, position_ids [B, S] int)", .found = "(" + sig + ")"});
    };
    if (in.size() != 2) throw fail("wrong number of inputs");
    if (in[0].shape.size() != 1 || !is_floating(in[0].dtype)) throw fail("first input is not a 1-D float tensor");
    if (in[1].shape.size() != 2 || !is_integral(in[1].dtype)) throw fail("second input is not a 2-D integer tensor");
    Shape o{in[1].shape[0], in[1].shape[1], 2 * in[0].shape[0]};
    return {{o, in[0].dtype}, {o, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
