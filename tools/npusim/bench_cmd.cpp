// `npusim bench` and `npusim bench-llm` (bench_cmd.hpp).
#include "options.hpp"
#include "bench_cmd.hpp"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "npusim/core/quant.hpp"
#include "npusim/harness/bench.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/runtime/model_dir.hpp"

namespace npusim::cli {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

ir::json stats_json(const bench::Stats& s) {
  return {{"median_ms", s.median_ms}, {"p10_ms", s.p10_ms}, {"p90_ms", s.p90_ms}, {"min_ms", s.min_ms}, {"mean_ms", s.mean_ms}, {"runs", s.runs}};
}

// The machine, and when it was measured (UTC).
ir::json machine_json(const bench::Machine& m) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"cpu", m.cpu},       {"logical_cpus", m.cores}, {"threads", m.threads}, {"memory_gib", m.memory_gib},
          {"kernel", m.kernel}, {"device", m.device},      {"date", date}};
}

bench::Machine machine_for(const TargetChoice& tc) {
  bench::Machine m = bench::machine();
  if (tc.target == "cpu") m.threads = cpu_threads();
  if (tc.target == "opencl") m.device = opencl_device_description();
  return m;
}

int cmd_bench(const std::string& path, TargetChoice tc, const BenchArgs& a, const std::string& weights, const InputArgs& inputs) {
  Model m = open_model(path, weights);
  adopt_program_target(tc, m);
  validate(tc);
  const bench::Machine mach = machine_for(tc);
  std::printf("machine: %s\n", bench::describe(mach).c_str());
  auto t0 = std::chrono::steady_clock::now();
  program::CompiledProgram p = program_for(tc, m);
  const double compile_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto runner = make_runner(p, m.weights());
  const double load_ms = ms_since(t0);
  GatheredInputs gi = gather_inputs(m, inputs, /*synthetic=*/true);
  for (const auto& n : gi.notes) std::printf("%s\n", n.c_str());
  const std::vector<Tensor>& in = gi.tensors;
  const bench::Stats s = bench::time_it([&] { runner->run(in); }, a.warmup, a.repeats);
  const auto specs = m.inputs();
  const std::int64_t batch = specs.empty() || specs[0].shape.empty() ? 1 : std::max<std::int64_t>(1, specs[0].shape[0]);
  std::printf("%s on %s (%s): %s %.1f ms, weights %.1f ms\n", m.name.c_str(), tc.target.c_str(), tc.dtype.c_str(), m.compiled() ? "load" : "compile",
              compile_ms, load_ms);
  std::printf("latency  median %.3f ms  p10 %.3f  p90 %.3f  (%d runs after %d warm-up)\n", s.median_ms, s.p10_ms, s.p90_ms, s.runs, a.warmup);
  std::printf("throughput %.1f items/s (batch %lld)\n", 1000.0 * static_cast<double>(batch) / s.median_ms, static_cast<long long>(batch));
  if (!a.json.empty()) {
    ir::json j = {{"case", m.name}, {"target", tc.target}, {"dtype", tc.dtype}, {"machine", machine_json(mach)}, {"compile_ms", compile_ms},
                  {"weights_ms", load_ms}, {"latency", stats_json(s)}, {"batch", batch}, {"throughput_per_s", 1000.0 * static_cast<double>(batch) / s.median_ms}};
    write_file_atomic(a.json, j.dump(1));
    std::printf("json: %s\n", a.json.c_str());
  }
  return 0;
}

