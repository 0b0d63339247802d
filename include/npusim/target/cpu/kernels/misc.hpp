// Indexing (embedding, index_copy, index_select), the rotary pattern and the rotary HOP, creation
// ops, and the no-op nodes.
#pragma once

#include <cmath>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

inline std::int64_t read_index(const std::byte* p, DType t, std::int64_t i) {
  return visit_dtype(t, [&]<class T>() { return convert_scalar<std::int64_t>(reinterpret_cast<const T*>(p)[i]); });
}

// negatives: the op counts negative indices from the end (index_copy, index_select; embedding does not).
[[noreturn]] inline void index_error(const char* what, std::int64_t i, std::int64_t size, bool negatives = true) {
  throw ops::index_out_of_range(what, i, size, negatives);
}

Fn bind_embedding(Ctx& c);

// index_copy(self, index, source, dim): out = self with rows replaced. When the planner placed
// `out` over `self` (same bytes) only the new rows are written: the KV-cache update in place.
Fn bind_index_copy(Ctx& c, const ops::IndexCopy::Attrs& a);

Fn bind_index_select(Ctx& c, const ops::IndexSelect::Attrs& a);

// index.Tensor (advanced indexing): the output's offsets into x from its kept dimensions are fixed
// at bind; each run adds the indexed dimensions' offsets read from the index tensors.
Fn bind_index_tensor(Ctx& c, const ops::IndexTensor::Attrs& a);

// Rotary (rotate-half): y = x * cos + cat(-x2, x1) * sin, cos/sin broadcast over heads.
Fn bind_rotary(Ctx& c);

// The HF rotary higher-order op: cos/sin of position * inv_freq (float32), duplicated halves.
Fn bind_rotary_hop(Ctx& c);

template <class Op>
Fn bind_creation(Ctx& c, const typename Op::Attrs& a) {
  const ir::TensorId y = c.out();
  std::byte* py = c.ptr(y);
  const DType dy = c.storage(y);
  const std::int64_t n = c.numel(y);
  return [=] {
    visit_dtype(dy, [&]<class T>() {
      T* p = reinterpret_cast<T*>(py);
      for (std::int64_t i = 0; i < n; ++i) {
        double v;
        if constexpr (std::is_same_v<Op, ops::Arange>) v = a.start.value + static_cast<double>(i) * a.step.value;
        else if constexpr (std::is_same_v<Op, ops::Full>) v = a.fill_value.value;
        else if constexpr (std::is_same_v<Op, ops::ScalarTensor>) v = a.s.value;
        else if constexpr (std::is_same_v<Op, ops::Fill>) v = a.value.value;
        else v = Op::value;
        p[i] = convert_scalar<T>(v);
      }
    });
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::Embedding, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_embedding(c)}; }
};

template <>
struct kernel<ops::IndexCopy, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_copy(c, c.attrs<ops::IndexCopy>())}; }
};

template <>
struct kernel<ops::IndexSelect, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_select(c, c.attrs<ops::IndexSelect>())}; }
};

template <>
struct kernel<ops::IndexTensor, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_index_tensor(c, c.attrs<ops::IndexTensor>())}; }
};

template <class Op>
  requires(Op::op_class == ops::OpClass::creation && !std::is_same_v<Op, ops::RotaryHop>)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_creation<Op>(c, c.attrs<Op>())}; }
};

template <>
struct kernel<ops::RotaryHop, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rotary_hop(c)}; }
};

template <>
struct kernel<fusion::Rotary, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_rotary(c)}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/misc_inl.hpp"
#endif
