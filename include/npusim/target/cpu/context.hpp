// What a CPU kernel sees when it is bound: the program kernel, its graph and plan, the address of
// every stored tensor, the weights as loaded (for packing), and a place to keep what it allocates.
// Binding resolves everything; the returned function does only the arithmetic.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "npusim/fusion/kernel.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/plan/buffer_plan.hpp"

namespace npusim::inline NPUSIM_ABI {

struct CpuTarget;

namespace cpu {

using Fn = std::function<void()>;

// Scratch shared by all kernels of an executor (they run one after another): each kernel asks for
// the bytes it needs at bind time; the executor allocates the largest request once.
struct ScratchPool {
  std::size_t need = 0;
  std::shared_ptr<std::byte> base;
  std::byte* get() const { return base.get(); }
};

struct Ctx {
  const ir::Graph& g;
  const Kernel& k;
  const plan::BufferPlan& plan;
  std::function<std::byte*(ir::TensorId)> addr;        // storage address (nullptr: not stored)
  std::function<const Tensor*(ir::TensorId)> weight;   // the bound weight tensor, or nullptr
  std::vector<std::shared_ptr<void>>& keep;            // lives as long as the executor
  std::shared_ptr<ScratchPool> scratch;                // shared; sized after binding
  std::vector<bool> blocked = {};                      // per tensor: held channel-blocked (layout.hpp); empty: none
  std::vector<bool> channels_last = {};                // per tensor: an int8 activation held NHWC (layout.hpp); empty: none

  // Reserves `bytes` of shared scratch; the pointer is valid when the kernel runs.
  std::shared_ptr<ScratchPool> need_scratch(std::size_t bytes) {
    scratch->need = std::max(scratch->need, (bytes + 63) / 64 * 64);
    return scratch;
  }

  const ir::Node& node(std::size_t member = 0) const { return g.nodes.at(static_cast<std::size_t>(k.nodes.at(member))); }
  template <class Op>
  typename Op::Attrs attrs(std::size_t member = 0) const {
    return ops::read_attrs<typename Op::Attrs>(node(member).attrs, node(member).op_type);
  }
  bool is_blocked(ir::TensorId t) const { return static_cast<std::size_t>(t) < blocked.size() && blocked[static_cast<std::size_t>(t)]; }
  bool is_channels_last(ir::TensorId t) const {
    return static_cast<std::size_t>(t) < channels_last.size() && channels_last[static_cast<std::size_t>(t)];
  }
  DType storage(ir::TensorId t) const { return plan.tensors.at(static_cast<std::size_t>(t)).storage; }
  const Shape& shape(ir::TensorId t) const { return g.tensor(t).shape; }
  std::int64_t numel(ir::TensorId t) const { return npusim::numel(shape(t)); }
  ir::TensorId in(std::size_t i) const { return k.inputs.at(i); }
  ir::TensorId out(std::size_t i = 0) const { return k.outputs.at(i); }
  template <class T = std::byte>
  T* ptr(ir::TensorId t) const {
    std::byte* p = addr(t);
    if (!p) throw Error(ErrorCode::runtime, "CPU kernel reads a tensor that has no storage (npusim bug)", {.node = node().name, .tensor = g.tensor(t).name});
    return reinterpret_cast<T*>(p);
  }
  template <class T>
  std::shared_ptr<T> own(T v) {
    auto s = std::make_shared<T>(std::move(v));
    keep.push_back(s);
    return s;
  }
  [[noreturn]] void unsupported(const std::string& why) const {
    throw Error(ErrorCode::unsupported, "CPU target: " + why, {.node = node().name});
  }
};

using Fns = std::vector<Fn>;

// A weight's bound tensor, required for packing.
inline const Tensor& require_weight(Ctx& c, ir::TensorId t, const char* what) {
  const Tensor* w = c.weight(t);
  if (!w) c.unsupported(std::string(what) + " must be a weight (constant at load time) to be packed");
  return *w;
}

inline std::shared_ptr<std::vector<float>> f32_copy(Ctx& c, ir::TensorId t) {
  const Tensor& w = require_weight(c, t, "bias");
  Tensor f = w.to(DType::f32);
  return c.own(std::vector<float>(f.data<float>(), f.data<float>() + f.numel()));
}

}  // namespace cpu
}  // namespace npusim::inline NPUSIM_ABI