// Bytes of weights one decode step reads: a weight read whole once, an embedding table one row,
// a linear weight quantized to blocks (docs/quantization.md) its packed rows.
std::int64_t decode_weight_bytes(const program::CompiledProgram& p) {
  std::int64_t total = 0;
  for (const auto& part : p.partitions) {
    const ir::Graph& g = part.graph;
    struct Uses {
      bool whole = false, row = false;
      std::optional<quant::BlockFormat> blocks;
    };
    std::map<ir::TensorId, Uses> uses;
    for (const auto& n : g.nodes)
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const auto t = n.inputs[i];
        const auto k = g.tensor(t).kind;
        if (k != ir::TensorKind::weight && k != ir::TensorKind::constant) continue;
        Uses& u = uses[t];
        const ir::AttrValue* wf = n.op_type == "aten.linear.default" && i == 1 ? n.attrs.find("weight_format") : nullptr;
        const auto blocks = wf && wf->is_string() ? quant::parse_block_format(wf->as_string()) : std::nullopt;
        if (n.op_type == "aten.embedding.default" && i == 0) u.row = true;
        else if (blocks) u.blocks = blocks;
        else u.whole = true;
      }
    for (const auto& [t, u] : uses) {
      const auto& tp = part.plan.tensors[static_cast<std::size_t>(t)];
      const Shape& sh = g.tensor(t).shape;
      if (u.whole) {
        total += tp.bytes;
        continue;
      }
      if (u.row) total += tp.bytes / std::max<std::int64_t>(1, sh.at(0));
      if (u.blocks) total += static_cast<std::int64_t>(quant::row_bytes(*u.blocks, sh.at(1))) * sh.at(0);
    }
  }
  return total;
}

std::vector<std::int64_t> parse_positions(const std::string& spec, std::int64_t max_pos) {
  std::vector<std::int64_t> r;
  if (spec == "log2") {
    for (std::int64_t p = 1; p < max_pos; p *= 2) r.push_back(p);
    if (r.empty() || r.back() != max_pos - 1) r.push_back(max_pos - 1);
    return r;
  }
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size())
      throw Error(ErrorCode::attr, "--positions: not a position", {.expected = "log2 or comma-separated integers", .found = item});
    if (v < 0 || v >= max_pos)
      throw Error(ErrorCode::attr, "position outside the cache", {.expected = "[0, " + std::to_string(max_pos) + ")", .found = item});
    r.push_back(v);
  }
  return r;
}

