// Attention: softmax(q k^T * scale + mask) v for every (batch, head, query), with grouped-query
// heads reading their shared K/V directly and an online softmax. Keys the mask removes (-inf or the
// dtype's lowest value, HF's convention for "not yet filled") are skipped without reading K or V,
// so a decode step's cost follows the number of filled cache positions, not the cache size.
#pragma once

#include <cmath>
#include <limits>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

inline float dot(const float* a, const float* b, std::int64_t n) {
  fbatch acc(0.f);
  std::int64_t i = 0;
  for (; i + static_cast<std::int64_t>(W) <= n; i += W) acc = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc);
  float s = xsimd::hadd(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

struct AttentionArgs {
  ir::TensorId q, k, v;
  std::optional<ir::TensorId> mask;
  float scale;
  bool causal;
  ir::TensorId y;
};

Fn bind_attention(Ctx& c, const AttentionArgs& a);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::ScaledDotProductAttention, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const ir::Node& n = c.node();
    auto a = c.attrs<ops::ScaledDotProductAttention>();
    const float scale = static_cast<float>(ops::ScaledDotProductAttention::effective_scale(a, c.shape(n.inputs[0]).back()));
    return {cpu::bind_attention(c, {n.inputs[0], n.inputs[1], n.inputs[2], n.inputs.size() == 4 ? std::optional(n.inputs[3]) : std::nullopt,
                                    scale, a.is_causal, n.outputs[0]})};
  }
};

template <>
struct kernel<fusion::Attention, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) {
    const bool has_mask = c.k.params.find("has_mask")->as_bool();
    return {cpu::bind_attention(c, {c.in(0), c.in(1), c.in(2), has_mask ? std::optional(c.in(3)) : std::nullopt,
                                    static_cast<float>(c.k.param("scale", 1.0)), false, c.out()})};
  }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/attention_inl.hpp"
#endif
