// `npusim inspect` (a .npubin) and `npusim explain` (what falls back, coverage by target, kernel candidates).
#include <filesystem>
#include <map>

#include "options.hpp"
#include "cli.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/npu/report.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/runtime/model_dir.hpp"

namespace npusim::cli {

namespace fs = std::filesystem;

int cmd_inspect(const std::string& path, bool json, bool buffers, bool no_kernels, NpuArgs npu_args) {
  load_npu(npu_args);
  program::CompiledProgram p = program::load(path);
  const program::EmbeddedWeightsInfo w = program::embedded_info(path);
  const std::optional<NpuChoice> npu = npu_choice(npu_args, p, path);
  std::optional<npu::Estimate> est;
  if (npu) est = estimate_for(*npu, p);
  if (json) {
    ir::json j = ir::json::parse(program::inspect_json(p, w));
    if (est) j["npu_estimate"] = npu::estimate_json(*est, npu->description);
    // Invalid UTF-8 in a name becomes U+FFFD (JSON escapes control characters itself).
    std::printf("%s\n", j.dump(1, ' ', false, ir::json::error_handler_t::replace).c_str());
  } else {
    program::InspectOptions o;
    o.buffers = buffers, o.kernels = !no_kernels, o.embedded = w;
    if (est)
      o.kernel_note = [&](std::size_t pi, std::size_t ki) {
        const npu::KernelEstimate* k = npu::find_kernel(*est, static_cast<std::int32_t>(pi), static_cast<std::int32_t>(ki));
        return k && k->placement != npu::Placement::free ? "npu estimate: " + npu::kernel_brief(*k) + (k->placement == npu::Placement::npu ? "; " + k->tiling : "")
                                                          : std::string();
      };
    std::printf("%s", printable(program::inspect_text(p, o), true).c_str());
    if (est) std::printf("\n"), print_npu_summary(*npu, *est);
  }
  return 0;
}

// explain --kernels: per kernel of the target's partitions, the implementation it runs and why
// each better candidate declined.
void print_implementations(const program::CompiledProgram& p, const TargetChoice& tc) {
  const auto& entry = target(tc.target);
  if (!entry.implementations) {
    std::printf("kernels: the %s target has one implementation per kernel kind\n", tc.target.c_str());
    return;
  }
  std::printf("kernels: the candidate each %s kernel runs, and why the better ones declined (%s=NAME skips one)\n", tc.target.c_str(),
              entry.skip_env.c_str());
  for (std::size_t pi = 0; pi < p.partitions.size(); ++pi) {
    const program::Partition& part = p.partitions[pi];
    if (part.target != tc.target) continue;
    for (const KernelImplementation& r : entry.implementations(part)) {
      const Kernel& k = part.kernels.at(r.kernel);
      std::printf("  k%zu %-14s %-28s -> %s%s%s\n", r.kernel, printable(k.kind).c_str(),
                  printable(part.graph.nodes.at(static_cast<std::size_t>(k.nodes.back())).name).c_str(), r.chosen.c_str(), r.note.empty() ? "" : "; ",
                  printable(r.note).c_str());
      for (const auto& [name, why] : r.declined) std::printf("      %-18s %s\n", name.c_str(), printable(why).c_str());
    }
  }
}

int cmd_explain(const std::string& ir_path, const TargetChoice& tc_in, bool kernels, NpuArgs npu_args) {
  TargetChoice tc = tc_in;
  if (is_npubin_path(ir_path)) {
    // A compiled program: its fallback partitions as they are, and an int8 program's float ops.
    const program::CompiledProgram p = program::load(ir_path);
    std::printf("%s: %s program, %zu partition(s)\n", printable(ir_path).c_str(), printable(p.target).c_str(), p.partitions.size());
    std::size_t fallback = 0;
    for (const program::Partition& part : p.partitions)
      if (part.fallback)
        for (const ir::Node& n : part.graph.nodes) {
          ++fallback;
          std::printf("  fallback  %-32s %-34s on %s\n", printable(n.name).c_str(), printable(n.op_type).c_str(), printable(part.target).c_str());
        }
    std::printf("%zu node(s) fall back to %s\n", fallback, fallback ? "the reference target" : "nothing");
    print_float_islands(p);
    if (program::stage_count(p) > 1) std::printf("%s", program::describe_stages(p).c_str());
    if (kernels) {
      tc.target = p.target;
      print_implementations(p, tc);
    }
    return 0;
  }
  validate(tc);
  load_npu(npu_args);
  ir::Graph g = runtime::ModelDir::open(ir_path, "none").graph;
  program::CompiledProgram p = compile(tc, g);
  std::printf("%s on %s (%s): %lld IR nodes, %lld after passes, %zu partition(s)\n", printable(ir_path).c_str(), p.target.c_str(),
              std::string(dtype_short_name(p.compute)).c_str(), static_cast<long long>(p.stats.nodes_in),
              static_cast<long long>(p.stats.nodes_after_passes), p.partitions.size());
  // Re-derive the verdicts on the transformed graph the partitioner saw: the compiler's own passes.
  ir::Graph t = g;
  const partition::TargetInfo target = target_info(tc);
  const program::CompileOptions opt = compile_options(tc);
  program::CompiledProgram scratch;
  program::run_passes(t, target, opt, scratch);
  auto sup = partition::node_support(t, target, opt.force);
  int fallback = 0;
  for (std::size_t i = 0; i < sup.size(); ++i)
    if (!sup[i].on_target) {
      ++fallback;
      std::printf("  fallback  %-32s %-34s %s\n", printable(t.nodes[i].name).c_str(), printable(t.nodes[i].op_type).c_str(), printable(sup[i].reason).c_str());
    }
  std::printf("%d node(s) fall back to %s\n", fallback, fallback ? "the reference target" : "nothing");
  // Coverage of every target of this build: the nodes (after its passes) each runs itself, and
  // what it leaves to its fallback, by op type.
  std::printf("coverage by target (nodes after the target's passes that it runs itself):\n");
  for (const auto& entry : targets()) {
    TargetChoice other = tc;
    other.target = entry.name, other.interpret = false, other.device.clear();
    try {
      ir::Graph tg = g;
      const partition::TargetInfo info = entry.info();
      const program::CompileOptions o = compile_options(other);
      program::CompiledProgram tmp;
      program::run_passes(tg, info, o, tmp);
      const auto s = partition::node_support(tg, info, o.force);
      std::map<std::string, int> by_op;
      std::size_t own = 0;
      for (std::size_t i = 0; i < s.size(); ++i) s[i].on_target ? ++own : ++by_op[tg.nodes[i].op_type];
      std::string left;
      for (const auto& [op, n] : by_op) left += (left.empty() ? "" : ", ") + op + " x" + std::to_string(n);
      std::printf("  %-10s %zu/%zu (%.1f%%)%s%s\n", entry.name.c_str(), own, s.size(), s.empty() ? 100.0 : 100.0 * static_cast<double>(own) / static_cast<double>(s.size()),
                  left.empty() ? "" : "; to the fallback: ", printable(left).c_str());
    } catch (const Error& e) {
      std::printf("  %-10s cannot compile this model: %s\n", entry.name.c_str(), e.what());
    }
  }
  const bool staged = program::stage_count(p) > 1;
  for (std::size_t k = 0; k < p.partitions.size(); ++k)
    std::printf("  partition %zu: %s%s%s, %zu kernels\n", k, p.partitions[k].target.c_str(), p.partitions[k].fallback ? " (fallback)" : "",
                staged ? (", stage " + std::to_string(p.partitions[k].stage)).c_str() : "", p.partitions[k].kernels.size());
  for (const auto& x : p.transfers)
    if (x.from >= 0 && x.to >= 0)
      std::printf("  transfer %-28s partition %d -> %d  %s%s\n", printable(x.tensor).c_str(), x.from, x.to, program::human_bytes(x.bytes).c_str(),
                  program::stage_note(p, x).c_str());
  if (staged) std::printf("%s", program::describe_stages(p).c_str());
  if (kernels) print_implementations(p, tc);
  if (auto c = npu_choice(npu_args, p, ir_path)) print_npu_explain(*c, estimate_for(*c, p));
  return 0;
}

Registered add_inspect(Shared& s) {
  struct Args {
    std::string path;
    bool json = false, buffers = false, no_kernels = false;
    NpuArgs npu;
  };
  auto a = std::make_shared<Args>();
  auto* insp = s.app.add_subcommand("inspect", "print a .npubin program: kernels with fused members, buffers, weights, memory");
  insp->add_option("npubin", a->path, ".npubin file")->required();
  auto* json_flag = insp->add_flag("--json", a->json, "machine-readable JSON");
  insp->add_flag("--buffers", a->buffers, "list every stored tensor with its arena offset and lifetime")->excludes(json_flag);
  insp->add_flag("--no-kernels", a->no_kernels, "omit the kernel list")->excludes(json_flag);
  insp->add_option("--npu", a->npu.npu, npu_help("show every kernel's estimate on this NPU (default: the one the program was compiled against)"));
  insp->add_option("--npu-dtype", a->npu.dtype, "the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)");
  return {insp, [a] { return cmd_inspect(a->path, a->json, a->buffers, a->no_kernels, a->npu); }};
}

Registered add_explain(Shared& s) {
  struct Args {
    std::string ir;
    bool kernels = false;
    NpuArgs npu;
  };
  auto a = std::make_shared<Args>();
  auto* expl = s.app.add_subcommand("explain", "list every node that falls back to the reference target, and why");
  expl->add_option("model", a->ir, "case directory, torch_ir JSON file, or a .npubin (its fallback partitions, an int8 program's float ops)")->required();
  expl->add_flag("--kernels", a->kernels, "also print the implementation each kernel runs and why the better candidates declined");
  auto* npu_opt = expl->add_option("--npu", a->npu.npu, npu_help("also list the kernels this NPU leaves to its host, and why"));
  expl->add_option("--npu-dtype", a->npu.dtype, "with --npu: the estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(npu_opt);
  add_target_options(expl, s.tc, false);
  return {expl, [a, &tc = s.tc] { return cmd_explain(a->ir, tc, a->kernels, a->npu); }};
}

}  // namespace npusim::cli
