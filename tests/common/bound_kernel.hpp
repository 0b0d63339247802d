// A CPU-target kernel bound the way the CPU executor binds one, outside an executor: a small graph
// of the tensors it touches, their buffer plan and storage owned here (zeroed). For kernel tests
// and bench/bench_ops.
#pragma once

#include <cstring>
#include <string>

#include "npusim/cpu.hpp"
#include "npusim/target/cpu/kernels/attention.hpp"
#include "npusim/target/cpu/kernels/conv.hpp"
#include "npusim/target/cpu/kernels/linalg.hpp"
#include "npusim/target/cpu/kernels/misc.hpp"
#include "npusim/target/cpu/kernels/movement.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/cpu/kernels/pointwise.hpp"
#include "npusim/target/cpu/layout.hpp"

namespace npusim::test {

struct BoundKernel {
  ir::Graph g;
  Kernel k;
  plan::BufferPlan plan;
  std::vector<cpu::AlignedBuf> bufs;  // per tensor
  std::vector<std::shared_ptr<void>> keep;
  std::shared_ptr<cpu::ScratchPool> scratch = std::make_shared<cpu::ScratchPool>();
  std::vector<bool> blocked;  // per tensor: held channel-blocked (cpu/layout.hpp)
  cpu::Fn fn;

  ir::TensorId add(const std::string& name, Shape shape, DType dt) {
    ir::TensorInfo info;
    info.name = name, info.shape = shape, info.dtype = dt, info.kind = ir::TensorKind::input;
    const ir::TensorId t = g.add_tensor(std::move(info));
    plan.tensors.resize(g.tensors.size());
    plan.tensors.back().storage = dt;
    plan.tensors.back().bytes = numel(shape) * static_cast<std::int64_t>(dtype_size(dt));
    bufs.push_back(cpu::AlignedBuf::make(static_cast<std::size_t>(plan.tensors.back().bytes)));
    std::memset(bufs.back().p.get(), 0, bufs.back().bytes);
    return t;
  }
  std::byte* ptr(ir::TensorId t) { return bufs.at(static_cast<std::size_t>(t)).p.get(); }
  DType storage(ir::TensorId t) const { return plan.tensors.at(static_cast<std::size_t>(t)).storage; }

  // binder(ctx) returns the kernel's function (e.g. cpu::bind_conv); its scratch is allocated here.
  template <class B>
  void bind(const std::string& kind, B&& binder) {
    k.kind = kind;
    cpu::Ctx c{g, k, plan, [this](ir::TensorId t) { return ptr(t); }, [](ir::TensorId) -> const Tensor* { return nullptr; }, keep, scratch, blocked};
    fn = binder(c);
    if (scratch->need) scratch->base = cpu::AlignedBuf::make(scratch->need).p;
  }
};

}  // namespace npusim::test
