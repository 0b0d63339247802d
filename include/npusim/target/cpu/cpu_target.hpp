// The CPU target: SIMD kernels (xsimd, -march=native), OpenMP threads, the compiler's fusion and
// arena. Weights stay in their storage type (bf16/f16/f32), packed once at load, widened in
// registers; accumulation in f32. Partitions it cannot run go to the reference target through
// runtime::PlanRunner (the DAG executor).
//
//   npusim::Pipeline<npusim::CpuTarget, npusim::Bf16> p("model/ir.json");
#pragma once

#include <chrono>

#include "npusim/pipeline.hpp"
#include "npusim/runtime/plan_runner.hpp"
#include "npusim/target/cpu/kernels.hpp"
#include "npusim/target/cpu/layout.hpp"
#include "npusim/target/reference/program_runner.hpp"

namespace npusim::inline NPUSIM_ABI {

struct CpuTarget {
  static constexpr std::string_view name = "cpu";
  using op_list = ops::all_ops;
  using pattern_list = meta::list<fusion::Attention, fusion::GqaMatmul, fusion::MaskedSoftmax, fusion::RmsNorm, fusion::SiluGate, fusion::Rotary,
                                  fusion::ConvMaxPool, fusion::ConvAddRelu, fusion::ConvBnRelu, fusion::AddRelu, fusion::MatmulTransB, fusion::EltwiseChain>;
  static constexpr DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  static constexpr std::string_view fallback_name = "reference";
  static auto evaluator() { return ReferenceTarget::evaluator(); }

