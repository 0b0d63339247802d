// `npusim simulate`, and the NPU estimate that `run --profile`, `compile`, `inspect` and `explain` print (npu_cmd.hpp).
#include "options.hpp"
#include "npu_cmd.hpp"

#include <cstdio>
#include <filesystem>

#include "npusim/ir/json.hpp"
#include "npusim/npu/record.hpp"
#include "npusim/npu/report.hpp"
#include "npusim/npu/roofline_svg.hpp"
#include "npusim/npu/trace.hpp"
#include "npusim/target/profiler.hpp"

namespace npusim::cli {

std::vector<std::string> npu_extra_dirs() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return {(exe.parent_path() / ".." / "share" / "npusim" / "npu").lexically_normal().string()};
}

npu::FoundDescription find_npu(const std::string& spec) { return npu::find_description(spec, npu_extra_dirs()); }

std::string npu_help(const std::string& what) {
  std::string names;
  for (const auto& n : npu::bundled_names(npu_extra_dirs())) names += (names.empty() ? "" : ", ") + n;
  return what + ": a bundled description (" + (names.empty() ? "none found" : names) + ") or a .json file";
}

DType parse_npu_dtype(const std::string& s, const char* flag) {
  std::string names;
  for (DType d : npu::npu_dtypes) names += (names.empty() ? "" : ", ") + std::string(dtype_short_name(d));
  const auto d = parse_dtype(s);
  if (!d || !npu::is_npu_dtype(*d)) throw Error(ErrorCode::dtype, std::string(flag) + ": not an NPU dtype", {.expected = names, .found = s});
  return *d;
}

DType default_npu_dtype(const npu::Description& d, DType compute) {
  return d.supports(compute) && d.mac_array(compute) ? compute : d.dtypes.front();
}

void load_npu(NpuArgs& a) {
  if (!a.npu.empty() && !a.found) a.found = find_npu(a.npu);
  if (!a.dtype.empty()) parse_npu_dtype(a.dtype, "--npu-dtype");
}

void check_npu_dtype_alone(const NpuArgs& a, bool program_has_npu, const std::string& file) {
  if (!a.dtype.empty() && a.npu.empty() && !program_has_npu)
    throw Error(ErrorCode::attr, "--npu-dtype sets the dtype of an NPU estimate: give --npu CONFIG (or a .npubin compiled with --npu)",
                {.file = file, .found = "--npu-dtype " + a.dtype});
}

std::optional<NpuChoice> npu_choice(NpuArgs a, const program::CompiledProgram& p, const std::string& file) {
  check_npu_dtype_alone(a, p.npu.has_value(), file);
  std::optional<npu::StoredNpu> st = npu::stored(p, file);
  if (a.npu.empty() && !st) return std::nullopt;
  NpuChoice c;
  if (!a.npu.empty()) {
    load_npu(a);
    c.description = std::move(a.found->description), c.from = a.found->path;
    c.dtype = st && st->description == c.description ? st->dtype : default_npu_dtype(c.description, p.compute);
  } else {
    c.description = st->description, c.dtype = st->dtype, c.from = "stored in " + file;
  }
  if (!a.dtype.empty()) c.dtype = parse_npu_dtype(a.dtype, "--npu-dtype");
  return c;
}

npu::Estimate estimate_for(const NpuChoice& c, const program::CompiledProgram& p) {
  npu::EstimateOptions o;
  o.dtype = c.dtype;
  return npu::estimate(p, c.description, o);
}

void print_npu_header(const NpuChoice& c, FILE* out) {
  std::fprintf(out, "NPU %s; description: %s\n", npu::describe(c.description, c.dtype).c_str(), c.from.c_str());
  if (!c.description.supports(c.dtype))
    std::fprintf(out, "note: %s does not compute in %s: every kernel runs on its host (--npu-dtype picks another)\n", c.description.name.c_str(),
                 std::string(dtype_short_name(c.dtype)).c_str());
}

void print_npu_summary(const NpuChoice& c, const npu::Estimate& e, FILE* out) {
  print_npu_header(c, out);
  std::fprintf(out, "%s", npu::totals_text(e).c_str());
}

void print_npu_explain(const NpuChoice& c, const npu::Estimate& e) {
  print_npu_summary(c, e);
  std::printf("longest kernels:\n%s", npu::top_kernels(e, 10).c_str());
  int n = 0;
  for (const auto& k : e.kernels)
    if (k.placement == npu::Placement::host)
      ++n, std::printf("  host  p%d k%-4d %-16s %-28s %s\n", k.partition, k.kernel, k.kind.c_str(), k.name.c_str(), k.host_reason.c_str());
  std::printf("%d kernel(s) run on the NPU's host\n", n);
}

