// Definitions for npusim/target/cpu/executor.hpp (NPUSIM_FUNC: npusim/config.hpp): cpu::Executor
// over every kernel of the target, and the proof that every op and pattern the target lists has one.
#pragma once

#include <chrono>

#include "npusim/config.hpp"
#include "npusim/target/cpu/executor.hpp"
#include "npusim/target/cpu/kernels/attention.hpp"
#include "npusim/target/cpu/kernels/conv.hpp"
#include "npusim/target/cpu/kernels/linalg.hpp"
#include "npusim/target/cpu/kernels/misc.hpp"
#include "npusim/target/cpu/kernels/moe.hpp"
#include "npusim/target/cpu/kernels/movement.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/cpu/kernels/pointwise.hpp"
#include "npusim/target/cpu/kernels/qlinear.hpp"
#include "npusim/target/cpu/kernels/quantized.hpp"
#include "npusim/target/cpu/layout.hpp"

namespace npusim::inline NPUSIM_ABI {

static_assert(check_target<CpuTarget>(CpuTarget::op_list{}));
static_assert(check_target<CpuTarget>(CpuTarget::pattern_list{}));

namespace cpu {

// Every candidate list of the target, for NPUSIM_CPU_SKIP's check.
using candidate_lists = meta::list<conv_candidates, gemm_candidates, qlinear_candidates, qconv_candidates>;

class Executor final : public PartitionExecutor {
 public:
  explicit Executor(const PartitionContext& ctx) : part_(ctx.partition) {
    check_skipped(candidate_lists{});  // NPUSIM_CPU_SKIP checked before anything is bound
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
    const std::vector<bool> channels_last = int8_channels_last(g, part_.kernels, plan);
    for (std::size_t ki = 0; ki < part_.kernels.size(); ++ki) {
      const Kernel& k = part_.kernels[ki];
      if (k.kind == "view") continue;
      Ctx c{g, k, plan,
            [this, &address_taken, &plan](ir::TensorId t) {
              // A view's address is its root's: the root's buffer must outlive the kernel (a
              // weight whose address only a view took was released below, and read after free).
              const auto& tp = plan.tensors.at(static_cast<std::size_t>(t));
              address_taken.at(static_cast<std::size_t>(tp.place == plan::Place::view ? tp.root : t)) = true;
              address_taken.at(static_cast<std::size_t>(t)) = true;
              return addr_.at(static_cast<std::size_t>(t));
            },
            [this](ir::TensorId t) -> const Tensor* {
              auto it = weights_.find(t);
              return it == weights_.end() ? nullptr : &it->second;
            },
            keep_, scratch, blocked, channels_last};
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
          ProfileScope s(prof_, labels_[i], kinds_[i], "cpu", track_, kernel_index_[i]);
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
      const std::byte* src = addr_.at(static_cast<std::size_t>(t));
      if (src == nullptr && o.nbytes() != 0)  // program/validate.hpp refuses such plans: a bug if reached
        throw Error(ErrorCode::runtime, "partition output has no storage on the CPU target (npusim bug)", {.file = g.source, .tensor = g.tensor(t).name});
      if (o.nbytes() != 0) std::memcpy(o.raw(), src, o.nbytes());
      out.push_back(std::move(o));
    }
    return out;
  }

