// The reference target running a CompiledProgram: every partition (the target's and the
// fallback's) in order, each kernel as the composition of its member nodes' reference kernels,
// values rounded to the program's storage dtypes when it computes in f16/bf16. This is how the
// tests prove that passes and fusion preserve meaning.
#pragma once

#include <map>
#include <memory>

#include "npusim/program/program.hpp"
#include "npusim/target/reference/reference_target.hpp"
#include "npusim/target/runner.hpp"
#include "npusim/weights/recipe_source.hpp"

namespace npusim::inline NPUSIM_ABI::ref {

// Node order of a partition's kernel schedule.
inline std::vector<std::int32_t> kernel_order(const program::Partition& p) {
  std::vector<std::int32_t> order;
  for (const Kernel& k : p.kernels) order.insert(order.end(), k.nodes.begin(), k.nodes.end());
  return order;
}

class ProgramRunner final : public Runner {
 public:
  // Binds the program's weights (recipes applied) from `source` and prepares every partition.
  ProgramRunner(program::CompiledProgram program, const weights::WeightSource* source, weights::BindOptions bind = {})
      : prog_(std::move(program)) {
    const program::CompiledProgram& prog = prog_;
    weights::RecipeSource rs(source, prog.recipes);
    std::unordered_map<std::string, Tensor> own_cache;
    bind.load_as = DType::f32;
    if (!bind.cache) bind.cache = &own_cache;  // a caller's cache shares weights across programs
    for (const program::Partition& part : prog.partitions) {
      Options o;
      o.order = kernel_order(part);
      if (is_half(prog.compute))
        for (const auto& tp : part.plan.tensors) o.round_to.push_back(tp.storage);
      auto ex = std::make_unique<GraphExecutor>(part.graph, o);
      bind.storage = [&part](ir::TensorId t) { return part.plan.tensors.at(static_cast<std::size_t>(t)).storage; };
      ex->bind_weights(weights::bind_weights(part.graph, &rs, bind).tensors);
      execs_.push_back(std::move(ex));
    }
    // The model's interface, for Runner::graph().
    iface_.source = prog.source;
    for (const auto& io : prog.inputs) iface_.inputs.push_back(iface_.add_tensor({io.name, io.shape, io.dtype, ir::TensorKind::input, -1, 0, {}}));
    for (const auto& io : prog.outputs) {
      auto id = iface_.find(io.name);
      iface_.outputs.push_back(id ? *id : iface_.add_tensor({io.name, io.shape, io.dtype, ir::TensorKind::intermediate, -1, 0, {}}));
    }
  }

  ProgramRunner(const ProgramRunner&) = delete;
  ProgramRunner& operator=(const ProgramRunner&) = delete;

  const ir::Graph& graph() const override { return iface_; }
  const program::CompiledProgram& program() const { return prog_; }
  std::string describe() const override {
    return "reference running the compiled program (" + std::to_string(prog_.partitions.size()) + " partition(s), compute " +
           std::string(dtype_name(prog_.compute)) + ")";
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    if (inputs.size() != prog_.inputs.size())
      throw Error(ErrorCode::graph, "wrong number of inputs", {.file = prog_.source, .expected = std::to_string(prog_.inputs.size()),
                                                               .found = std::to_string(inputs.size())});
    std::map<std::string, Tensor> vals;
    for (std::size_t i = 0; i < inputs.size(); ++i) vals[prog_.inputs[i].name] = inputs[i];
    for (std::size_t k = 0; k < prog_.partitions.size(); ++k) {
      const ir::Graph& g = prog_.partitions[k].graph;
      std::vector<Tensor> in;
      for (auto t : g.inputs) {
        auto it = vals.find(g.tensor(t).name);
        if (it == vals.end())
          throw Error(ErrorCode::runtime, "partition input was not produced by an earlier partition (npusim bug)", {.tensor = g.tensor(t).name});
        in.push_back(it->second);
      }
      std::vector<Tensor> out = execs_[k]->run(in);
      for (std::size_t i = 0; i < g.outputs.size(); ++i) vals[g.tensor(g.outputs[i]).name] = out[i];
    }
    std::vector<Tensor> result;
    for (const auto& io : prog_.outputs) result.push_back(vals.at(io.name));
    return result;
  }

 private:
  program::CompiledProgram prog_;  // owned: the executors refer into it, so runners do not move
  std::vector<std::unique_ptr<GraphExecutor>> execs_;
  ir::Graph iface_;
};

}  // namespace npusim::inline NPUSIM_ABI::ref

namespace npusim::inline NPUSIM_ABI {
template <class Target> struct runner_for;
template <>
struct runner_for<ReferenceTarget> {
  static std::unique_ptr<Runner> make(const program::CompiledProgram& p, const weights::WeightSource* w, weights::BindOptions bind = {}) {
    return std::make_unique<ref::ProgramRunner>(p, w, std::move(bind));
  }
};
}  // namespace npusim::inline NPUSIM_ABI
