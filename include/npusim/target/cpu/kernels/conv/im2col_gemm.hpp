// Convolution candidate conv_im2col_gemm, the generic one: the whole image's im2col into 32-pixel
// tiles, then the packed GEMM on 6-row weight strips (compute/gemm.hpp: conv_gemm); any dtype, any
// CPU.
#pragma once

#include <algorithm>
#include <string>

#include "npusim/target/cpu/compute/conv_block.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvIm2colGemm {
  static constexpr std::string_view name = "conv_im2col_gemm", what = "im2col into 32-pixel tiles, then the packed GEMM (any dtype, any CPU)";
  static constexpr bool generic = true;
  static bool applies(const ConvProblem&, std::string*) { return true; }
  static Fn bind(const ConvBinding& B) {
    static_assert(CONV_CB == CONV_PX);
    const ConvGeom g = B.g();
    const std::int64_t Cg = B.p.Cg(), Kg = B.p.Kg(), KK = B.KK(), M = B.p.M();
    const DType dx = B.p.dx, dy = B.p.dy;
    const bool relu = B.relu;
    auto packs = B.pack_groups([&](const std::byte* w) { return pack_strips(w, B.wt.dtype(), Kg, KK); });
    const std::int64_t blocks = (M + CONV_CB - 1) / CONV_CB;
    const std::size_t tiles_bytes = (conv_tiles_bytes(KK, M) + 63) / 64 * 64;
    auto pool = B.c.need_scratch(tiles_bytes + conv_gemm_scratch_bytes());
    // im2col of one block into its tile: row (c, i, j), column = pixel 32 blk + q; the block's runs
    // inside the plane are converted, the rest stays zero.
    auto fill_tile = [=](auto tag, const typename decltype(tag)::T* src0, std::int64_t blk, float* tile) {
      const ConvBlock cb(g, blk, false);
      float* dst = tile;
      for (std::int64_t ch = 0; ch < Cg; ++ch)
        for (std::int64_t i = 0; i < g.kh; ++i)
          for (std::int64_t j = 0; j < g.kw; ++j, dst += CONV_CB) {
            std::fill(dst, dst + CONV_CB, 0.0f);
            cb.for_each_run(g, src0 + ch * g.H * g.W, i, j, [&](std::int64_t q, const auto* sp, std::int64_t n) {
              if (g.sw == 1) convert<decltype(tag), SF32>(sp, dst + q, n);
              else
                for (std::int64_t t = 0; t < n; ++t) dst[q + t] = to_f32(tag, sp[t * g.sw]);
            });
          }
    };
    return B.each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      std::byte* base = pool->get();
      float* tiles = reinterpret_cast<float*>(base);
      parallel_for(blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
        visit_float_storage(dx, [&](auto tag) {
          for (std::int64_t blk = b0; blk < b1; ++blk) fill_tile(tag, reinterpret_cast<const typename decltype(tag)::T*>(in), blk, tiles + blk * KK * CONV_CB);
        });
      });
      conv_gemm(w, tiles, M, out, dy, M, bias, relu, base + tiles_bytes);
    });
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