  // Nodes whose operands the CPU kernels need as load-time constants (packed weights).
  static std::optional<std::string> refuse(const ir::Graph& g, const ir::Node& n) {
    auto is_weight = [&](std::size_t i) {
      auto k = g.tensor(n.inputs.at(i)).kind;
      return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
    };
    const auto op = ops::require_op(n);
    if ((op == ops::op_index_v<ops::Linear> || op == ops::op_index_v<ops::Conv2d>) && !is_weight(1))
      return "the CPU target packs " + n.op_type + " weights at load time; this one is computed at run time";
    if (op == ops::op_index_v<ops::Addmm>) {
      auto a = ops::read_attrs<ops::Addmm::Attrs>(n.attrs, n.op_type);
      if (!is_weight(2) || !is_weight(0) || a.alpha.value != 1 || a.beta.value != 1 || g.tensor(n.inputs[0]).shape.size() != 1)
        return "the CPU target runs addmm as bias + x @ W with load-time weights and alpha = beta = 1";
    }
    if (op == ops::op_index_v<ops::BatchNorm> || op == ops::op_index_v<ops::LayerNorm>)
      for (std::size_t i = 1; i < n.inputs.size(); ++i)
        if (!is_weight(i)) return "the CPU target needs " + n.op_type + " parameters as weights";
    return std::nullopt;
  }
};
static_assert(check_target<CpuTarget>(CpuTarget::op_list{}));
static_assert(check_target<CpuTarget>(CpuTarget::pattern_list{}));

namespace cpu {

// Runs one partition of a compiled program: arena, inputs and weights in their storage types;
// every kernel bound once; run() converts the inputs, calls the kernels, copies the outputs.
class PartitionExecutor final : public runtime::PartitionExecutor {
 public:
  explicit PartitionExecutor(const runtime::PartitionContext& ctx) : part_(ctx.partition) {
    const ir::Graph& g = part_.graph;
    const plan::BufferPlan& plan = part_.plan;
    weights::BindOptions b = ctx.bind;
    b.load_as.reset();
    b.storage = [this](ir::TensorId t) { return part_.plan.tensors.at(static_cast<std::size_t>(t)).storage; };
    weights_ = weights::bind_weights(g, ctx.weights, b).tensors;
    arena_ = AlignedBuf::make(static_cast<std::size_t>(plan.arena_bytes));
    addr_.assign(g.tensors.size(), nullptr);
    for (ir::TensorId t : g.inputs) {
      inputs_.push_back(Tensor::empty(storage(t), g.tensor(t).shape));
      addr_[static_cast<std::size_t>(t)] = static_cast<std::byte*>(inputs_.back().raw());
    }
    for (std::size_t t = 0; t < g.tensors.size(); ++t) {
      const auto& tp = plan.tensors[t];
      if (tp.place == plan::Place::arena) addr_[t] = arena_.as<std::byte>() + tp.offset;
      if (tp.place == plan::Place::weight)
        if (auto it = weights_.find(static_cast<ir::TensorId>(t)); it != weights_.end()) addr_[t] = static_cast<std::byte*>(it->second.raw());
    }
    for (std::size_t t = 0; t < g.tensors.size(); ++t)
      if (plan.tensors[t].place == plan::Place::view) addr_[t] = addr_[static_cast<std::size_t>(plan.tensors[t].root)];
    auto scratch = std::make_shared<ScratchPool>();
    std::vector<bool> address_taken(g.tensors.size(), false);
    const std::vector<bool> blocked = blocked_tensors(g, part_.kernels, plan);
    for (std::size_t ki = 0; ki < part_.kernels.size(); ++ki) {
      const Kernel& k = part_.kernels[ki];
      if (k.kind == "view") continue;
      Ctx c{g, k, plan,
            [this, &address_taken](ir::TensorId t) {
              address_taken.at(static_cast<std::size_t>(t)) = true;
              return addr_.at(static_cast<std::size_t>(t));
            },
            [this](ir::TensorId t) -> const Tensor* {
              auto it = weights_.find(t);
              return it == weights_.end() ? nullptr : &it->second;
            },
            keep_, scratch, blocked};
      try {
        Fns fns = bind_kernel(c);
        for (auto& f : fns) {
          fns_.push_back(std::move(f));
          labels_.push_back(k.kind + " " + g.nodes[static_cast<std::size_t>(k.nodes.back())].name);
          kinds_.push_back(k.kind);
          kernel_index_.push_back(static_cast<int>(ki));
          nodes_.push_back(g.nodes[static_cast<std::size_t>(k.nodes.back())].name);
        }
      } catch (Error& e) {
        throw e.with_node(g.nodes[static_cast<std::size_t>(k.nodes[0])].name).with_file(g.source);
      }
    }
    if (scratch->need) scratch->base = AlignedBuf::make(scratch->need).p;
    scratch_ = scratch;
    // Weights only kernels packed (linear, conv) are not kept twice.
    for (auto it = weights_.begin(); it != weights_.end();) {
      const bool keep = address_taken[static_cast<std::size_t>(it->first)] ||
                        std::find(g.outputs.begin(), g.outputs.end(), it->first) != g.outputs.end();
      it = keep ? std::next(it) : weights_.erase(it);
    }
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    const ir::Graph& g = part_.graph;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      Tensor& dst = inputs_[i];
      const Tensor& src = inputs[i];
      if (src.shape() != dst.shape())
        throw Error(ErrorCode::shape, "input has the wrong shape", {.file = g.source, .tensor = g.tensor(g.inputs[i]).name, .expected = to_string(dst.shape()),
                                                                    .found = to_string(src.shape())});
      if (src.dtype() == dst.dtype()) {
        if (src.raw() != dst.raw()) std::memcpy(dst.raw(), src.raw(), dst.nbytes());
      } else {
        convert_elements(src.dtype(), src.raw(), dst.dtype(), dst.raw(), dst.numel());
      }
    }
    // A kernel's runtime error (an index out of range, ...) names its node and the program's
    // file, as the reference target's do; the try costs nothing on the path that does not throw.
    std::size_t i = 0;
    try {
      if (!prof_) {
        for (; i < fns_.size(); ++i) fns_[i]();
      } else {
        for (; i < fns_.size(); ++i) {
          runtime::ProfileScope s(prof_, labels_[i], kinds_[i], "cpu", track_, kernel_index_[i]);
          fns_[i]();
        }
      }
    } catch (Error& e) {
      throw e.with_node(nodes_[i]).with_file(g.source);
    }
    std::vector<Tensor> out;
    out.reserve(g.outputs.size());
    for (ir::TensorId t : g.outputs) {
      const auto& tp = part_.plan.tensors[static_cast<std::size_t>(t)];
      if (tp.place == plan::Place::view && g.tensor(tp.root).kind == ir::TensorKind::input) {
        // Updated in place in an input buffer (a KV cache): returned without a copy, sharing that
        // buffer. Passing it back as the next run's input costs nothing; it stays valid until an
        // input with other contents is given for that slot.
        const Tensor& in = inputs_[input_slot(tp.root)];
        out.push_back(Tensor::wrap(in.dtype(), g.tensor(t).shape, in.raw() == nullptr ? nullptr : const_cast<void*>(in.raw()), in.owner()));
        continue;
      }
      Tensor o = Tensor::empty(storage(t), g.tensor(t).shape);
      std::memcpy(o.raw(), addr_.at(static_cast<std::size_t>(t)), o.nbytes());
      out.push_back(std::move(o));
    }
    return out;
  }

