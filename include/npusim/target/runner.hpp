// Runner: the smallest interface every target offers to the runtime (case checks, the LLM driver,
// benchmarks): run a graph's inputs to its outputs. Outputs are host tensors in any float type.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI {

class Runner {
 public:
  virtual ~Runner() = default;
  virtual const ir::Graph& graph() const = 0;
  // Inputs in graph-input order; outputs in graph-output order.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) = 0;
  virtual std::string describe() const = 0;
  // Loop-carried state (an LLM decode's KV cache): each pair names a graph output that the next
  // run() reads back as the named graph input. A runner that returns true keeps those outputs
  // where they are (device memory): run() then returns an empty Tensor for them, and takes an
  // empty Tensor for the paired input to mean "the value carried from the previous run" (a
  // defined tensor replaces it). Runners that cannot carry return false and change nothing.
  virtual bool carry(std::span<const std::pair<std::string, std::string>> /*output_input*/) { return false; }
};

}  // namespace npusim::inline NPUSIM_ABI