void print_npu_vs_measured(const NpuChoice& c, const npu::Estimate& e, const Profiler& prof, int runs, const std::string& target) {
  std::printf("\n");
  print_npu_summary(c, e);
  std::map<std::string, double> measured_kind;
  std::map<std::pair<int, int>, double> measured_kernel;
  bool per_kernel = false;
  for (const auto& ev : prof.events()) {
    measured_kind[ev.kind] += ev.device_us >= 0 ? ev.device_us : ev.dur_us;
    if (ev.kernel >= 0) measured_kernel[{ev.track, ev.kernel}] += ev.device_us >= 0 ? ev.device_us : ev.dur_us, per_kernel = true;
  }
  std::printf("%-22s %6s %14s %14s %14s\n", "kernel kind", "count", "npu est ms", (target + " ms/run").c_str(), "npu/measured");
  for (const auto& r : npu::by_kind(e)) {
    const double m = measured_kind.count(r.kind) ? measured_kind[r.kind] / 1000.0 / runs : 0.0;
    std::printf("%-22s %6d %14.3f %14.3f %14s\n", r.kind.c_str(), r.count, r.ns * 1e-6, m, m > 0 ? npu::format("%.2fx", r.ns * 1e-6 / m).c_str() : "-");
  }
  std::vector<const npu::KernelEstimate*> v;
  for (const auto& k : e.kernels)
    if (k.placement != npu::Placement::free) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->time_ns > b->time_ns; });
  std::printf("longest kernels on %s, next to their measured time on %s:\n", c.description.name.c_str(), target.c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(10, v.size()); ++i) {
    const npu::KernelEstimate& k = *v[i];
    auto it = measured_kernel.find({k.partition, k.kernel});
    std::printf("  p%d k%-4d %-16s %-24s measured %-12s estimate: %s\n", k.partition, k.kernel, k.kind.c_str(), k.name.c_str(),
                it != measured_kernel.end() ? npu::format("%.1f us", it->second / runs).c_str() : (per_kernel ? "-" : "n/a"), npu::kernel_brief(k).c_str());
  }
  if (!per_kernel) std::printf("  (this target reports its time by kernel kind only)\n");
}

