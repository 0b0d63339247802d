// Definitions for npusim/npu/cost_model.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <array>
#include <cmath>
#include <set>

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/npu/cost_model.hpp"

namespace npusim::inline NPUSIM_ABI::npu {
namespace cost_detail {

NPUSIM_FUNC std::string dtype_list(const std::vector<DType>& v) {
  std::string s;
  for (DType t : v) s += (s.empty() ? "" : ", ") + std::string(dtype_short_name(t));
  return s;
}

NPUSIM_FUNC std::string unsupported(const Workload& w, const Description& d, DType dt) {
  if (!d.supports(dt)) return "dtype " + std::string(dtype_short_name(dt)) + " not supported (the NPU runs " + dtype_list(d.dtypes) + ")";
  if ((w.model == Model::gemm || w.model == Model::conv || w.model == Model::attention) && !d.mac_array(dt))
    return "the MAC array does not compute in " + std::string(dtype_short_name(dt));
  for (auto c : w.classes)
    if (!d.supports(c)) return "op class '" + std::string(op_class_id(c)) + "' not supported";
  return {};
}

NPUSIM_FUNC double host_ns(const Workload& w, const Description& d) {
  const double flops = 2.0 * static_cast<double>(w.macs) + w.vector.total(d.transcendental_ops);
  const double bytes = static_cast<double>(w.input_bytes() + w.output_bytes());
  return std::max(flops / d.host.gflops, bytes / d.host.memory_gb_per_s);
}

// estimate's state and its steps, in the order it runs them: every kernel with its workload and
// its tensors' roots, where each kernel runs, the weight cache, the activation region, the
// tensors that may stay on chip between neighbouring NPU kernels and which of them do (dynamic
// programming over the chain), then the timeline with its totals.
class Estimator {
 public:
  Estimator(const program::CompiledProgram& p, const Description& d, DType dt) : p_(p), d_(d), dt_(dt) {
    e_.npu = d.name, e_.dtype = dt, e_.clock_mhz = d.clock_mhz, e_.peak_macs_per_s = d.peak_macs_per_s(dt), e_.dma_gb_per_s = d.dma_gb_per_s;
  }

  Estimate run() {
    list_kernels();
    index_producers_and_consumers();
    place_kernels();
    fill_weight_cache();
    find_activation_region();
    find_forwardable_tensors();
    choose_forwarding();
    lay_out_timeline();
    check_finite();
    return std::move(e_);
  }

 private:
  // A plan of one NPU kernel with its input edge forwarded or not and its output edge likewise.
  struct Option {
    TilePlan plan;
    Timing t;
    std::int64_t on_chip = 0;
  };

  std::string root(const std::string& n) const {
    auto it = alias_.find(n);
    return it == alias_.end() ? n : it->second;
  }

  // Every kernel in execution order; views alias their input's root.
  void list_kernels() {
    for (std::size_t pi = 0; pi < p_.partitions.size(); ++pi) {
      const program::Partition& part = p_.partitions[pi];
      for (std::size_t ki = 0; ki < part.kernels.size(); ++ki) {
        const Kernel& k = part.kernels[ki];
        Entry en;
        en.part = static_cast<std::int32_t>(pi), en.kernel = static_cast<std::int32_t>(ki), en.graph = &part.graph, en.k = &k;
        try {
          en.w = analyze_kernel(part.graph, k, dt_);
        } catch (Error& err) {
          throw err.with_node(part.graph.nodes.at(static_cast<std::size_t>(k.nodes.at(0))).name).with_file(p_.source);
        }
        for (auto t : k.inputs) en.in_roots.push_back(root(part.graph.tensor(t).name));
        if (en.w.model == Model::view) {
          en.placement = Placement::free;
          for (auto t : k.outputs) alias_[part.graph.tensor(t).name] = en.in_roots.empty() ? part.graph.tensor(t).name : en.in_roots[0];
        }
        for (auto t : k.outputs) {
          en.out_roots.push_back(root(part.graph.tensor(t).name));
          const plan::TensorPlan& tp = part.plan.tensors.at(static_cast<std::size_t>(t));
          if (en.w.model != Model::view && tp.place == plan::Place::arena && tp.bytes > 0) {
            const std::int64_t scale_num = is_floating(tp.storage) ? static_cast<std::int64_t>(dtype_size(dt_)) : 1;
            const std::int64_t scale_den = is_floating(tp.storage) ? static_cast<std::int64_t>(dtype_size(tp.storage)) : 1;
            arena_end_[en.out_roots.back()] = (tp.offset + tp.bytes) * scale_num / scale_den;
          }
        }
        es_.push_back(std::move(en));
      }
    }
  }

