// Convolution candidate conv_widened_f32: f16 activations, and bf16 where neither AMX nor the dot
// products are used, kh x kw > 1: the input widened once into f32 scratch, then the f32
// pixel-block kernels, whose epilogue stores the output's type (ResNet-50 bf16 on an AMD EPYC: its
// 3x3 layers 0.6-0.7x the time of im2col + GEMM on widened tiles; its 1x1 layers, which the GEMM
// reads in place, 1.0-1.15x, so they stay there). AVX-512.
#pragma once

#include <algorithm>
#include <string>

#include "npusim/target/cpu/compute/conv_f32.hpp"
#include "npusim/target/cpu/compute/conv_small.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvWidenedF32 {
  static constexpr std::string_view name = "conv_widened_f32", what = "f16/bf16 input widened once to f32, then the f32 pixel-block kernels";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AVX512)
    if (p.dx == DType::f32) return decline(why, "the activations are f32 already");
    return p.g.kh * p.g.kw > 1 || decline(why, "1x1 convolutions read half inputs in place in the GEMM (conv_im2col_gemm), 1.0-1.15x faster than widening");
#else
    return decline(why, no_avx512);
#endif
  }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_AVX512)
    const ConvGeom g = B.g();
    const std::int64_t Cg = B.p.Cg(), Kg = B.p.Kg(), KK = B.KK(), M = B.p.M();
    const DType dx = B.p.dx, dy = B.p.dy;
    const std::size_t ex = B.ex(), ey = B.ey();
    const std::byte* px = B.px;
    std::byte* py = B.py;
    const auto b = B.b;
    const bool relu = B.relu;
    const bool small = conv_small_image(M);
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_strips(w, B.wt.dtype(), Kg, KK, small ? CONV_CV_MR : CONV_MR); });
    const std::size_t conv_bytes =
        ((small ? conv_small_scratch_bytes(KK, M) : conv_blocks_scratch_bytes(KK, packs[0]->strips, M)) + 63) / 64 * 64;
    const std::int64_t xn = g.N * g.C * g.H * g.W;
    auto pool = B.c.need_scratch(conv_bytes + static_cast<std::size_t>(xn) * 4);
    return [=] {
      std::byte* base = pool->get();
      float* xf = reinterpret_cast<float*>(base + conv_bytes);
      constexpr std::int64_t chunk = 4096;
      parallel_for((xn + chunk - 1) / chunk, 4, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i)
          load_row(dx, px + static_cast<std::size_t>(i * chunk) * ex, xf + i * chunk, std::min(chunk, xn - i * chunk));
      });
      for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t gi = 0; gi < g.G; ++gi) {
          const float* in = xf + (n * g.C + gi * Cg) * g.H * g.W;
          std::byte* out = py + static_cast<std::size_t>((n * g.K + gi * Kg) * M) * ey;
          const float* bias = b ? b->data() + gi * Kg : nullptr;
          const PackedStrips& w = *packs[static_cast<std::size_t>(gi)];
          if (small) conv_small<ConvF32Step>(g, w, in, out, dy, bias, relu, base);
          else conv_blocks<ConvF32Step>(g, w, in, out, dy, bias, relu, base);
        }
    };
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
