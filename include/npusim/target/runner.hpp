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
};

}  // namespace npusim::inline NPUSIM_ABI