  void set_profiler(runtime::Profiler* p, int track) override { prof_ = p, track_ = track; }

 private:
  DType storage(ir::TensorId t) const { return part_.plan.tensors.at(static_cast<std::size_t>(t)).storage; }
  std::size_t input_slot(ir::TensorId t) const {
    const auto& in = part_.graph.inputs;
    return static_cast<std::size_t>(std::find(in.begin(), in.end(), t) - in.begin());
  }

  template <class List>
  struct PatternBinder;
  template <class... Ps>
  struct PatternBinder<meta::list<Ps...>> {
    static std::optional<Fns> bind(Ctx& c) {
      std::optional<Fns> r;
      (void)((c.k.kind == Ps::name ? (r = kernel<Ps, CpuTarget>::bind(c), true) : false) || ...);
      return r;
    }
  };

  static Fns bind_kernel(Ctx& c) {
    if (auto f = PatternBinder<CpuTarget::pattern_list>::bind(c)) return *f;
    if (c.k.nodes.size() != 1) c.unsupported("no CPU kernel for fused kind '" + c.k.kind + "'");
    return ops::dispatch_op<Fns>(ops::require_op(c.node()), [&]<class Op>() { return kernel<Op, CpuTarget>::bind(c); });
  }

  const program::Partition& part_;
  std::unordered_map<ir::TensorId, Tensor> weights_;
  AlignedBuf arena_;
  std::vector<Tensor> inputs_;
  std::vector<std::byte*> addr_;
  std::vector<Fn> fns_;
  std::vector<std::string> labels_, kinds_, nodes_;
  std::vector<int> kernel_index_;  // of each bound function: its kernel in the partition
  std::vector<std::shared_ptr<void>> keep_;
  std::shared_ptr<ScratchPool> scratch_;
  runtime::Profiler* prof_ = nullptr;
  int track_ = 0;
};

inline runtime::ExecutorFactory executor_factory() {
  return [](const runtime::PartitionContext& ctx) -> std::unique_ptr<runtime::PartitionExecutor> { return std::make_unique<PartitionExecutor>(ctx); };
}

inline runtime::ExecutorFactories factories() {
  runtime::ExecutorFactories f;
  f["cpu"] = executor_factory();
  f["reference"] = ref::executor_factory();
  return f;
}

}  // namespace cpu

template <>
struct runner_for<CpuTarget> {
  static std::unique_ptr<Runner> make(const program::CompiledProgram& p, const weights::WeightSource* w, weights::BindOptions bind = {}) {
    return std::make_unique<runtime::PlanRunner>(p, w, cpu::factories(), std::move(bind));
  }
};

}  // namespace npusim::inline NPUSIM_ABI