int cmd_simulate(const SimulateArgs& a, TargetChoice tc) {
  npu::FoundDescription f = find_npu(a.npu);
  const std::optional<DType> asked = a.dtype.empty() ? std::nullopt : std::optional(parse_npu_dtype(a.dtype, "--dtype"));
  Model m = open_model(a.model, "none");
  adopt_program_target(tc, m);
  const program::CompiledProgram p = [&] {
    if (m.compiled()) return *m.program;
    // An IR is compiled for the target in the estimate's float type (f16 for integer dtypes).
    const DType d = asked.value_or(f.description.dtypes.front());
    tc.dtype = is_floating(d) ? std::string(dtype_short_name(d)) : "f16";
    validate(tc);
    return compile(tc, m.source->graph);
  }();
  NpuChoice c{std::move(f.description), DType::f32, f.path};
  const std::optional<npu::StoredNpu> st = npu::stored(p, a.model);
  // Default: what a .npubin compiled against this description stored, else the NPU's native
  // (first listed) dtype.
  c.dtype = !a.dtype.empty() ? parse_npu_dtype(a.dtype, "--dtype") : st && st->description == c.description ? st->dtype : c.description.dtypes.front();
  const npu::Estimate e = estimate_for(c, p);
  // What the program computes in: int8 when `npusim quantize` made it (integer convolutions and
  // matrix products), else its float type; an estimate in other operands is said to be one.
  bool int8 = false;
  for (const auto& part : p.partitions)
    for (const Kernel& k : part.kernels) int8 = int8 || k.kind == ops::QConv2d::id || k.kind == ops::QLinear::id;
  std::printf("%s: %s program (%s), %lld kernels\n", m.name.c_str(), p.target.c_str(), int8 ? "int8, float islands in f32" : std::string(dtype_short_name(p.compute)).c_str(),
              static_cast<long long>(p.stats.kernels - p.stats.view_kernels));
  print_npu_header(c);
  std::string dtype_note;
  const bool float_unit = std::any_of(c.description.dtypes.begin(), c.description.dtypes.end(), [](DType d) { return is_floating(d); });
  if (!int8 && !is_floating(c.dtype))
    dtype_note = float_unit ? "a float program estimated with " + std::string(dtype_short_name(c.dtype)) +
                                  " operands, as if it were quantized: `npusim quantize` makes the int8 program and says what accuracy it costs"
                            : c.description.name + " has no float unit: this float program cannot run on it as it is; the estimate assumes its operands quantized to " +
                                  std::string(dtype_short_name(c.dtype)) + " (`npusim quantize` makes that program and reports the accuracy lost)";
  else if (int8 && is_floating(c.dtype))
    dtype_note = "an int8 program estimated with " + std::string(dtype_short_name(c.dtype)) + " operands (--dtype i8 estimates what it computes)";
  if (!dtype_note.empty()) std::printf("note: %s\n", dtype_note.c_str());
  for (const auto& s : c.description.sources) std::printf("  source: %s: %s\n", s.figure.c_str(), s.source.c_str());
  if (!c.description.assumptions.empty()) std::printf("  assumed: %zu figure(s) (see the description)\n", c.description.assumptions.size());
  std::printf("%s", npu::totals_text(e).c_str());
  std::printf("%.1f inferences/s at this latency\n\n", e.latency_ns > 0 ? 1e9 / e.latency_ns : 0.0);
  std::printf("%s", npu::kind_table(e).c_str());
  if (a.kernels) {
    std::printf("\nevery kernel:\n");
    for (const auto& k : e.kernels)
      if (k.placement != npu::Placement::free)
        std::printf("  p%d k%-4d %-16s %-28s %s; %s\n", k.partition, k.kernel, k.kind.c_str(), k.name.c_str(), npu::kernel_brief(k).c_str(), k.tiling.c_str());
  } else if (a.top > 0) {
    std::printf("\nlongest %d kernels:\n%s", a.top, npu::top_kernels(e, static_cast<std::size_t>(a.top)).c_str());
  }
  const std::string title = m.name + " on " + c.description.name + " (" + std::string(dtype_short_name(c.dtype)) + "): " + npu::ms(e.latency_ns);
  if (!a.svg.empty()) write_file_atomic(a.svg, npu::roofline_svg(e, title)), std::printf("svg: %s\n", a.svg.c_str());
  if (!a.trace.empty()) write_file_atomic(a.trace, npu::trace_json(e, "npusim simulate: " + title)), std::printf("trace: %s (open in https://ui.perfetto.dev)\n", a.trace.c_str());
  if (!a.json.empty()) {
    ir::json j = npu::estimate_json(e, c.description);
    j["model"] = m.name, j["program_target"] = p.target, j["program_compute"] = int8 ? "i8" : dtype_short_name(p.compute), j["description_file"] = c.from;
    if (!dtype_note.empty()) j["dtype_note"] = dtype_note;
    write_file_atomic(a.json, j.dump(1));
    std::printf("json: %s\n", a.json.c_str());
  }
  return 0;
}

Registered add_simulate(Shared& s) {
  auto sa = std::make_shared<SimulateArgs>();
  auto s_tc = std::make_shared<TargetChoice>();  // its own: only --target, which prepares the program
  auto* sim = s.app.add_subcommand("simulate", "estimate a model on an NPU: latency, DRAM traffic, SRAM peak, MAC utilisation; roofline SVG, Perfetto trace");
  sim->add_option("model", sa->model, "case directory, IR .json file or .npubin (weights are not needed)")->required();
  sim->add_option("--npu", sa->npu, npu_help("the NPU"))->required();
  sim->add_option("--dtype", sa->dtype, "operand dtype on the NPU: f32, f16, bf16, i16, i8 (default: the description's first)");
  sim->add_option("--svg", sa->svg, "write a roofline of the kernels here (SVG)");
  sim->add_option("--trace", sa->trace, "write the simulated timeline here (Chrome/Perfetto JSON: DMA, compute and host lanes)");
  sim->add_option("--json", sa->json, "write the estimate here (JSON: totals and every kernel)");
  auto* top = sim->add_option("--top", sa->top, "list the N longest kernels (default 10)")->check(integer_in(0, 1000000));
  sim->add_flag("--kernels", sa->kernels, "list every kernel")->excludes(top);
  sim->add_option_function<std::string>("--target", [s_tc](const std::string& t) { s_tc->target = t, s_tc->target_given = true; },
                                        "target whose compiler prepares the program (its fusion decides the kernels; default cpu)")
      ->check(CLI::IsMember(target_names()));
  return {sim, [sa, s_tc] { return cmd_simulate(*sa, *s_tc); }};
}

}  // namespace npusim::cli
