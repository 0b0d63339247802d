// Data-movement kernels (transpose, permute, expand, slice, select, cat, chunk, split, unbind, and
// copies for views that were not planned as zero-copy): one strided copy, resolved at bind time
// to (shape, source strides, source offset) per output, with a memcpy fast path for contiguous
// inner runs.
#pragma once

#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct CopyPlan {
  const std::byte* src;
  std::byte* dst;
  Shape shape;         // of the destination block
  Strides src_st;      // source strides (elements) per destination dim
  Strides dst_st;      // destination strides (elements)
  std::int64_t src_off = 0, dst_off = 0;
  std::size_t es = 4;
};

// Merges dims that are contiguous in both source and destination (fewer, longer runs).
inline void simplify(CopyPlan& p) {
  Shape s;
  Strides a, b;
  for (std::size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    if (!s.empty() && a.back() == p.src_st[d] * p.shape[d] && b.back() == p.dst_st[d] * p.shape[d]) {
      s.back() *= p.shape[d], a.back() = p.src_st[d], b.back() = p.dst_st[d];
      continue;
    }
    s.push_back(p.shape[d]), a.push_back(p.src_st[d]), b.push_back(p.dst_st[d]);
  }
  if (s.empty()) s = {1}, a = {1}, b = {1};
  p.shape = s, p.src_st = a, p.dst_st = b;
}

inline void run_copy(const CopyPlan& p) {
  const std::size_t r = p.shape.size();
  const std::int64_t inner = p.shape.back(), outer = numel(p.shape) / std::max<std::int64_t>(inner, 1);
  const bool run_contig = p.src_st.back() == 1 && p.dst_st.back() == 1;
  parallel_for(outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(inner, 1)), [&](std::int64_t o0, std::int64_t o1) {
    std::vector<std::int64_t> idx(r, 0);
    for (std::int64_t o = o0; o < o1; ++o) {
      std::int64_t rem = o, so = p.src_off, d_off = p.dst_off;
      for (std::size_t d = r - 1; d-- > 0;) {
        std::int64_t i = rem % p.shape[d];
        rem /= p.shape[d];
        so += i * p.src_st[d], d_off += i * p.dst_st[d];
      }
      if (run_contig) {
        std::memcpy(p.dst + static_cast<std::size_t>(d_off) * p.es, p.src + static_cast<std::size_t>(so) * p.es, static_cast<std::size_t>(inner) * p.es);
      } else {
        for (std::int64_t i = 0; i < inner; ++i)
          std::memcpy(p.dst + static_cast<std::size_t>(d_off + i * p.dst_st.back()) * p.es, p.src + static_cast<std::size_t>(so + i * p.src_st.back()) * p.es, p.es);
      }
    }
  });
}

// A copy of `in` read through (shape, strides, offset) into the contiguous output `out`.
Fn bind_copy(Ctx& c, ir::TensorId in, ir::TensorId out, const Shape& shape, const Strides& src_st, std::int64_t src_off);

// pad and roll: y[o] = x[sum_d map[d][o_d] * stride_d], or `fill` where an entry is -1 (constant
// padding). The maps (ops::SourceMap) are premultiplied by the strides at bind; each output row of
// the last dimension reads one input row.
Fn bind_map_gather(Ctx& c, ir::TensorId x, ir::TensorId y, const ops::SourceMap& m, double fill);

std::vector<Fn> bind_movement(Ctx& c);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <class Op>
  requires(Op::op_class == ops::OpClass::view || Op::op_class == ops::OpClass::movement)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return cpu::bind_movement(c); }
};

template <>
struct kernel<ops::AssertMetadata, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx&) { return {}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/movement_inl.hpp"
#endif
