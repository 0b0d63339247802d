// The reference target behind the Runner interface.
#pragma once

#include "npusim/target/reference/reference_target.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI::ref {

class ReferenceRunner final : public Runner {
 public:
  ReferenceRunner(const ir::Graph& g, const std::unordered_map<ir::TensorId, Tensor>& weights, Options opt = {})
      : exec_(g, opt), round_(opt.round_half) {
    exec_.bind_weights(weights);
  }
  const ir::Graph& graph() const override { return exec_.graph(); }
  std::vector<Tensor> run(std::span<const Tensor> inputs) override { return exec_.run(inputs, on_node); }
  std::string describe() const override { return round_ ? "reference (float32, rounded to IR half types)" : "reference (float32)"; }

  GraphExecutor::NodeCallback on_node;

 private:
  GraphExecutor exec_;
  bool round_;
};

}  // namespace npusim::inline NPUSIM_ABI::ref
