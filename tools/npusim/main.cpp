// npusim command line: run fixture cases, drive LLM generation, list ops.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "npusim/core/progress.hpp"
#include "npusim/runtime/case.hpp"
#include "npusim/runtime/generate.hpp"
#include "targets.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fs = std::filesystem;
using namespace npusim;

namespace {

Progress console_progress() {
  auto p = std::make_shared<ConsoleProgress>(stderr);
  p->tty_ = ::isatty(2);
  return [p](std::string_view s, std::uint64_t d, std::uint64_t t) { (*p)(s, d, t); };
}

void set_threads(int n) {
  if (n <= 0) return;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  Eigen::setNbThreads(n);
}

std::string count_str(std::uint64_t bytes) {
  char b[32];
  if (bytes >= (1u << 30)) std::snprintf(b, sizeof b, "%.2f GiB", static_cast<double>(bytes) / (1u << 30));
  else std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return b;
}

void print_notes(const weights::BoundWeights& w) {
  for (const auto& n : w.notes) std::printf("  weights: %s\n", n.c_str());
  if (!w.unused.empty()) std::printf("  weights: %zu IR weight(s) unused by any node, not loaded\n", w.unused.size());
}

int cmd_run(const std::string& dir, const cli::TargetChoice& tc, const std::string& weights, std::optional<double> tol, bool verbose) {
  cli::validate(tc);
  runtime::Case c = runtime::Case::open(dir, weights);
  std::printf("case %s: %zu nodes, %zu inputs, %zu outputs; weights: %s\n", c.name.c_str(), c.graph.nodes.size(), c.graph.inputs.size(),
              c.graph.outputs.size(), c.weights ? c.weights->path().c_str() : "(none)");
  auto bo = cli::bind_options(tc);
  bo.progress = console_progress();
  weights::BoundWeights w = c.bind(bo);
  if (verbose) print_notes(w);
  auto runner = cli::make_runner(tc, c.graph, w);
  std::printf("target: %s\n", runner->describe().c_str());
  runtime::CheckOptions co;
  co.tolerance = tol;
  co.half_compute = cli::half_dtype(tc.dtype);
  co.top5_in_order = !co.half_compute;
  runtime::CaseResult r = runtime::check_case(c, *runner, co);
  runtime::print_case_result(stdout, c, r);
  return r.pass ? 0 : 1;
}

struct GenerateArgs {
  std::string prefill_dir, decode_dir, weights = "auto";
  bool check = false;
  std::optional<double> tol;
  int min_matches = -1;
  std::size_t max_new_tokens = 0;
};

int cmd_generate(const GenerateArgs& a, const cli::TargetChoice& tc) {
  cli::validate(tc);
  using runtime::Case;
  Case pc = Case::open(a.prefill_dir, a.weights);
  Case dc = Case::open(a.decode_dir, "auto");
  llm::KvMapping map = llm::KvMapping::read((fs::path(a.decode_dir) / "kv_mapping.json").string());
  if (!pc.weights) throw Error(ErrorCode::weights, "prefill case has no weights (weights.safetensors or synth.json)", {.file = a.prefill_dir});
  std::printf("prefill %s: %zu nodes; decode %s: %zu nodes; %zu layers, prefill %lld tokens, cache %lld\n", pc.name.c_str(),
              pc.graph.nodes.size(), dc.name.c_str(), dc.graph.nodes.size(), map.layers.size(), static_cast<long long>(map.prefill_seq_len),
              static_cast<long long>(map.max_cache_len));
  // One set of weights for both programs: loaded once, shared.
  std::unordered_map<std::string, Tensor> cache;
  auto bo = cli::bind_options(tc);
  bo.progress = console_progress();
  bo.cache = &cache;
  auto t0 = std::chrono::steady_clock::now();
  weights::BoundWeights pw = weights::bind_weights(pc.graph, pc.weights.get(), bo);
  weights::BoundWeights dw = weights::bind_weights(dc.graph, pc.weights.get(), bo);
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("weights: %s from %s in %.1f s\n", count_str(pw.bytes + dw.bytes).c_str(), pc.weights->path().c_str(), load_s);
  auto prefill = cli::make_runner(tc, pc.graph, pw);
  auto decode = cli::make_runner(tc, dc.graph, dw);
  cache.clear();
  std::printf("target: %s\n", prefill->describe().c_str());

  if (!pc.io) throw Error(ErrorCode::io, "prefill case has no io.safetensors (prompt ids)", {.file = a.prefill_dir});
  llm::Roles roles = llm::detect_roles(pc.graph);
  Tensor ids = pc.io->tensor(pc.graph.tensor(roles.input_ids).name);
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());