  // The program's outputs, and each tensor's producer and readers among the kernels that are not views.
  void index_producers_and_consumers() {
    for (const auto& o : p_.outputs) program_outputs_.insert(root(o.name));
    for (std::size_t i = 0; i < es_.size(); ++i) {
      if (es_[i].placement == Placement::free) continue;
      for (const auto& r : es_[i].in_roots) consumers_[r].push_back(i);
      for (const auto& r : es_[i].out_roots) producer_.emplace(r, i);
    }
  }

  // Placement, then the weight cache in execution order (fill_weight_cache).
  // Feasibility with the whole weight cache in use (the least working memory a kernel can get).
  void place_kernels() {
    const Budget least{d_.working_bytes(), d_.bank_bytes()};
    for (auto& en : es_) {
      if (en.placement == Placement::free) continue;
      en.reason = unsupported(en.w, d_, dt_);
      if (en.reason.empty() && !plan_kernel(en.w, d_, dt_, least).feasible)
        en.reason = "no tiling fits the SRAM (" + std::to_string(least.bytes) + " bytes of working memory)";
      if (!en.reason.empty()) en.placement = Placement::host;
    }
  }

  // The weight cache in execution order: each NPU kernel's weights while they fit.
  void fill_weight_cache() {
    for (auto& en : es_) {
      if (en.placement != Placement::npu) continue;
      for (std::size_t i = 0; i < en.w.inputs.size(); ++i) {
        const Operand& o = en.w.inputs[i];
        if (o.weight && o.bytes > 0 && !cached_.count(en.in_roots[i]) && e_.weight_cache_used + o.bytes <= d_.weight_cache_bytes)
          cached_.insert(en.in_roots[i]), e_.weight_cache_used += o.bytes;
      }
    }
  }

  // Tensors in the activation region: produced and read only by NPU kernels of one partition.
  void find_activation_region() {
    for (const auto& [r, end] : arena_end_) {
      if (end > d_.activation_bytes || program_outputs_.count(r)) continue;
      const Entry& pr = es_[producer_.at(r)];
      auto c = consumers_.find(r);
      if (pr.placement != Placement::npu || c == consumers_.end()) continue;
      if (std::all_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return es_[u].placement == Placement::npu && es_[u].part == pr.part; }))
        in_region_.insert(r), e_.activation_used = std::max(e_.activation_used, end);
    }
  }

