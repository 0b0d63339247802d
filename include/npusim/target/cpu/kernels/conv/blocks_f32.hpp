// Convolution candidate conv_blocks_f32: f32 activations, pixel blocks of 32 gathered per thread,
// 12-channel strips (compute/conv_blocks.hpp). AVX-512.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/conv_blocks.hpp"
#include "npusim/target/cpu/compute/conv_f32.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvBlocksF32 {
  static constexpr std::string_view name = "conv_blocks_f32", what = "f32 pixel blocks of 32 gathered per thread, 12-channel strips, AVX-512";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AVX512)
    return p.dx == DType::f32 || decline(why, [&] { return "needs f32 activations (found " + std::string(dtype_name(p.dx)) + ")"; });
#else
    return decline(why, no_avx512);
#endif
  }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_AVX512)
    const ConvGeom g = B.g();
    const std::int64_t Kg = B.p.Kg(), KK = B.KK(), M = B.p.M();
    const DType dy = B.p.dy;
    const bool relu = B.relu;
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_strips(w, B.wt.dtype(), Kg, KK, CONV_MR); });
    auto pool = B.c.need_scratch(conv_blocks_scratch_bytes(KK, packs[0]->strips, M));
    return B.each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_blocks<ConvF32Step>(g, w, reinterpret_cast<const float*>(in), out, dy, bias, relu, pool->get());
    });
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
