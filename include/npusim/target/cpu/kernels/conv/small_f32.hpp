// Convolution candidate conv_small_f32: f32 activations, images of at most 64 output pixels:
// channels along the vectors, 48-channel strips (compute/conv_small.hpp). AVX-512.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/conv_f32.hpp"
#include "npusim/target/cpu/compute/conv_small.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvSmallF32 {
  static constexpr std::string_view name = "conv_small_f32", what = "f32, images of at most 64 pixels: channels along the vectors, 48-channel strips";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AVX512)
    if (p.dx != DType::f32) return decline(why, [&] { return "needs f32 activations (found " + std::string(dtype_name(p.dx)) + ")"; });
    return conv_small_image(p.M()) || decline(why, [&] { return std::to_string(p.M()) + " output pixels: more than 64"; });
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
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_strips(w, B.wt.dtype(), Kg, KK, CONV_CV_MR); });
    auto pool = B.c.need_scratch(conv_small_scratch_bytes(KK, M));
    return B.each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_small<ConvF32Step>(g, w, reinterpret_cast<const float*>(in), out, dy, bias, relu, pool->get());
    });
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