int cmd_bench_llm(const std::string& pdir, const std::string& ddir, const TargetChoice& tc, const BenchArgs& a) {
  validate(tc);
  runtime::ModelDir pc = runtime::ModelDir::open(pdir), dc = runtime::ModelDir::open(ddir, "none");
  llm::KvMapping map = llm::KvMapping::read(ddir + "/kv_mapping.json");
  if (!pc.weights) throw Error(ErrorCode::weights, "prefill case has no weights", {.file = pdir});
  if (map.layers.empty()) throw Error(ErrorCode::attr, "kv_mapping.json maps no layer", {.file = ddir + "/kv_mapping.json"});
  // Positions first: a bad list is refused before anything is loaded.
  const std::vector<std::int64_t> positions =
      parse_positions(a.positions, dc.graph.tensor(llm::input_id(dc.graph, map.layers[0].decode_key_input)).shape.at(2));
  const bench::Machine mach = machine_for(tc);
  std::printf("machine: %s\n", bench::describe(mach).c_str());
  // The time to first token is generate's: the prefill computes the logits of the last row only.
  const ir::Graph pg = prefill_for_generation(pc.graph);
  auto t0 = std::chrono::steady_clock::now();
  program::CompiledProgram pp = compile(tc, pg), dp = compile(tc, dc.graph);
  const double compile_ms = ms_since(t0);
  std::unordered_map<std::string, Tensor> cache;
  weights::BindOptions bo;
  bo.cache = &cache;
  t0 = std::chrono::steady_clock::now();
  auto prefill = make_runner(pp, pc.weights.get(), bo);
  auto decode = make_runner(dp, pc.weights.get(), bo);
  cache.clear();
  const double load_ms = ms_since(t0);
  llm::LlmPrograms m(*prefill, *decode, map, pg, dc.graph);
  llm::Session s(m);

  // The reference for the per-position check: the same decode graph on the reference target in f32,
  // with the same weights quantized the same way (what is checked is the kernels, not the format).
  std::unique_ptr<runtime::ProgramRunner> ref;
  if (a.check) {
    TargetChoice rc;
    rc.target = "reference";
    rc.weights_dtype = tc.weights_dtype, rc.keep = tc.keep;
    weights::BindOptions rb;
    ref = make_runner(compile(rc, dc.graph), pc.weights.get(), rb);
  }
  bench::ReadProbe probe(mach.threads);
  const double bw = probe.gbs();
  const std::int64_t wbytes = decode_weight_bytes(dp);
  // The floor of a target that reads its weights from host memory (cpu, reference) is the host's
  // read bandwidth, measured around each position; a device target's (opencl) is the device's copy
  // bandwidth (read + written), measured once here.
  const bool host_target = tc.target == "cpu" || tc.target == "reference";
  const double device_bw = host_target ? 0.0 : opencl_copy_bandwidth_gbs();
  const bool has_floor = host_target || device_bw > 0;
  auto floor_at = [&](double gbs) { return gbs > 0 ? static_cast<double>(wbytes) / (gbs * 1e9) * 1e3 : 0.0; };
  const double floor_ms = floor_at(host_target ? bw : device_bw);
  std::printf("%s + %s on %s (%s%s): compile %.0f ms, weights %.1f s\n", pc.name.c_str(), dc.name.c_str(), tc.target.c_str(), tc.dtype.c_str(),
              tc.stages > 1 ? (", " + std::to_string(tc.stages) + " stages in this process").c_str() : "", compile_ms, load_ms / 1000);
  if (host_target)
    std::printf("memory read bandwidth %.1f GB/s (this run); weights read per decode step %.1f MB -> floor %.1f ms/token (%.2f tok/s)\n", bw,
                static_cast<double>(wbytes) / 1e6, floor_ms, 1000.0 / floor_ms);
  else if (has_floor)
    std::printf("device copy bandwidth %.1f GB/s (read + written, this run); weights read per decode step %.1f MB -> floor %.2f ms/token "
                "(GB/s column: weights read per step / step time)\n",
                device_bw, static_cast<double>(wbytes) / 1e6, floor_ms);
  else
    std::printf("weights read per decode step %.1f MB (no bandwidth floor on this target)\n", static_cast<double>(wbytes) / 1e6);

  // Time to first token: the prefill of a full-length prompt.
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(s.prefill_length()));
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<std::int64_t>(weights::splitmix64(i) % 1000);
  const bench::Stats ttft = bench::time_it([&] { s.prefill(prompt); }, 1, std::max(1, a.repeats / 4));
  std::printf("time to first token (prefill %lld tokens): median %.1f ms (p10 %.1f, p90 %.1f) = %.1f tok/s\n",
              static_cast<long long>(s.prefill_length()), ttft.median_ms, ttft.p10_ms, ttft.p90_ms,
              1000.0 * static_cast<double>(s.prefill_length()) / ttft.median_ms);

  // Decode steps at each position, with K/V caches of deterministic pseudo-random values (rounded
  // to the cache's dtype, so target and reference read the same numbers), made once: each step
  // gets its own copy, since a target may write its cache in place.
  const ir::Graph& dg = decode->graph();
  std::vector<Tensor> noise;  // [layer][k, v]
  for (std::size_t l = 0; l < map.layers.size(); ++l)
    for (bool value : {false, true}) {
      const ir::TensorInfo& ti = dg.tensor(llm::input_id(dg, value ? map.layers[l].decode_value_input : map.layers[l].decode_key_input));
      Tensor t = Tensor::empty(DType::f32, ti.shape);
      const std::uint64_t h = weights::fnv1a64("kv:" + std::to_string(l) + (value ? "v" : "k"));
      for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = round_to(ti.dtype, weights::synth_unit(h, static_cast<std::uint64_t>(i)));
      noise.push_back(std::move(t));
    }
  auto fill = [&](std::size_t layer, bool value, const Shape&) { return noise[2 * layer + (value ? 1 : 0)].clone(); };
  // Each position's floor comes from the bandwidth measured just before and just after its steps.
  if (host_target) std::printf("floor %% per position: from the read bandwidth measured just before and after its steps (GB/s column)\n");
  std::printf("%8s %10s %8s %8s %8s %9s %7s %s\n", "position", "median ms", "p10", "p90", "tok/s", "floor %", "GB/s", a.check ? "check vs reference (cos, top-1)" : "");
  ir::json jpos = ir::json::array();
  bench::Series series{"decode step (" + tc.target + ", " + tc.dtype + ")", "#1f77b4", {}}, floor_series{"memory-bandwidth floor", "#999999", {}};
  bool all_ok = true;
  const std::int64_t tok = 1000;
  for (std::int64_t p : positions) {
    s.seek(p, fill);
    std::vector<float> logits = s.step(tok);  // warm-up, and the output checked below
    ir::json jc;
    std::string check;
    if (ref) {
      std::map<ir::TensorId, Tensor> kv;
      for (std::size_t l = 0; l < map.layers.size(); ++l) {
        kv[llm::input_id(dg, map.layers[l].decode_key_input)] = fill(l, false, {});
        kv[llm::input_id(dg, map.layers[l].decode_value_input)] = fill(l, true, {});
      }
      std::vector<Tensor> ro = ref->run(llm::build_inputs(ref->graph(), m.decode_roles, std::span<const std::int64_t>(&tok, 1), p, kv));
      std::vector<float> want = llm::last_row(ro.at(0));
      harness::Metrics mt = harness::compare(Tensor::from_values<float>({static_cast<std::int64_t>(logits.size())}, logits),
                           Tensor::from_values<float>({static_cast<std::int64_t>(want.size())}, want));
      const bool top1 = llm::argmax_index(logits) == llm::argmax_index(want);
      // The caches hold noise, so the logits are nearly flat: near-ties make top-1 fragile in
      // half precision. Pass on cosine (a broken kernel at some position falls far below), and
      // report top-1; f32 must also agree on it.
      const bool half = half_dtype(tc.dtype);
      const bool ok = mt.cosine >= (half ? 0.999 : 0.99999) && (half || top1);
      all_ok = all_ok && ok;
      char b[96];
      std::snprintf(b, sizeof b, "cos %.6f, top-1 %s %s", mt.cosine, top1 ? "same" : "DIFFERENT", ok ? "ok" : "FAIL");
      check = b;
      jc = {{"cosine", mt.cosine}, {"rel_l2", mt.rel_l2}, {"top1_same", top1}, {"ok", ok}};
    }
    const double bw_before = host_target ? probe.gbs(3) : 0.0;
    const bench::Stats st = bench::time_it(
        [&] {
          s.seek(p);
          s.step(tok);
        },
        0, a.repeats);
    const double bw_here = host_target ? (bw_before + probe.gbs(3)) / 2 : device_bw, floor_here = floor_at(bw_here);
    // GB/s: the host's read bandwidth there (host targets), the weight bytes a step reads per its time (device).
    const double gbs_col = host_target ? bw_here : static_cast<double>(wbytes) / (st.median_ms * 1e6);
    char fl[32] = "        -       -";
    if (has_floor) std::snprintf(fl, sizeof fl, "%8.1f%% %7.1f", 100.0 * floor_here / st.median_ms, gbs_col);
    std::printf("%8lld %10.2f %8.2f %8.2f %8.2f %s %s\n", static_cast<long long>(p), st.median_ms, st.p10_ms, st.p90_ms, 1000.0 / st.median_ms, fl,
                check.c_str());
    std::fflush(stdout);
    series.points.emplace_back(static_cast<double>(p), st.median_ms);
    if (has_floor) floor_series.points.emplace_back(static_cast<double>(p), floor_here);
    ir::json jp = {{"position", p}, {"step", stats_json(st)}, {"tokens_per_s", 1000.0 / st.median_ms}};
    if (host_target) jp["floor_fraction"] = floor_here / st.median_ms, jp["read_bandwidth_gbs"] = bw_here, jp["floor_ms"] = floor_here;
    if (!host_target && has_floor) jp["floor_fraction"] = floor_here / st.median_ms, jp["achieved_gbs"] = gbs_col, jp["floor_ms"] = floor_here;
    if (ref) jp["check"] = jc;
    jpos.push_back(jp);
  }
  if (!a.json.empty()) {
    ir::json j = {{"prefill", pc.name}, {"decode", dc.name}, {"target", tc.target}, {"dtype", tc.dtype}, {"machine", machine_json(mach)},
                  {"compile_ms", compile_ms}, {"weights_ms", load_ms}, {"read_bandwidth_gbs", bw}, {"decode_weight_bytes", wbytes},
                  {"floor_ms", floor_ms}, {"ttft", stats_json(ttft)}, {"prefill_tokens", s.prefill_length()}, {"positions", jpos}};
    if (!host_target) j["device_copy_bandwidth_gbs"] = device_bw;
    write_file_atomic(a.json, j.dump(1));
    std::printf("json: %s\n", a.json.c_str());
  }
  if (!a.svg.empty()) {
    write_file_atomic(a.svg, bench::svg_chart(dc.name + " decode step time vs cache position (" + tc.target + ", " + tc.dtype + ")",
                                              "cache position (log2 scale)", "ms per step",
                                              has_floor ? std::vector<bench::Series>{series, floor_series} : std::vector<bench::Series>{series}, true));
    std::printf("svg: %s\n", a.svg.c_str());
  }
  return all_ok ? 0 : 1;
}

