// Definitions for npusim/target/reference/executor.hpp (NPUSIM_FUNC: npusim/config.hpp): ref::Executor,
// which the factory makes.
#pragma once

#include <map>
#include <memory>

#include "npusim/config.hpp"
#include "npusim/target/reference/executor.hpp"
#include "npusim/target/reference/interpreter.hpp"

namespace npusim::inline NPUSIM_ABI::ref {

// Node order of a partition's kernel schedule.
inline std::vector<std::int32_t> kernel_order(const program::Partition& p) {
  std::vector<std::int32_t> order;
  for (const Kernel& k : p.kernels) order.insert(order.end(), k.nodes.begin(), k.nodes.end());
  return order;
}

class Executor final : public PartitionExecutor {
 public:
  explicit Executor(const PartitionContext& ctx) : part_(ctx.partition) {
    Options o;
    o.order = kernel_order(part_);
    if (is_half(ctx.program.compute))
      for (const auto& tp : part_.plan.tensors) o.round_to.push_back(tp.storage);
    for (std::size_t ki = 0; ki < part_.kernels.size(); ++ki)
      for (auto n : part_.kernels[ki].nodes) kind_[n] = {part_.kernels[ki].kind, static_cast<int>(ki)};
    exec_ = std::make_unique<Interpreter>(part_.graph, o);
    weights::BindOptions b = ctx.bind;
    b.load_as = DType::f32;
    b.storage = [this](ir::TensorId t) { return part_.plan.tensors.at(static_cast<std::size_t>(t)).storage; };
    exec_->bind_weights(weights::bind_weights(part_.graph, ctx.weights, b).tensors);
  }
  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    if (!prof_) return exec_->run(inputs);
    double t = prof_->now_us();
    return exec_->run(inputs, [&](std::size_t, const ir::Node& n) {
      double now = prof_->now_us();
      auto idx = static_cast<std::int32_t>(&n - part_.graph.nodes.data());
      const auto& [kind, kernel] = kind_.at(idx);
      prof_->add({n.name, kind, part_.target, t, now - t, -1, track_, kernel});
      t = now;
    });
  }
  void set_profiler(Profiler* p, int track) override { prof_ = p, track_ = track; }

 private:
  const program::Partition& part_;
  std::unique_ptr<Interpreter> exec_;
  std::map<std::int32_t, std::pair<std::string, int>> kind_;  // node -> its kernel's kind and index
  Profiler* prof_ = nullptr;
  int track_ = 0;
};

}  // namespace npusim::inline NPUSIM_ABI::ref

namespace npusim::inline NPUSIM_ABI {
NPUSIM_FUNC ExecutorFactory executor_for<ReferenceTarget>::factory(const ExecutorOptions&) {
  return [](const PartitionContext& ctx) -> std::unique_ptr<PartitionExecutor> { return std::make_unique<ref::Executor>(ctx); };
}
}  // namespace npusim::inline NPUSIM_ABI