  if (!a.check) {
    std::size_t n = a.max_new_tokens ? a.max_new_tokens : 9;
    std::printf("generating %zu tokens greedily from the case prompt (%zu tokens)\ntokens:", n, prompt.size());
    std::fflush(stdout);
    llm::Generation g = llm::generate_greedy(*prefill, *decode, map, prompt, n, [](std::int64_t t, std::size_t) {
      std::printf(" %lld", static_cast<long long>(t));
      std::fflush(stdout);
    });
    double step_total = 0;
    for (double s : g.step_ms) step_total += s;
    std::printf("\ntime to first token %.1f ms; decode %.1f ms/token (%.2f tok/s)\n", g.prefill_ms,
                g.step_ms.empty() ? 0.0 : step_total / static_cast<double>(g.step_ms.size()),
                g.step_ms.empty() ? 0.0 : 1000.0 * static_cast<double>(g.step_ms.size()) / step_total);
    return 0;
  }

  if (!dc.io || !dc.io->find("decode_tokens") || !dc.io->find("decode_logits"))
    throw Error(ErrorCode::io, "decode case has no decode_tokens/decode_logits to check against", {.file = a.decode_dir + "/io.safetensors"});
  Tensor tokens = dc.io->tensor("decode_tokens");
  Tensor dlogits = dc.io->tensor("decode_logits");
  Tensor plogits = pc.io->tensor(pc.graph.tensor(pc.graph.outputs.at(0)).name);
  const bool half = cli::half_dtype(tc.dtype);
  const double ptol = a.tol.value_or(half ? 0.035 : 1e-3), stol = a.tol.value_or(half ? 0.04 : 1e-3), min_cos = half ? 0.9995 : 0.99999;
  const auto steps = static_cast<int>(dlogits.shape().at(0));
  const int need = a.min_matches >= 0 ? a.min_matches : (half ? steps - 1 : steps);
  bool ok = true;
  llm::GenerateCallbacks cb;
  cb.on_prefill = [&](const llm::GenerateCheck& r) {
    bool pass = r.prefill.rel_l2 <= ptol && r.prefill.cosine >= min_cos && r.prefill_top1 == r.prefill_top1_ref;
    ok = ok && pass;
    std::printf("prefill  %5.0f ms  logits rel_l2 %.3g  cos %.7f  top1 %lld (ref %lld)  %s\n", r.prefill_ms, r.prefill.rel_l2, r.prefill.cosine,
                static_cast<long long>(r.prefill_top1), static_cast<long long>(r.prefill_top1_ref), pass ? "OK" : "FAIL");
    std::fflush(stdout);
  };
  cb.on_step = [&](const llm::StepCheck& s, std::size_t i, std::size_t) {
    bool pass = s.metrics.rel_l2 <= stol && s.metrics.cosine >= min_cos;
    ok = ok && pass;
    std::printf("step %zu pos %-5lld %5.0f ms  logits rel_l2 %.3g  cos %.7f  token %lld (ref %lld) %s%s\n", i,
                static_cast<long long>(s.position), s.ms, s.metrics.rel_l2, s.metrics.cosine, static_cast<long long>(s.token),
                static_cast<long long>(s.token_ref), s.token == s.token_ref ? "same" : "DIFFERENT", pass ? "" : "  FAIL");
    std::fflush(stdout);
  };
  std::vector<std::int64_t> tok(tokens.span<std::int64_t>().begin(), tokens.span<std::int64_t>().end());
  llm::GenerateCheck r = llm::check_generation(*prefill, *decode, map, prompt, plogits, tok, dlogits, cb);
  ok = ok && r.token_matches >= need;
  double step_total = 0;
  for (const auto& s : r.steps) step_total += s.ms;
  std::printf("greedy tokens: %d/%d match the reference (need %d)\n", r.token_matches, steps, need);
  std::printf("time to first token %.1f ms; decode %.1f ms/token (%.2f tok/s)\n", r.prefill_ms, step_total / steps, 1000.0 * steps / step_total);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int cmd_ops() {
  for (std::size_t i = 0; i < ops::op_count; ++i) {
    const ops::OpInfo& info = ops::op_info(i);
    std::printf("%-22s %-14s", std::string(info.id).c_str(), ops::op_class_name(info.op_class));
    for (auto n : info.aten) std::printf(" %s", std::string(n).c_str());
    std::printf("\n");
    for (const auto& [k, v] : info.attr_schema()) std::printf("%38s%s = %s\n", "", k.c_str(), v.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"npusim: compile PyTorch (torch_ir) models for a simulated NPU and run them"};
  app.set_version_flag("--version", std::string("npusim ") + version_string);
  app.require_subcommand(1);
  cli::TargetChoice tc;
  int threads = 0;
  app.add_option("--threads", threads, "worker threads (default: all cores)");

  auto add_target = [&](CLI::App* sub) {
    sub->add_option("--target", tc.target, "execution target")->check(CLI::IsMember({"reference"}));
    sub->add_option("--dtype", tc.dtype, "compute dtype (reference: f16/bf16 round what the IR stores as half)")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  };

  std::string run_dir, run_weights = "auto";
  std::optional<double> run_tol;
  bool verbose = false;
  auto* run = app.add_subcommand("run", "run a case directory (ir.json, weights, io.safetensors) and compare with PyTorch");
  run->add_option("case_dir", run_dir, "case directory")->required();
  run->add_option("--weights", run_weights, "auto, safetensors, synth, or a path");
  run->add_option("--tol", run_tol, "relative L2 tolerance (default: by dtype and reduction length)");
  run->add_flag("-v,--verbose", verbose, "print weight-binding notes");
  add_target(run);

  GenerateArgs ga;
  auto* gen = app.add_subcommand("generate", "prefill + decode an LLM (teacher-forced --check against the fixtures)");
  gen->add_option("prefill_dir", ga.prefill_dir, "prefill case directory")->required();
  gen->add_option("decode_dir", ga.decode_dir, "decode case directory (with kv_mapping.json)")->required();
  gen->add_flag("--check", ga.check, "compare prefill/decode logits and greedy tokens with the reference");
  gen->add_option("--weights", ga.weights, "auto, safetensors, synth, or a path (prefill case's)");
  gen->add_option("--tol", ga.tol, "relative L2 tolerance for logits");
  gen->add_option("--min-token-matches", ga.min_matches, "greedy tokens that must match (default: all; half dtypes: all but one)");
  gen->add_option("--max-new-tokens", ga.max_new_tokens, "tokens to generate without --check (default 9)");
  add_target(gen);

  auto* opsc = app.add_subcommand("ops", "list registered ops, their ATen names and attribute defaults");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help/version or the usage error
    return rc == 0 ? 0 : 2;  // exit codes: 0 pass, 1 results outside tolerance, 2 bad input
  }
  try {
    set_threads(threads);
    if (*run) return cmd_run(run_dir, tc, run_weights, run_tol, verbose);
    if (*gen) return cmd_generate(ga, tc);
    if (*opsc) return cmd_ops();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