Registered add_bench(Shared& s) {
  struct Args {
    std::string dir, weights = "auto";
    BenchArgs bench;
    InputArgs inputs;
  };
  auto a = std::make_shared<Args>();
  auto* bench = s.app.add_subcommand("bench", "time a model (case directory, IR .json or .npubin): compile, weight load, latency, throughput");
  bench->add_option("model", a->dir, "case directory, IR .json file or .npubin")->required();
  bench->add_option("--weights", a->weights, "auto, none, safetensors, synth, or a path");
  add_input_options(bench, a->inputs);
  bench->add_option("--warmup", a->bench.warmup, "untimed runs first (default 3)")->check(integer_in(0, 1000000));
  bench->add_option("--repeats", a->bench.repeats, "timed runs (default 20)")->check(integer_in(1, 1000000));
  bench->add_option("--json", a->bench.json, "write the results as JSON here");
  add_target_options(bench, s.tc, false);
  return {bench, [a, &tc = s.tc] { return cmd_bench(a->dir, tc, a->bench, a->weights, a->inputs); }};
}

Registered add_bench_llm(Shared& s) {
  struct Args {
    std::string prefill, decode;
    BenchArgs bench;
  };
  auto a = std::make_shared<Args>();
  a->bench.repeats = 5;
  auto* bench_llm = s.app.add_subcommand("bench-llm", "LLM: time to first token, decode step time vs cache position, bandwidth floor");
  bench_llm->add_option("prefill_dir", a->prefill, "prefill case directory (weights come from here)")->required();
  bench_llm->add_option("decode_dir", a->decode, "decode case directory (with kv_mapping.json)")->required();
  bench_llm->add_option("--positions", a->bench.positions, "cache positions: log2 (1, 2, 4, ..., max-1) or a comma list");
  bench_llm->add_option("--repeats", a->bench.repeats, "timed steps per position (default 5)")->check(integer_in(1, 1000000));
  bench_llm->add_flag("!--no-check", a->bench.check, "skip the check against the reference at every position");
  bench_llm->add_option("--json", a->bench.json, "write the results as JSON here");
  bench_llm->add_option("--svg", a->bench.svg, "write a chart of step time vs position here");
  add_target_options(bench_llm, s.tc, false);
  return {bench_llm, [a, &tc = s.tc] { return cmd_bench_llm(a->prefill, a->decode, tc, a->bench); }};
}

}  // namespace npusim::cli
