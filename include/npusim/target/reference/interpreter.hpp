// The reference target's interpreter: executes an IR graph node by node with the reference
// kernels (every node checked when constructed), optionally rounding every value stored as f16/bf16.
// Interpreter is what the reference target's executor runs a partition with; InterpreterRunner
// runs a raw IR graph behind the Runner interface (`npusim run --interpret`, the fixture tests).
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>

#include "npusim/target/reference/reference_target.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI {
namespace ref {

void round_in_place(Tensor& t, DType to);

struct Options {
  bool round_half = false;  // round values the IR stores as f16/bf16 after every node
  // Explicit rounding per tensor id (a compiled program's storage dtypes); overrides round_half.
  std::vector<DType> round_to{};
  // Node execution order (a compiled program's kernel schedule); empty = graph order.
  std::vector<std::int32_t> order{};
};

// Executes a graph. Construction checks every node (op known, attrs supported, shapes agree with
// the IR); run() may be called many times with different inputs.
class Interpreter {
 public:
  Interpreter(const ir::Graph& g, Options opt = {});

  // Weights by tensor id, already holding values of their IR dtype (weights::bind_weights does
  // that), in any float type; converted once to float32 (no copy when they already are), and
  // tensors that share storage, such as tied embeddings, stay shared.
  void bind_weights(const std::unordered_map<ir::TensorId, Tensor>& weights);

  using NodeCallback = std::function<void(std::size_t index, const ir::Node&)>;

  // Inputs in graph-input order; returns the graph outputs in runtime representation.
  std::vector<Tensor> run(std::span<const Tensor> inputs, const NodeCallback& on_node = {}) const;

  const ir::Graph& graph() const { return g_; }

 private:
  void check_input(const ir::TensorInfo& info, const Tensor& t) const;

  std::shared_ptr<const ir::Graph> written_;  // the graph with its writes made dataflow, when it has any
  const ir::Graph& g_;
  Options opt_;
  std::vector<NodeFn> fns_;
  std::vector<std::int64_t> last_use_;
  std::unordered_map<ir::TensorId, Tensor> weights_;
};

// An IR graph behind the Runner interface, interpreted.
class InterpreterRunner final : public Runner {
 public:
  InterpreterRunner(const ir::Graph& g, const std::unordered_map<ir::TensorId, Tensor>& weights, Options opt = {})
      : exec_(g, opt), round_(opt.round_half) {
    exec_.bind_weights(weights);
  }
  const ir::Graph& graph() const override { return exec_.graph(); }
  std::vector<Tensor> run(std::span<const Tensor> inputs) override { return exec_.run(inputs, on_node); }
  std::string describe() const override { return round_ ? "reference (float32, rounded to IR half types)" : "reference (float32)"; }

  Interpreter::NodeCallback on_node;

 private:
  Interpreter exec_;
  bool round_;
};

}  // namespace ref
}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/reference/impl/interpreter_inl.hpp"
#endif
