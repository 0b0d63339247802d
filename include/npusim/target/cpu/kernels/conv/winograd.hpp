// Convolution candidate conv_winograd: bf16 3x3 stride-1 layers by Winograd F(2x2, 3x3) on
// AVX-512 BF16 dot products (compute/conv_winograd.hpp); a residual of the output's type is added
// in its epilogue.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/conv_winograd.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvWinograd {
  static constexpr std::string_view name = "conv_winograd", what = "bf16 3x3 stride-1 by Winograd F(2x2, 3x3) on AVX-512 BF16 dot products";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_CONV_DPBF16) && defined(NPUSIM_CPU_CONV_WINOGRAD)
    if (p.dx != DType::bf16) return decline(why, [&] { return "needs bf16 activations (found " + std::string(dtype_name(p.dx)) + ")"; });
    return winograd_fits(p.g) ||
           decline(why, [&] { return "needs 3x3, stride 1, padding 1, one group, an even output the input's size, at most 256 input channels and more than 64 pixels (found " +
                            conv_shape(p.g) + ")"; });
#else
    return decline(why, no_avx512_bf16);
#endif
  }
  static bool fuses_residual(const ConvBinding& b) { return b.residual && b.c.storage(*b.residual) == b.p.dy; }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_CONV_DPBF16) && defined(NPUSIM_CPU_CONV_WINOGRAD)
    const ConvGeom g = B.g();
    const std::int64_t Kg = B.p.Kg(), Cg = B.p.Cg();
    const DType dy = B.p.dy;
    const bool relu = B.relu;
    std::byte* py = B.py;
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_winograd_weights(w, B.wt.dtype(), Kg, Cg); });
    auto pool = B.c.need_scratch(winograd_scratch_bytes(packs[0]->KP));
    const std::byte* pr = B.residual ? B.c.ptr(*B.residual) : nullptr;
    return B.each_group(packs, [=](const WinogradWeights& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_winograd(g, w, reinterpret_cast<const std::uint16_t*>(in), out, dy, bias, relu, pool->get(), pr ? pr + (out - py) : nullptr);
    });
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
