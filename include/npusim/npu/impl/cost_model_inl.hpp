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

}  // namespace cost_detail
}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC Estimate estimate(const program::CompiledProgram& p, const Description& d, const EstimateOptions& opt) {
  using namespace cost_detail;
  const DType dt = opt.dtype.value_or(p.compute);
  if (!is_npu_dtype(dt))
    throw Error(ErrorCode::dtype, "an NPU estimate computes in f32, f16, bf16, i16 or i8", {.found = std::string(dtype_short_name(dt))});
  Estimate e;
  e.npu = d.name, e.dtype = dt, e.clock_mhz = d.clock_mhz, e.peak_macs_per_s = d.peak_macs_per_s(dt), e.dma_gb_per_s = d.dma_gb_per_s;

  // Every kernel in execution order; views alias their input's root.
  std::vector<Entry> es;
  std::map<std::string, std::string> alias;
  std::map<std::string, std::int64_t> arena_end;  // end of the tensor's arena slice, at the estimate's element size
  auto root = [&](const std::string& n) {
    auto it = alias.find(n);
    return it == alias.end() ? n : it->second;
  };
  for (std::size_t pi = 0; pi < p.partitions.size(); ++pi) {
    const program::Partition& part = p.partitions[pi];
    for (std::size_t ki = 0; ki < part.kernels.size(); ++ki) {
      const Kernel& k = part.kernels[ki];
      Entry en;
      en.part = static_cast<std::int32_t>(pi), en.kernel = static_cast<std::int32_t>(ki), en.graph = &part.graph, en.k = &k;
      try {
        en.w = analyze_kernel(part.graph, k, dt);
      } catch (Error& err) {
        throw err.with_node(part.graph.nodes.at(static_cast<std::size_t>(k.nodes.at(0))).name).with_file(p.source);
      }
      for (auto t : k.inputs) en.in_roots.push_back(root(part.graph.tensor(t).name));
      if (en.w.model == Model::view) {
        en.placement = Placement::free;
        for (auto t : k.outputs) alias[part.graph.tensor(t).name] = en.in_roots.empty() ? part.graph.tensor(t).name : en.in_roots[0];
      }
      for (auto t : k.outputs) {
        en.out_roots.push_back(root(part.graph.tensor(t).name));
        const plan::TensorPlan& tp = part.plan.tensors.at(static_cast<std::size_t>(t));
        if (en.w.model != Model::view && tp.place == plan::Place::arena && tp.bytes > 0) {
          const std::int64_t scale_num = is_floating(tp.storage) ? static_cast<std::int64_t>(dtype_size(dt)) : 1;
          const std::int64_t scale_den = is_floating(tp.storage) ? static_cast<std::int64_t>(dtype_size(tp.storage)) : 1;
          arena_end[en.out_roots.back()] = (tp.offset + tp.bytes) * scale_num / scale_den;
        }
      }
      es.push_back(std::move(en));
    }
  }
  std::set<std::string> program_outputs;
  for (const auto& o : p.outputs) program_outputs.insert(root(o.name));
  std::map<std::string, std::vector<std::size_t>> consumers;
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < es.size(); ++i) {
    if (es[i].placement == Placement::free) continue;
    for (const auto& r : es[i].in_roots) consumers[r].push_back(i);
    for (const auto& r : es[i].out_roots) producer.emplace(r, i);
  }

  // Placement, then the weight cache in execution order.
  // Feasibility with the whole weight cache in use (the least working memory a kernel can get).
  const Budget least{d.working_bytes(), d.bank_bytes()};
  for (auto& en : es) {
    if (en.placement == Placement::free) continue;
    en.reason = unsupported(en.w, d, dt);
    if (en.reason.empty() && !plan_kernel(en.w, d, dt, least).feasible)
      en.reason = "no tiling fits the SRAM (" + std::to_string(least.bytes) + " bytes of working memory)";
    if (!en.reason.empty()) en.placement = Placement::host;
  }
  std::set<std::string> cached;
  for (auto& en : es) {
    if (en.placement != Placement::npu) continue;
    for (std::size_t i = 0; i < en.w.inputs.size(); ++i) {
      const Operand& o = en.w.inputs[i];
      if (o.weight && o.bytes > 0 && !cached.count(en.in_roots[i]) && e.weight_cache_used + o.bytes <= d.weight_cache_bytes)
        cached.insert(en.in_roots[i]), e.weight_cache_used += o.bytes;
    }
  }

  // Tensors in the activation region: produced and read only by NPU kernels of one partition.
  std::set<std::string> in_region;
  for (const auto& [r, end] : arena_end) {
    if (end > d.activation_bytes || program_outputs.count(r)) continue;
    const Entry& pr = es[producer.at(r)];
    auto c = consumers.find(r);
    if (pr.placement != Placement::npu || c == consumers.end()) continue;
    if (std::all_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return es[u].placement == Placement::npu && es[u].part == pr.part; }))
      in_region.insert(r), e.activation_used = std::max(e.activation_used, end);
  }

  // The NPU kernel chain and the tensors that may stay on chip between neighbours.
  std::vector<std::size_t> npu;
  for (std::size_t i = 0; i < es.size(); ++i)
    if (es[i].placement == Placement::npu) npu.push_back(i);
  std::vector<std::int64_t> fwd_bytes(npu.size(), 0);  // edge npu[j] -> npu[j + 1]
  std::vector<std::set<std::string>> fwd(npu.size());
  for (std::size_t j = 0; j + 1 < npu.size(); ++j) {
    bool adjacent = true;  // no host kernel between them
    for (std::size_t x = npu[j] + 1; x < npu[j + 1]; ++x) adjacent = adjacent && es[x].placement == Placement::free;
    if (!adjacent) continue;
    const Entry& a = es[npu[j]];
    for (std::size_t o = 0; o < a.out_roots.size(); ++o) {
      const std::string& r = a.out_roots[o];
      auto c = consumers.find(r);
      if (program_outputs.count(r) || in_region.count(r) || c == consumers.end() || c->second.empty() || a.w.outputs[o].bytes == 0) continue;
      if (std::all_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return u == npu[j + 1]; }))
        fwd[j].insert(r), fwd_bytes[j] += a.w.outputs[o].bytes;
    }
  }

  // Plans of each NPU kernel with its input edge forwarded or not and its output edge likewise.
  const double inf = std::numeric_limits<double>::infinity();
  struct Option {
    TilePlan plan;
    Timing t;
    std::int64_t on_chip = 0;
  };
  std::vector<std::array<std::array<Option, 2>, 2>> opts(npu.size());
  auto evaluate = [&](std::size_t j, int in, int out) {
    const Entry& en = es[npu[j]];
    Option op;
    const std::int64_t in_b = in ? fwd_bytes[j - 1] : 0, out_b = out ? fwd_bytes[j] : 0;
    op.on_chip = in_b + out_b;
    const std::int64_t work = d.sram_bytes - d.activation_bytes - e.weight_cache_used - op.on_chip;
    if (work <= 0) return op;
    Residency res;
    for (const auto& r : en.in_roots) res.inputs.push_back(cached.count(r) || in_region.count(r) || (in && fwd[j - 1].count(r)));
    for (const auto& r : en.out_roots) res.outputs.push_back(in_region.count(r) || (out && fwd[j].count(r)));
    op.plan = plan_kernel(en.w, d, dt, Budget{work, d.bank_bytes()}, res);
    if (op.plan.feasible) op.t = time_plan(op.plan, d);
    return op;
  };
  std::vector<std::array<double, 2>> best(npu.size(), {inf, inf});
  std::vector<std::array<int, 2>> from(npu.size(), {0, 0});
  for (std::size_t j = 0; j < npu.size(); ++j)
    for (int out = 0; out < 2; ++out) {
      if (out && (j + 1 >= npu.size() || fwd[j].empty())) continue;
      for (int in = 0; in < 2; ++in) {
        if (in && (j == 0 || fwd[j - 1].empty())) continue;
        const double before = j == 0 ? 0.0 : best[j - 1][in];
        if (before == inf) continue;
        opts[j][in][out] = evaluate(j, in, out);
        if (!opts[j][in][out].plan.feasible) continue;
        const double total = before + opts[j][in][out].t.time_ns;
        if (total < best[j][out]) best[j][out] = total, from[j][out] = in;
      }
    }
  std::vector<int> out_state(npu.size(), 0), in_state(npu.size(), 0);
  if (!npu.empty()) {
    int s = best.back()[1] < best.back()[0] ? 1 : 0;
    for (std::size_t j = npu.size(); j-- > 0;) {
      out_state[j] = s;
      in_state[j] = from[j][s];
      s = in_state[j];
    }
  }

  // The timeline.
  std::vector<std::size_t> npu_pos(es.size(), SIZE_MAX);
  for (std::size_t j = 0; j < npu.size(); ++j) npu_pos[npu[j]] = j;
  double clock = 0;
  for (std::size_t i = 0; i < es.size(); ++i) {
    const Entry& en = es[i];
    KernelEstimate k;
    k.partition = en.part, k.kernel = en.kernel, k.kind = en.k->kind, k.model = en.w.model, k.placement = en.placement;
    k.name = en.graph->nodes.at(static_cast<std::size_t>(en.k->nodes.back())).name;
    k.macs = en.w.macs, k.vector_ops = en.w.vector.total(d.transcendental_ops), k.start_ns = clock;
    e.macs += k.macs;
    if (en.placement == Placement::npu) {
      const std::size_t j = npu_pos[i];
      const Option& op = opts[j][in_state[j]][out_state[j]];
      k.tiling = op.plan.tiling, k.dma = op.plan.dma, k.transfers = op.plan.load_transfers + op.plan.store_transfers, k.tiles = op.plan.tiles;
      k.double_buffered = op.plan.shape.double_buffered;
      k.mac_cycles = op.plan.mac_cycles, k.vector_cycles = op.plan.vector_cycles;
      k.load_ns = op.t.load_ns, k.store_ns = op.t.store_ns, k.compute_ns = op.t.compute_ns, k.time_ns = op.t.time_ns;
      k.sram_bytes = e.weight_cache_used + e.activation_used + op.on_chip + op.plan.sram_bytes;
      k.input_on_chip = in_state[j] || std::any_of(en.in_roots.begin(), en.in_roots.end(), [&](const std::string& r) { return in_region.count(r) > 0; });
      k.output_on_chip = out_state[j] || std::any_of(en.out_roots.begin(), en.out_roots.end(), [&](const std::string& r) { return in_region.count(r) > 0; });
      for (std::size_t x = 0; x < en.in_roots.size(); ++x)
        if (cached.count(en.in_roots[x])) k.cached_weight_bytes += en.w.inputs[x].bytes;
      const double compulsory_ns = static_cast<double>(op.plan.compulsory.total()) / d.dma_gb_per_s;
      k.bound = k.compute_ns >= k.dma_ns() ? Bound::compute : compulsory_ns <= k.compute_ns ? Bound::sram : Bound::dma;
      const double peak = static_cast<double>(d.mac_array(dt) ? d.mac_array(dt)->macs_per_cycle() : 0) * d.clock_mhz * 1e-3;
      k.utilisation = peak > 0 && k.time_ns > 0 ? static_cast<double>(k.macs) / (peak * k.time_ns) : 0.0;
      e.dram += k.dma, e.npu_macs += k.macs, e.npu_ns += k.time_ns, ++e.npu_kernels;
      e.sram_peak_bytes = std::max(e.sram_peak_bytes, k.sram_bytes);
    } else if (en.placement == Placement::host) {
      k.host_reason = en.reason, k.bound = Bound::host, k.tiling = "host";
      k.compute_ns = host_ns(en.w, d);
      k.dma.activations_in = en.w.input_bytes(), k.dma.activations_out = en.w.output_bytes();
      // Crossings: inputs an NPU kernel produced, outputs an NPU kernel reads.
      auto cross = [&](std::int64_t bytes) {
        k.transfer_bytes += bytes;
        k.transfer_ns += d.host.transfer_latency_us * 1e3 + static_cast<double>(bytes) / d.host.transfer_gb_per_s;
      };
      for (std::size_t x = 0; x < en.in_roots.size(); ++x)
        if (auto pr = producer.find(en.in_roots[x]); pr != producer.end() && es[pr->second].placement == Placement::npu) cross(en.w.inputs[x].bytes);
      for (std::size_t x = 0; x < en.out_roots.size(); ++x)
        if (auto c = consumers.find(en.out_roots[x]); c != consumers.end() &&
            std::any_of(c->second.begin(), c->second.end(), [&](std::size_t u) { return es[u].placement == Placement::npu; }))
          cross(en.w.outputs[x].bytes);
      k.time_ns = k.compute_ns + k.transfer_ns;
      e.host_bytes += k.dma.total(), e.transfer_bytes += k.transfer_bytes, e.host_ns += k.compute_ns, e.transfer_ns += k.transfer_ns, ++e.host_kernels;
    } else {
      k.tiling = "zero-copy";
    }
    e.bound_ns[static_cast<int>(k.bound)] += k.time_ns;
    clock += k.time_ns;
    e.kernels.push_back(std::move(k));
  }
  e.latency_ns = clock;
  e.sram_peak_bytes = std::max(e.sram_peak_bytes, e.weight_cache_used + e.activation_used);
  e.mac_utilisation = e.peak_macs_per_s > 0 && e.latency_ns > 0 ? static_cast<double>(e.npu_macs) / (e.peak_macs_per_s * e.latency_ns * 1e-9) : 0.0;
  // The description's ranges keep every figure finite; a total that is not is refused here, once,
  // naming the kernel where it first went wrong, rather than printed as "inf ms".
  if (!std::isfinite(e.latency_ns) || !std::isfinite(e.mac_utilisation))
    for (const KernelEstimate& k : e.kernels)
      if (!std::isfinite(k.time_ns) || !std::isfinite(k.end_ns()) || &k == &e.kernels.back())
        throw Error(ErrorCode::runtime, "NPU estimate is not a finite number (a figure of the NPU description, or a kernel's size, out of range)",
                    {.file = d.name, .node = k.name, .expected = "a finite latency", .found = std::to_string(k.time_ns) + " ns for kernel " + k.kind});
  return e;
}

}  // namespace npusim::inline NPUSIM_ABI::npu