  void set_profiler(Profiler* p, int track) override { prof_ = p, track_ = track; }

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
    return ops::dispatch_op<Fns>(ops::require_op(c.node()), [&]<class Op>() -> Fns {
      if constexpr (kernel<Op, CpuTarget>::provided) return kernel<Op, CpuTarget>::bind(c);
      else c.unsupported("no CPU kernel for " + std::string(Op::id));
    });
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
  Profiler* prof_ = nullptr;
  int track_ = 0;
};

// The candidate every convolution and linear kernel of a partition runs, and why the better ones
// declined (what Executor binds: the same shapes, storage types and blocked layout).
inline std::vector<KernelImplementation> implementations(const program::Partition& part) {
  check_skipped(candidate_lists{});
  const ir::Graph& g = part.graph;
  const std::vector<bool> blocked = blocked_tensors(g, part.kernels, part.plan);
  auto storage = [&](ir::TensorId t) { return part.plan.tensors.at(static_cast<std::size_t>(t)).storage; };
  auto is_blocked = [&](ir::TensorId t) { return blocked.at(static_cast<std::size_t>(t)); };
  std::vector<KernelImplementation> out;
  auto record = [&](std::size_t k, const Choice& ch, std::string note = {}) {
    KernelImplementation r{k, std::string(ch.chosen), std::move(note), {}};
    for (const auto& [name, why] : ch.declined) r.declined.emplace_back(std::string(name), why);
    out.push_back(std::move(r));
  };
  for (std::size_t k = 0; k < part.kernels.size(); ++k) {
    const Kernel& kr = part.kernels[k];
    if (kr.kind == "view" || kr.nodes.empty()) continue;
    const ir::Node& n0 = g.nodes.at(static_cast<std::size_t>(kr.nodes[0]));
    const std::string_view op = ops::op_info(ops::require_op(n0)).id;
    if (op == "conv2d") {
      const auto a = ops::read_attrs<ops::Conv2d::Attrs>(n0.attrs, n0.op_type);
      const ir::TensorId x = n0.inputs.at(0), w = n0.inputs.at(1);
      const bool pool = kr.kind == fusion::ConvMaxPool::name;
      const ir::TensorId mid = pool ? g.nodes.at(static_cast<std::size_t>(kr.nodes.back())).inputs.at(0) : kr.outputs.at(0);
      const Shape &xs = g.tensor(x).shape, &ws = g.tensor(w).shape, &ms = g.tensor(mid).shape;
      if (xs.size() != 4 || ws.size() != 4 || ms.size() != 4) continue;
      const ConvGeom geom{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], ms[2], ms[3], a.groups,
                          a.stride[0], a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1]};
      Choice ch;
      if (pool && conv_max_pool_fused(a.groups, storage(x), storage(mid), storage(kr.outputs.at(0)))) {
        static_assert(meta::index_of_v<ConvBlockedF32, conv_candidates> == 0, "conv_max_pool fused: the blocked candidate is the first, none declined");
        ch.chosen = ConvBlockedF32::name;
        record(k, ch, "convolution and max pool in one pass, the convolution's output never stored");
        continue;
      }
      choose_conv(ConvProblem{geom, storage(x), storage(mid), is_blocked(x), !pool && is_blocked(mid)}, &ch);
      record(k, ch, pool ? "then the max pool, through a buffer of the convolution's output" : "");
    } else if (op == "linear" || op == "addmm") {
      const ir::TensorId x = n0.inputs.at(op == "linear" ? 0 : 1), w = n0.inputs.at(op == "linear" ? 1 : 2);
      const Shape& ws = g.tensor(w).shape;
      if (ws.size() != 2) continue;
      const std::int64_t K = op == "linear" ? ws[1] : ws[0], M = K ? numel(g.tensor(x).shape) / K : 0;
      Choice ch;
      if (const auto f = ops::weight_block_format(n0); f && op == "linear") {  // bind_linear's q8_0/q4_0 blocks
        choose<qlinear_candidates>(QLinearProblem{M, *f}, &ch);
      } else {
        const GemmProblem p{M, storage(x), storage(w), storage(w) == DType::bf16, false};
        choose<gemm_candidates>(p, &ch);
      }
      record(k, ch);
    }
  }
  return out;
}

}  // namespace cpu

NPUSIM_FUNC std::vector<KernelImplementation> implementations_for<CpuTarget>::of(const program::Partition& p) { return cpu::implementations(p); }

NPUSIM_FUNC ExecutorFactory executor_for<CpuTarget>::factory(const ExecutorOptions&) {
  return [](const PartitionContext& ctx) -> std::unique_ptr<PartitionExecutor> { return std::make_unique<cpu::Executor>(ctx); };
}

}  // namespace npusim::inline NPUSIM_ABI
