// The mixture-of-experts kernels of the CPU target: topk and index_add as plain loops (small:
// router scores, one row per token), zeros_like through the creation kernels, and the `moe`
// pattern (fusion/patterns.hpp), which runs only the experts the router selected: samples grouped
// by expert, each selected expert's gate/up and down rows read once per group (a GEMV per expert
// at decode, the expert's tokens gathered at prefill), its outputs weighted and added to their
// tokens' rows in sample order (index_add's order), in float32 until the one store.
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/kernels/misc.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

Fn bind_topk(Ctx& c, const ops::TopK::Attrs& a);
Fn bind_index_add(Ctx& c, const ops::IndexAdd::Attrs& a);
Fn bind_moe(Ctx& c);

}  // namespace npusim::inline NPUSIM_ABI::cpu

namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::TopK, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_topk(c, c.attrs<ops::TopK>())}; }
};

template <>
struct kernel<ops::IndexAdd, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_add(c, c.attrs<ops::IndexAdd>())}; }
};

template <>
struct kernel<fusion::Moe, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_moe(c)}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/moe_inl.hpp"
#endif
