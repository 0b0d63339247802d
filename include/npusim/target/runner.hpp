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
  // Gives the carried graph input `input` ([B, H, L, D], e.g. an LLM decode's KV cache) the value
  // `prefix` ([B, H, S, D], S <= L) in positions 0..S-1 of dimension 2 and zeros after, where the
  // carried value is kept (device memory), without a host tensor of the whole input: the next run()
  // then takes an empty Tensor for it. False (nothing changed) where the runner cannot, or the input
  // is not carried on its device: the caller passes the whole value to run() instead.
  virtual bool seed_carried(const std::string& /*input*/, const Tensor& /*prefix*/) { return false; }
};

}  // namespace npusim::inline NPUSIM_ABI
