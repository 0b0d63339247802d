// Convolution candidate conv_dpbf16: bf16 activations on AVX-512 BF16 dot products: pixel blocks
// gathered as k pairs, the weights as strips of bf16 pairs; small images with channels along the
// vectors (ResNet on an AMD EPYC: see docs/benchmarks.md). A residual of the output's type is
// added in the epilogue.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/conv_dpbf16.hpp"
#include "npusim/target/cpu/compute/conv_small.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvDpbf16 {
  static constexpr std::string_view name = "conv_dpbf16",
                                    what = "bf16 on AVX-512 BF16 dot products (pixel blocks; small images with channels along the vectors)";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_CONV_DPBF16)
    return p.dx == DType::bf16 || decline(why, [&] { return "needs bf16 activations (found " + std::string(dtype_name(p.dx)) + ")"; });
#else
    return decline(why, no_avx512_bf16);
#endif
  }
  static bool fuses_residual(const ConvBinding& b) { return b.residual && b.c.storage(*b.residual) == b.p.dy; }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_CONV_DPBF16)
    const ConvGeom g = B.g();
    const std::int64_t Kg = B.p.Kg(), KK = B.KK(), M = B.p.M();
    const DType dy = B.p.dy;
    const bool relu = B.relu;
    std::byte* py = B.py;
    const bool small = conv_small_image(M);
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_pair_strips(w, B.wt.dtype(), Kg, KK, small ? CONV_CV_MR : CONV_MR); });
    auto pool = B.c.need_scratch(small ? conv_small_scratch_bytes(packs[0]->KP, M) : conv_blocks_scratch_bytes(packs[0]->KP, packs[0]->strips, M));
    const std::byte* pr = B.residual ? B.c.ptr(*B.residual) : nullptr;
    return B.each_group(packs, [=](const PairStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      const auto* x16 = reinterpret_cast<const std::uint16_t*>(in);
      const void* res = pr ? pr + (out - py) : nullptr;
      if (small) conv_small<ConvDpbf16Step>(g, w, x16, out, dy, bias, relu, pool->get(), res);
      else conv_blocks<ConvDpbf16Step>(g, w, x16, out, dy, bias, relu, pool->get(), res);
    });
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
