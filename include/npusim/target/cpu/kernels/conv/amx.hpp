// Convolution candidate conv_amx: bf16 activations on AMX tiles (compute/conv_amx.hpp), 32
// channels x 32 pixels per tile block, the weights as bf16 rows.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/amx.hpp"
#include "npusim/target/cpu/compute/conv_amx.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvAmx {
  static constexpr std::string_view name = "conv_amx", what = "bf16 on AMX tiles (32 channels x 32 pixels per tile block)";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AMX)
    if (!amx_enabled()) return decline(why, "the OS did not grant the AMX tile state");
    return p.dx == DType::bf16 || decline(why, [&] { return "needs bf16 activations (found " + std::string(dtype_name(p.dx)) + ")"; });
#else
    return decline(why, "not built with AMX-BF16 (the compiler's target has no -mamx-bf16)");
#endif
  }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_AMX)
    const ConvGeom g = B.g();
    const std::int64_t Kg = B.p.Kg(), KK = B.KK();
    const DType dy = B.p.dy;
    const bool relu = B.relu;
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_amx_conv_weights(w, B.wt.dtype(), Kg, KK); });
    auto pool = B.c.need_scratch(amx_conv_scratch_bytes(packs[0]->Kp));
    return B.each_group(packs, [=](const AmxConvWeights& w, const std::byte* in, std::byte* out, const float* bias) {
      amx_conv(g, w, reinterpret_cast<const std::uint16_t*>(in), out, dy, bias, relu, pool->get());
    });
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