  // The NPU kernel chain and the tensors that may stay on chip between neighbours.
  void find_forwardable_tensors() {
    for (std::size_t i = 0; i < es_.size(); ++i)
      if (es_[i].placement == Placement::npu) npu_.push_back(i);
    fwd_bytes_.assign(npu_.size(), 0);
    fwd_.resize(npu_.size());
    for (std::size_t j = 0; j + 1 < npu_.size(); ++j) {
      bool adjacent = true;  // no host kernel between them
      for (std::size_t x = npu_[j] + 1; x < npu_[j + 1]; ++x) adjacent = adjacent && es_[x].placement == Placement::free;
      if (!adjacent) continue;
      const Entry& a = es_[npu_[j]];
      for (std::size_t o = 0; o < a.out_roots.size(); ++o) {
        const std::string& r = a.out_roots[o];
        auto c = consumers_.find(r);
        if (program_outputs_.count(r) || in_region_.count(r) || c == consumers_.end() || c->second.empty() || a.w.outputs[o].bytes == 0) continue;
        if (std::all_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return u == npu_[j + 1]; }))
          fwd_[j].insert(r), fwd_bytes_[j] += a.w.outputs[o].bytes;
      }
    }
  }

  // NPU kernel j planned with its input edge (from j - 1) forwarded or not, and its output edge likewise.
  Option plan_with_forwarding(std::size_t j, int in, int out) const {
    const Entry& en = es_[npu_[j]];
    Option op;
    const std::int64_t in_b = in ? fwd_bytes_[j - 1] : 0, out_b = out ? fwd_bytes_[j] : 0;
    op.on_chip = in_b + out_b;
    const std::int64_t work = d_.sram_bytes - d_.activation_bytes - e_.weight_cache_used - op.on_chip;
    if (work <= 0) return op;
    Residency res;
    for (const auto& r : en.in_roots) res.inputs.push_back(cached_.count(r) || in_region_.count(r) || (in && fwd_[j - 1].count(r)));
    for (const auto& r : en.out_roots) res.outputs.push_back(in_region_.count(r) || (out && fwd_[j].count(r)));
    op.plan = plan_kernel(en.w, d_, dt_, Budget{work, d_.bank_bytes()}, res);
    if (op.plan.feasible) op.t = time_plan(op.plan, d_);
    return op;
  }

  // Which edges forward their tensors: the least total time over the chain (dynamic programming,
  // best[j][out]: the least time of kernels 0..j with j's output edge forwarded or not), then
  // each kernel's input and output state, traced back from the best end.
  void choose_forwarding() {
    const double inf = std::numeric_limits<double>::infinity();
    opts_.resize(npu_.size());
    std::vector<std::array<double, 2>> best(npu_.size(), {inf, inf});
    std::vector<std::array<int, 2>> from(npu_.size(), {0, 0});
    for (std::size_t j = 0; j < npu_.size(); ++j)
      for (int out = 0; out < 2; ++out) {
        if (out && (j + 1 >= npu_.size() || fwd_[j].empty())) continue;
        for (int in = 0; in < 2; ++in) {
          if (in && (j == 0 || fwd_[j - 1].empty())) continue;
          const double before = j == 0 ? 0.0 : best[j - 1][in];
          if (before == inf) continue;
          opts_[j][in][out] = plan_with_forwarding(j, in, out);
          if (!opts_[j][in][out].plan.feasible) continue;
          const double total = before + opts_[j][in][out].t.time_ns;
          if (total < best[j][out]) best[j][out] = total, from[j][out] = in;
        }
      }
    out_state_.assign(npu_.size(), 0), in_state_.assign(npu_.size(), 0);
    if (!npu_.empty()) {
      int s = best.back()[1] < best.back()[0] ? 1 : 0;
      for (std::size_t j = npu_.size(); j-- > 0;) {
        out_state_[j] = s;
        in_state_[j] = from[j][s];
        s = in_state_[j];
      }
    }
  }

  // The timeline.
  void lay_out_timeline() {
    std::vector<std::size_t> npu_pos(es_.size(), SIZE_MAX);
    for (std::size_t j = 0; j < npu_.size(); ++j) npu_pos[npu_[j]] = j;
    double clock = 0;
    for (std::size_t i = 0; i < es_.size(); ++i) {
      const Entry& en = es_[i];
      KernelEstimate k;
      k.partition = en.part, k.kernel = en.kernel, k.kind = en.k->kind, k.model = en.w.model, k.placement = en.placement;
      k.name = en.graph->nodes.at(static_cast<std::size_t>(en.k->nodes.back())).name;
      k.macs = en.w.macs, k.vector_ops = en.w.vector.total(d_.transcendental_ops), k.start_ns = clock;
      e_.macs += k.macs;
      if (en.placement == Placement::npu) {
        cost_on_npu(k, en, npu_pos[i]);
      } else if (en.placement == Placement::host) {
        cost_on_host(k, en);
      } else {
        k.tiling = "zero-copy";
      }
      e_.bound_ns[static_cast<int>(k.bound)] += k.time_ns;
      clock += k.time_ns;
      e_.kernels.push_back(std::move(k));
    }
    e_.latency_ns = clock;
    e_.sram_peak_bytes = std::max(e_.sram_peak_bytes, e_.weight_cache_used + e_.activation_used);
    e_.mac_utilisation = e_.peak_macs_per_s > 0 && e_.latency_ns > 0 ? static_cast<double>(e_.npu_macs) / (e_.peak_macs_per_s * e_.latency_ns * 1e-9) : 0.0;
  }

  // An NPU kernel (j-th of the chain) with the plan chosen for its forwarding state.
  void cost_on_npu(KernelEstimate& k, const Entry& en, std::size_t j) {
    const Option& op = opts_[j][in_state_[j]][out_state_[j]];
    k.tiling = op.plan.tiling, k.dma = op.plan.dma, k.transfers = op.plan.load_transfers + op.plan.store_transfers, k.tiles = op.plan.tiles;
    k.double_buffered = op.plan.shape.double_buffered;
    k.mac_cycles = op.plan.mac_cycles, k.vector_cycles = op.plan.vector_cycles;
    k.load_ns = op.t.load_ns, k.store_ns = op.t.store_ns, k.compute_ns = op.t.compute_ns, k.time_ns = op.t.time_ns;
    k.sram_bytes = e_.weight_cache_used + e_.activation_used + op.on_chip + op.plan.sram_bytes;
    k.input_on_chip = in_state_[j] || std::any_of(en.in_roots.begin(), en.in_roots.end(), [&](const std::string& r) { return in_region_.count(r) > 0; });
    k.output_on_chip = out_state_[j] || std::any_of(en.out_roots.begin(), en.out_roots.end(), [&](const std::string& r) { return in_region_.count(r) > 0; });
    for (std::size_t x = 0; x < en.in_roots.size(); ++x)
      if (cached_.count(en.in_roots[x])) k.cached_weight_bytes += en.w.inputs[x].bytes;
    const double compulsory_ns = static_cast<double>(op.plan.compulsory.total()) / d_.dma_gb_per_s;
    k.bound = k.compute_ns >= k.dma_ns() ? Bound::compute : compulsory_ns <= k.compute_ns ? Bound::sram : Bound::dma;
    const double peak = static_cast<double>(d_.mac_array(dt_) ? d_.mac_array(dt_)->macs_per_cycle() : 0) * d_.clock_mhz * 1e-3;
    k.utilisation = peak > 0 && k.time_ns > 0 ? static_cast<double>(k.macs) / (peak * k.time_ns) : 0.0;
    e_.dram += k.dma, e_.npu_macs += k.macs, e_.npu_ns += k.time_ns, ++e_.npu_kernels;
    e_.sram_peak_bytes = std::max(e_.sram_peak_bytes, k.sram_bytes);
  }

  // A host kernel at the host's throughput, with its crossings between host and NPU.
  void cost_on_host(KernelEstimate& k, const Entry& en) {
    k.host_reason = en.reason, k.bound = Bound::host, k.tiling = "host";
    k.compute_ns = host_ns(en.w, d_);
    k.dma.activations_in = en.w.input_bytes(), k.dma.activations_out = en.w.output_bytes();
    // Crossings: inputs an NPU kernel produced, outputs an NPU kernel reads.
    auto cross = [&](std::int64_t bytes) {
      k.transfer_bytes += bytes;
      k.transfer_ns += d_.host.transfer_latency_us * 1e3 + static_cast<double>(bytes) / d_.host.transfer_gb_per_s;
    };
    for (std::size_t x = 0; x < en.in_roots.size(); ++x)
      if (auto pr = producer_.find(en.in_roots[x]); pr != producer_.end() && es_[pr->second].placement == Placement::npu) cross(en.w.inputs[x].bytes);
    for (std::size_t x = 0; x < en.out_roots.size(); ++x)
      if (auto c = consumers_.find(en.out_roots[x]); c != consumers_.end() &&
          std::any_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return es_[u].placement == Placement::npu; }))
        cross(en.w.outputs[x].bytes);
    k.time_ns = k.compute_ns + k.transfer_ns;
    e_.host_bytes += k.dma.total(), e_.transfer_bytes += k.transfer_bytes, e_.host_ns += k.compute_ns, e_.transfer_ns += k.transfer_ns, ++e_.host_kernels;
  }

  // The description's ranges keep every figure finite; a total that is not is refused here, once,
  // naming the kernel where it first went wrong, rather than printed as "inf ms".
  void check_finite() const {
    if (!std::isfinite(e_.latency_ns) || !std::isfinite(e_.mac_utilisation))
      for (const KernelEstimate& k : e_.kernels)
        if (!std::isfinite(k.time_ns) || !std::isfinite(k.end_ns()) || &k == &e_.kernels.back())
          throw Error(ErrorCode::runtime, "NPU estimate is not a finite number (a figure of the NPU description, or a kernel's size, out of range)",
                      {.file = d_.name, .node = k.name, .expected = "a finite latency", .found = std::to_string(k.time_ns) + " ns for kernel " + k.kind});
  }

  const program::CompiledProgram& p_;
  const Description& d_;
  const DType dt_;
  Estimate e_;
  std::vector<Entry> es_;                                       // every kernel, in execution order
  std::map<std::string, std::string> alias_;                    // a view's output -> the root it aliases
  std::map<std::string, std::int64_t> arena_end_;               // end of the tensor's arena slice, at the estimate's element size
  std::set<std::string> program_outputs_;
  std::map<std::string, std::vector<std::size_t>> consumers_;   // root -> the kernels (indices into es_) that read it
  std::map<std::string, std::size_t> producer_;
  std::set<std::string> cached_;                                // weights in the weight cache
  std::set<std::string> in_region_;                             // tensors in the activation region
  std::vector<std::size_t> npu_;                                // the NPU kernel chain (indices into es_)
  std::vector<std::int64_t> fwd_bytes_;                         // edge npu_[j] -> npu_[j + 1]
  std::vector<std::set<std::string>> fwd_;                      // the tensors that may stay on chip along that edge
  std::vector<std::array<std::array<Option, 2>, 2>> opts_;      // opts_[j][in][out]
  std::vector<int> in_state_, out_state_;                       // the chosen forwarding of each NPU kernel's edges
};

}  // namespace cost_detail

NPUSIM_FUNC Estimate estimate(const program::CompiledProgram& p, const Description& d, const EstimateOptions& opt) {
  const DType dt = opt.dtype.value_or(p.compute);
  if (!is_npu_dtype(dt))
    throw Error(ErrorCode::dtype, "an NPU estimate computes in f32, f16, bf16, i16 or i8", {.found = std::string(dtype_short_name(dt))});
  return cost_detail::Estimator(p, d, dt).run();
}

}  // namespace npusim::inline NPUSIM_ABI::npu
