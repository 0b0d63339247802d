// Convolution candidate conv_depthwise: one input and one output channel per group, direct, float
// math, one channel at a time per thread (any CPU).
#pragma once

#include <string>

#include "npusim/target/cpu/kernels/conv/binding.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvDepthwise {
  static constexpr std::string_view name = "conv_depthwise", what = "depthwise (one input and one output channel per group), direct";
  static constexpr bool generic = false;
  static bool applies(const ConvProblem& p, std::string* why) {
    return (p.Cg() == 1 && p.Kg() == 1) ||
           decline(why, [&] { return "not depthwise (" + std::to_string(p.Cg()) + " input and " + std::to_string(p.Kg()) + " output channels per group)"; });
  }
  static Fn bind(const ConvBinding& B) {
    Ctx& c = B.c;
    const ConvGeom g = B.g();
    const std::int64_t M = B.p.M();
    const DType dx = B.p.dx, dy = B.p.dy;
    const std::size_t ex = B.ex(), ey = B.ey();
    const std::byte* px = B.px;
    std::byte* py = B.py;
    const auto b = B.b;
    const bool relu = B.relu;
    Tensor wf = B.wt.to(DType::f32);
    auto wv = c.own(std::vector<float>(wf.data<float>(), wf.data<float>() + wf.numel()));
    auto scratch = c.need_scratch(static_cast<std::size_t>(max_threads()) * static_cast<std::size_t>(g.H * g.W + M) * 4);
    return [=] {
      parallel_for_t(g.N * g.C, 1, [&](int tid, std::int64_t c0, std::int64_t c1) {
        float* in = reinterpret_cast<float*>(scratch->get()) + static_cast<std::size_t>(tid) * static_cast<std::size_t>(g.H * g.W + M);
        float* out = in + g.H * g.W;
        for (std::int64_t nc = c0; nc < c1; ++nc) {
          const std::int64_t ch = nc % g.C;
          load_row(dx, px + static_cast<std::size_t>(nc * g.H * g.W) * ex, in, g.H * g.W);
          const float* wk = wv->data() + ch * g.kh * g.kw;
          for (std::int64_t oh = 0; oh < g.OH; ++oh)
            for (std::int64_t ow = 0; ow < g.OW; ++ow) {
              float s = b ? (*b)[static_cast<std::size_t>(ch)] : 0.0f;
              for (std::int64_t i = 0; i < g.kh; ++i) {
                const std::int64_t ih = oh * g.sh - g.ph + i * g.dh;
                if (ih < 0 || ih >= g.H) continue;
                for (std::int64_t j = 0; j < g.kw; ++j) {
                  const std::int64_t iw = ow * g.sw - g.pw + j * g.dw;
                  if (iw >= 0 && iw < g.W) s += in[ih * g.W + iw] * wk[i * g.kw + j];
                }
              }
              out[oh * g.OW + ow] = relu && s < 0 ? 0.0f : s;
            }
          store_row(dy, out, py + static_cast<std::size_t>(nc * M) * ey, M);
        }
      });
    };
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
