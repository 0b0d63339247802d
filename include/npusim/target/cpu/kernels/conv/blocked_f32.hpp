// Convolution candidate conv_blocked_f32: f32 on channel-blocked activations (NCHW16c,
// compute/conv_nchwc.hpp), AVX-512. layout.hpp blocks a tensor only where blockable() says every
// convolution around it would run here, so the layout and the chooser share one rule.
#pragma once

#include <string>

#include "npusim/target/cpu/compute/conv_nchwc.hpp"
#include "npusim/target/cpu/kernels/conv/binding.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct ConvBlockedF32 {
  static constexpr std::string_view name = "conv_blocked_f32",
                                    what = "f32 on channel-blocked activations (NCHW16c), 7-pixel row groups x 64 channels, AVX-512";
  static constexpr bool generic = false;

  // Whether this build runs blocked convolutions at all (AVX-512, not skipped).
  static bool enabled() {
#if defined(NPUSIM_CPU_AVX512)
    return !skipped<ConvBlockedF32>();
#else
    return false;
#endif
  }
  // Whether a convolution of `groups` groups with these storage types (input, the convolution's
  // output, the kernel's output) can read and write blocked tensors: what layout.hpp asks.
  static bool blockable([[maybe_unused]] std::int64_t groups, [[maybe_unused]] DType x, [[maybe_unused]] DType mid, [[maybe_unused]] DType y,
                        std::string* why = nullptr) {
#if defined(NPUSIM_CPU_AVX512)
    if (x != DType::f32 || mid != DType::f32 || y != DType::f32)
      return decline(why, [&] { return "needs f32 activations (found " + std::string(dtype_name(x)) + ")"; });
    if (groups != 1) return decline(why, [&] { return "needs one group (found " + std::to_string(groups) + ")"; });
    return true;
#else
    return decline(why, no_avx512);
#endif
  }
  static bool applies(const ConvProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AVX512)
    if (p.blocked_in || p.blocked_out) return true;
    if (!blockable(p.g.G, p.dx, p.dy, p.dy, why)) return false;
    return decline(why, "its activations stay NCHW here (layout.hpp blocks a tensor only where every kernel around it takes blocked tensors)");
#else
    (void)p;
    return decline(why, no_avx512);
#endif
  }
  // A residual is added in the epilogue when the output is blocked (it is in the output's layout).
  static bool fuses_residual(const ConvBinding& b) { return b.p.blocked_out; }
  static Fn bind(const ConvBinding& B) {
#if defined(NPUSIM_CPU_AVX512)
    Ctx& c = B.c;
    const ConvGeom g = B.g();
    if (B.p.dx != DType::f32 || B.p.dy != DType::f32 || g.G != 1) c.unsupported("a blocked activation around a conv the blocked kernel cannot run (npusim bug)");
    auto bc = c.own(make_blocked_conv(g, B.wt.raw(), B.wt.dtype(), B.b ? B.b->data() : nullptr, B.relu, c.is_blocked(B.x), c.is_blocked(B.y)));
    auto pool = c.need_scratch(bc->scratch_bytes());
    const auto* pr = B.residual ? c.ptr<const float>(*B.residual) : nullptr;
    const std::byte* px = B.px;
    std::byte* py = B.py;
    const std::int64_t M = B.p.M();
    return [=] {
      for (std::int64_t n = 0; n < g.N; ++n)
        blocked_conv(*bc, reinterpret_cast<const float*>(px) + n * g.C * g.H * g.W, reinterpret_cast<float*>(py) + n * g.K * M, pool->get(),
                     pr ? pr + n * g.K * M : nullptr);
    };
#else
    return conv_not_built(B, name);
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
