// npusim command line: compile, inspect, explain, run fixture cases, drive LLM generation, simulate an NPU.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "npusim/core/progress.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/runtime/text_generate.hpp"
#include "bench_cmd.hpp"
#include "npu_cmd.hpp"
#include "ops_doc.hpp"
#include "targets.hpp"
#include "text_prompt.hpp"

namespace fs = std::filesystem;
using namespace npusim;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

std::string fmt_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

Progress console_progress() {
  auto p = std::make_shared<ConsoleProgress>(stderr);
  p->tty_ = ::isatty(2);
  return [p](std::string_view s, std::uint64_t d, std::uint64_t t) { (*p)(s, d, t); };
}

void set_threads(int n) {
  if (n > 0) cpu::set_threads(n);  // the pool, OpenMP and Eigen
}

// A number option in [lo, hi] (lo excluded when lo_open); NaN and infinities are refused at parse
// time (CLI::Range lets NaN through: no comparison with it is true).
CLI::Validator finite_range(double lo, double hi, bool lo_open = false) {
  const std::string desc = std::string(lo_open ? "(" : "[") + fmt_num(lo) + ", " + fmt_num(hi) + "]";
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
          return "value " + in + " is not a finite number in " + desc;
        return {};
      },
      "FLOAT in " + desc);
}

// An unsigned option: CLI11 reads "-1" into an unsigned as 2^64-1; refuse the sign instead.
CLI::Validator no_sign() {
  return CLI::Validator([](std::string& in) -> std::string { return in.find('-') != std::string::npos ? "value " + in + " must not be negative" : ""; },
                        "");
}

void print_compile_summary(const program::CompiledProgram& p, double secs, FILE* out = stdout) {
  std::int64_t arena = 0;
  for (const auto& part : p.partitions) arena += part.plan.arena_bytes;
  std::fprintf(out, "compiled for %s (%s) in %.0f ms: %lld nodes -> %lld kernels (%lld fused, %lld zero-copy), %zu partition(s), arena %s\n",
              p.target.c_str(), std::string(dtype_short_name(p.compute)).c_str(), secs * 1000, static_cast<long long>(p.stats.nodes_in),
              static_cast<long long>(p.stats.kernels - p.stats.view_kernels), static_cast<long long>(p.stats.fused_kernels),
              static_cast<long long>(p.stats.view_kernels), p.partitions.size(), program::human_bytes(arena).c_str());
}

void print_device(const cli::TargetChoice& tc, FILE* out = stdout) {
#ifdef NPUSIM_WITH_OPENCL
  if (tc.target == "opencl") std::fprintf(out, "device: %s\n", ocl::select_device().describe().c_str());
#else
  (void)tc, (void)out;
#endif
}

// A runner for a case graph: compiled for the target (default) or interpreted on the reference.
struct Prepared {
  std::unique_ptr<Runner> runner;
  runtime::ProgramRunner* plan = nullptr;  // when compiled
};

Prepared prepare(const cli::TargetChoice& tc, const ir::Graph& g, const weights::WeightSource* src, std::unordered_map<std::string, Tensor>* cache,
                 FILE* info = stdout) {
  Prepared r;
  weights::BindOptions bo;
  bo.progress = console_progress();
  bo.cache = cache;
  if (tc.interpret) {
    auto io = cli::interpreter_bind_options();
    io.progress = bo.progress, io.cache = cache;
    r.runner = cli::make_interpreter(tc, g, weights::bind_weights(g, src, io));
    return r;
  }
  auto t0 = clock_type::now();
  program::CompiledProgram p = cli::compile(tc, g);
  print_compile_summary(p, seconds_since(t0), info);
  auto plan = cli::make_runner(p, src, bo);
  r.plan = plan.get();
  r.runner = std::move(plan);
  return r;
}

struct ProfileArgs {
  bool enabled = false;
  int runs = 10;
  std::string trace;  // Chrome/Perfetto trace JSON path
  int time_runs = 0;  // --time N: latency of N more runs (after the checked one, which warms up)
  cli::NpuArgs npu;   // --npu / --npu-dtype: the NPU estimate next to the measured times
};

// Median and minimum wall time of `runs` runs (inputs prepared once, outside the timing).
void time_runs(Runner& r, std::span<const Tensor> inputs, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = clock_type::now();
    r.run(inputs);
    ms.push_back(seconds_since(t0) * 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency: median %.3f ms, min %.3f ms, max %.3f ms over %d runs\n", ms[ms.size() / 2], ms.front(), ms.back(), runs);
}

// Runs `runs` more times with per-kernel profiling; prints the table by kernel kind, writes a trace.
void profile_runs(Prepared& p, std::span<const Tensor> inputs, const ProfileArgs& a) {
  if (!p.plan) throw Error(ErrorCode::unsupported, "--profile needs a compiled program (not --interpret)");
  Profiler prof;
  p.runner->run(inputs);  // warm-up
  p.plan->set_profiler(&prof);
  prof.clear();
  auto t0 = clock_type::now();
  for (int i = 0; i < a.runs; ++i) p.runner->run(inputs);
  const double wall = seconds_since(t0) * 1e6;
  p.plan->set_profiler(nullptr);
  std::printf("\nprofile: %d runs, %.3f ms per run\n", a.runs, wall / 1000.0 / a.runs);
  prof.print_summary(stdout, wall, a.runs);
  if (!a.trace.empty()) {
    prof.write_trace(a.trace);
    std::printf("trace: %s (open in https://ui.perfetto.dev)\n", a.trace.c_str());
  }
  const program::CompiledProgram& prog = p.plan->program();
  if (auto c = cli::npu_choice(a.npu, prog, prog.source)) cli::print_npu_vs_measured(*c, cli::estimate_for(*c, prog), prof, a.runs, prog.target);
}

struct RunArgs {
  std::string model, weights = "auto", output, expected;
  std::optional<double> tol;
  cli::InputArgs inputs;
};

int cmd_run(const RunArgs& a, cli::TargetChoice tc, ProfileArgs prof) {
  cli::load_npu(prof.npu);
  cli::Model m = cli::open_model(a.model, a.weights);
  cli::check_npu_dtype_alone(prof.npu, m.compiled() && m.program->npu, a.model);
  cli::adopt_program_target(tc, m);
  cli::validate(tc);
  // Inputs and expected values before compiling: bad ones are refused before any work.
  cli::GatheredInputs in = cli::gather_inputs(m, a.inputs);
  cli::Expected expected = cli::expected_outputs(m, a.expected, in.from_case);
  if (a.tol && !expected)
    throw Error(ErrorCode::attr, "--tol applies when outputs are compared with expected values, and there are none here",
                {.file = a.model, .expected = "--expected FILE, or a case whose io.safetensors holds the outputs of its own inputs", .found = "--tol"});
  std::printf("model %s: %zu inputs, %zu outputs; weights: %s\n", m.name.c_str(), m.inputs().size(), m.outputs().size(),
              m.weights() ? m.weights()->path().c_str() : "(none)");
  if (m.weights())
    for (const auto& n : m.weights()->notes()) std::printf("weights: %s\n", n.c_str());
  for (const auto& n : in.notes) std::printf("%s\n", n.c_str());
  Prepared p;
  if (m.compiled()) {
    weights::BindOptions bo;
    bo.progress = console_progress();
    auto plan = cli::make_runner(*m.program, m.weights(), bo);
    std::printf("loaded %s: compiled for %s (%s), %lld kernels\n", a.model.c_str(), m.program->target.c_str(), tc.dtype.c_str(),
                static_cast<long long>(m.program->stats.kernels - m.program->stats.view_kernels));
    p.plan = plan.get();
    p.runner = std::move(plan);
  } else {
    p = prepare(tc, m.source->graph, m.weights(), nullptr);
  }
  std::printf("target: %s\n", p.runner->describe().c_str());
  print_device(tc);
  auto t0 = clock_type::now();
  std::vector<Tensor> outs = p.runner->run(in.tensors);
  const double secs = seconds_since(t0);
  int rc = 0;
  if (expected) {
    harness::CheckOptions co;
    co.half_compute = cli::half_dtype(tc.dtype);
    co.top5_in_order = !co.half_compute;
    std::vector<std::string> names;
    std::vector<DType> dtypes;
    for (const auto& o : m.outputs()) names.push_back(o.name), dtypes.push_back(o.dtype);
    harness::CaseResult r = harness::check_outputs(names, dtypes, outs, expected.lookup, a.tol.value_or(cli::default_tolerance(m, co.half_compute)),
                                                   m.kind() == "vision" || (m.kind().empty() && outs.size() == 1), co);
    r.seconds = secs;
    std::printf("expected outputs: %s\n", expected.from.c_str());
    harness::print_case_result(stdout, m.name, r);
    rc = r.pass ? 0 : 1;
  } else {
    cli::print_output_summary(stdout, m, m.outputs(), outs);
    std::printf("ran %s in %.3f s (%s)\n", m.name.c_str(), secs,
                in.from_case ? "no expected outputs to compare with" : "inputs given: compare with --expected FILE if you have reference outputs");
  }
  if (!a.output.empty()) {
    for (const auto& n : cli::write_outputs(a.output, m.outputs(), outs)) std::printf("%s\n", n.c_str());
    std::printf("outputs written to %s\n", a.output.c_str());
  }
  std::fflush(stdout);
  if (prof.time_runs > 0) time_runs(*p.runner, in.tensors, prof.time_runs);
  if (prof.enabled) profile_runs(p, in.tensors, prof);
  return rc;
}

struct GenerateArgs {
  std::string prefill_dir, decode_dir, weights = "auto";
  bool check = false, profile = false;
  std::string trace;
  std::string prompt_ids, prompt_ids_file, eos;
  cli::TextPromptArgs text;
  llm::Sampling sampling;
  std::optional<double> tol;
  int min_matches = -1;
  std::size_t max_new_tokens = 16;
};

// "1, 2 3\n4" -> {1, 2, 3, 4}
std::vector<std::int64_t> parse_ids(const std::string& text, const std::string& what) {
  std::vector<std::int64_t> ids;
  std::string tok;
  auto flush = [&] {
    if (tok.empty()) return;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (*end || errno || v < 0)
      throw Error(ErrorCode::parse, what + ": token ids must be non-negative integers", {.expected = "ids such as 1,2,3", .found = tok});
    ids.push_back(v);
    tok.clear();
  };
  for (char ch : text) {
    if (ch == ',' || std::isspace(static_cast<unsigned char>(ch))) flush();
    else tok.push_back(ch);
  }
  flush();
  if (ids.empty()) throw Error(ErrorCode::parse, what + ": no token ids", {.expected = "ids such as 1,2,3"});
  return ids;
}

// Token ids must index the embedding table.
void check_ids_in_vocab(const std::vector<std::int64_t>& ids, const ir::Graph& g, const std::string& what) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "aten.embedding.default" && !n.inputs.empty() && !g.tensor(n.inputs[0]).shape.empty()) {
      const std::int64_t vocab = g.tensor(n.inputs[0]).shape[0];
      for (auto id : ids)
        if (id >= vocab)
          throw Error(ErrorCode::attr, what + ": token id outside the vocabulary", {.file = g.source, .expected = "< " + std::to_string(vocab),
                      .found = std::to_string(id)});
      return;
    }
}

void print_decode_profile(Profiler& prof, const std::vector<double>& step_ms, const std::string& trace, FILE* out = stdout) {
  double decode_us = 0;
  for (double ms : step_ms) decode_us += ms * 1000.0;
  std::fprintf(out, "\ndecode profile (%zu steps):\n", step_ms.size());
  if (step_ms.empty()) return;
  prof.print_summary(out, decode_us, static_cast<int>(step_ms.size()));
  if (!trace.empty()) prof.write_trace(trace), std::fprintf(out, "trace: %s\n", trace.c_str());
}

int cmd_generate(const GenerateArgs& a, const cli::TargetChoice& tc) {
  cli::validate(tc);
  // Text mode (a text prompt or a tokenizer): the generated text streams to stdout, everything
  // else (what was loaded, timings) goes to stderr, so the text can be piped.
  const bool text_mode = a.text.text_mode();
  FILE* info = text_mode ? stderr : stdout;
  // Everything given on the command line is checked before anything is compiled or loaded.
  std::vector<std::int64_t> user_prompt, eos;
  std::string prompt_source = "--prompt-ids";
  if (!a.prompt_ids.empty()) user_prompt = parse_ids(a.prompt_ids, "--prompt-ids");
  if (!a.prompt_ids_file.empty()) user_prompt = parse_ids(read_file(a.prompt_ids_file), a.prompt_ids_file), prompt_source = a.prompt_ids_file;
  if (!a.eos.empty()) eos = parse_ids(a.eos, "--eos");
  std::optional<text::ModelText> mt;
  std::optional<cli::TextPrompt> tp;
  std::string eos_source = eos.empty() ? "" : "--eos";
  if (text_mode) {
    mt = cli::open_model_text(a.text, cli::tokenizer_search_dirs({a.weights == "auto" || a.weights == "safetensors" || a.weights == "synth" ? "" : a.weights,
                                                                  a.prefill_dir, a.decode_dir}));
    std::fprintf(info, "tokenizer: %s (vocabulary %zu, %zu added tokens)\n", mt->tokenizer_path().c_str(), mt->tokenizer().vocab_size(),
                 mt->tokenizer().added_tokens().size());
    if (a.text.prompt || !a.text.prompt_file.empty()) {
      tp = cli::encode_prompt(*mt, a.text);
      user_prompt = tp->ids;
      prompt_source = a.text.prompt ? "--prompt (as tokenized)" : a.text.prompt_file + " (as tokenized)";
    }
    // --eos when given, else the model's stop ids (docs/tokenizer.md).
    text::EosIds s = eos.empty() ? mt->stop_ids(tp && tp->chat ? &*tp->chat : nullptr) : text::EosIds{eos, "--eos"};
    eos = s.ids, eos_source = s.source;
    if (eos.empty()) std::fprintf(info, "stop ids: none (no eos_token_id in generation_config.json or config.json beside the tokenizer; give --eos)\n");
    else std::fprintf(info, "stop ids: %s (from %s)\n", cli::describe_ids(mt->tokenizer(), eos).c_str(), s.source.c_str());
  }
  using runtime::ModelDir;
  ModelDir pc = ModelDir::open(a.prefill_dir, a.weights);
  ModelDir dc = ModelDir::open(a.decode_dir, "none");
  llm::KvMapping map = llm::KvMapping::read((fs::path(a.decode_dir) / "kv_mapping.json").string());
  map.complete(pc.graph);
  if (!pc.weights) throw Error(ErrorCode::weights, "prefill case has no weights (weights.safetensors or synth.json; or give --weights)", {.file = a.prefill_dir});
  for (const auto& n : pc.weights->notes()) std::fprintf(info, "weights: %s\n", n.c_str());
  if (!user_prompt.empty()) {
    check_ids_in_vocab(user_prompt, pc.graph, prompt_source);
    if (static_cast<std::int64_t>(user_prompt.size()) > map.max_cache_len)
      throw Error(ErrorCode::resource, "prompt longer than the KV cache", {.file = a.decode_dir + "/kv_mapping.json",
                  .expected = "<= " + std::to_string(map.max_cache_len) + " tokens", .found = std::to_string(user_prompt.size())});
  }
  check_ids_in_vocab(eos, pc.graph, eos_source.empty() ? "--eos" : eos_source);
  if (!a.check && user_prompt.empty() && !pc.io)
    throw Error(ErrorCode::io, "no prompt: give --prompt, --prompt-ids or --prompt-ids-file (the prefill case has no io.safetensors)", {.file = a.prefill_dir});
  std::fprintf(info, "prefill %s: %zu nodes; decode %s: %zu nodes; %zu layers, prefill %lld tokens, cache %lld\n", pc.name.c_str(),
               pc.graph.nodes.size(), dc.name.c_str(), dc.graph.nodes.size(), map.layers.size(), static_cast<long long>(map.prefill_seq_len),
               static_cast<long long>(map.max_cache_len));
  // One set of weights for both programs: loaded once, shared.
  std::unordered_map<std::string, Tensor> cache;
  auto t0 = clock_type::now();
  Prepared prefill = prepare(tc, pc.graph, pc.weights.get(), &cache, info);
  Prepared decode = prepare(tc, dc.graph, pc.weights.get(), &cache, info);
  std::fprintf(info, "weights from %s ready in %.1f s\n", pc.weights->path().c_str(), seconds_since(t0));
  cache.clear();
  std::fprintf(info, "target: %s\n", prefill.runner->describe().c_str());
  print_device(tc, info);

  llm::LlmPrograms model(*prefill.runner, *decode.runner, map, pc.graph, dc.graph);
  Profiler prof;
  if (a.profile) {
    if (!decode.plan) throw Error(ErrorCode::unsupported, "--profile needs compiled programs (not --interpret)");
    decode.plan->set_profiler(&prof);
  }

  if (!a.check) {
    std::vector<std::int64_t> prompt = user_prompt;
    if (prompt.empty()) {
      Tensor ids = pc.io->tensor(model.prefill_roles.input_ids);
      prompt.assign(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
    }
    llm::GenerateOptions go;
    go.max_new_tokens = a.max_new_tokens;
    go.sampling = a.sampling;
    go.eos = eos;
    std::fprintf(info, "prompt: %zu tokens%s; generating up to %zu tokens (%s)\n", prompt.size(), tp ? (" from " + tp->what).c_str() : "",
                 go.max_new_tokens,
                 go.sampling.greedy() ? "greedy" : ("temperature " + fmt_num(go.sampling.temperature) + ", top-k " + std::to_string(go.sampling.top_k) +
                                                    ", top-p " + fmt_num(go.sampling.top_p) + ", seed " + std::to_string(go.sampling.seed)).c_str());
    llm::Generation g;
    if (text_mode) {
      std::fflush(info);
      llm::TextGeneration tg = llm::generate_text(model, mt->tokenizer(), prompt, go, [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      });
      std::fputc('\n', stdout);
      std::fflush(stdout);
      g = std::move(tg.generation);
      std::fprintf(info, "tokens: %zu generated\n", g.tokens.size());
    } else {
      std::printf("tokens:");
      std::fflush(stdout);
      g = llm::generate(model, prompt, go, [](std::int64_t t, std::size_t) {
        std::printf(" %lld", static_cast<long long>(t));
        std::fflush(stdout);
      });
      std::printf("\n");
    }
    std::vector<double> st = g.step_ms;
    std::sort(st.begin(), st.end());
    double total = 0;
    for (double x : st) total += x;
    std::fprintf(info, "stopped: %s", g.stop.c_str());
    if (g.stop == "eos" && !g.tokens.empty())
      std::fprintf(info, " (id %lld)", static_cast<long long>(g.tokens.back()));
    if (g.stop == "cache_full")
      std::fprintf(info, " (the KV cache holds %lld positions, all used: %zu prompt + %zu generated tokens)", static_cast<long long>(map.max_cache_len),
                   prompt.size(), g.tokens.size());
    std::fprintf(info, "\ntime to first token %.1f ms", g.prefill_ms);
    if (!st.empty())
      std::fprintf(info, "; decode %.1f ms/token median (p10 %.1f, p90 %.1f), %.2f tok/s", st[st.size() / 2], st[st.size() / 10], st[st.size() * 9 / 10],
                   1000.0 * static_cast<double>(st.size()) / total);
    std::fprintf(info, "\n");
    if (a.profile) {
      decode.plan->set_profiler(nullptr);
      print_decode_profile(prof, g.step_ms, a.trace, info);
    }
    return 0;
  }

  if (!pc.io) throw Error(ErrorCode::io, "--check needs the prefill case's io.safetensors (prompt ids and expected logits)", {.file = a.prefill_dir});
  if (!dc.io || !dc.io->find("decode_tokens") || !dc.io->find("decode_logits"))
    throw Error(ErrorCode::io, "decode case has no decode_tokens/decode_logits to check against", {.file = a.decode_dir + "/io.safetensors"});
  Tensor ids = pc.io->tensor(model.prefill_roles.input_ids);
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
  Tensor tokens = dc.io->tensor("decode_tokens");
  Tensor dlogits = dc.io->tensor("decode_logits");
  Tensor plogits = pc.io->tensor(pc.graph.tensor(pc.graph.outputs.at(0)).name);
  const bool half = cli::half_dtype(tc.dtype);
  const double ptol = a.tol.value_or(half ? 0.035 : 1e-3), stol = a.tol.value_or(half ? 0.04 : 1e-3), min_cos = half ? 0.9995 : 0.99999;
  bool ok = true;
  harness::GenerateCallbacks cb;
  cb.on_prefill = [&](const harness::GenerateCheck& r) {
    bool pass = r.prefill.rel_l2 <= ptol && r.prefill.cosine >= min_cos && r.prefill_top1 == r.prefill_top1_ref;
    ok = ok && pass;
    std::printf("prefill  %5.0f ms  logits rel_l2 %.3g  cos %.7f  top1 %lld (ref %lld)  %s\n", r.prefill_ms, r.prefill.rel_l2, r.prefill.cosine,
                static_cast<long long>(r.prefill_top1), static_cast<long long>(r.prefill_top1_ref), pass ? "OK" : "FAIL");
    std::fflush(stdout);
  };
  cb.on_step = [&](const harness::StepCheck& s, std::size_t i, std::size_t) {
    bool pass = s.metrics.rel_l2 <= stol && s.metrics.cosine >= min_cos;
    ok = ok && pass;
    std::printf("step %zu pos %-5lld %5.0f ms  logits rel_l2 %.3g  cos %.7f  token %lld (ref %lld) %s%s\n", i,
                static_cast<long long>(s.position), s.ms, s.metrics.rel_l2, s.metrics.cosine, static_cast<long long>(s.token),
                static_cast<long long>(s.token_ref), s.token == s.token_ref ? "same" : "DIFFERENT", pass ? "" : "  FAIL");
    std::fflush(stdout);
  };
  std::vector<std::int64_t> tok(tokens.span<std::int64_t>().begin(), tokens.span<std::int64_t>().end());
  harness::GenerateCheck r = harness::check_generation(model, prompt, plogits, tok, dlogits, cb);  // checks the references' sizes
  if (a.profile) {
    decode.plan->set_profiler(nullptr);
    std::vector<double> step_ms;
    for (const auto& s : r.steps) step_ms.push_back(s.ms);
    print_decode_profile(prof, step_ms, a.trace);
  }
  const auto steps = static_cast<int>(r.steps.size());
  const int need = a.min_matches >= 0 ? a.min_matches : (half ? steps - 1 : steps);
  ok = ok && r.token_matches >= need;
  double step_total = 0;
  for (const auto& s : r.steps) step_total += s.ms;
  std::printf("greedy tokens: %d/%d match the reference (need %d)\n", r.token_matches, steps, need);
  std::printf("time to first token %.1f ms; decode %.1f ms/token (%.2f tok/s)\n", r.prefill_ms, step_total / steps, 1000.0 * steps / step_total);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int cmd_compile(const std::string& model, const std::string& out, const cli::TargetChoice& tc, bool verify, bool embed, const std::string& weights,
                cli::NpuArgs npu_args) {
  cli::validate(tc);
  cli::load_npu(npu_args);
  if (cli::is_npubin_path(model)) throw Error(ErrorCode::attr, "compile takes an IR (a case directory or an IR .json file), not a .npubin", {.file = model});
  if (!embed && weights != "auto")
    throw Error(ErrorCode::attr, "--weights applies with --embed-weights only (a .npubin without weights takes them when run)", {.found = "--weights " + weights});
  auto t0 = clock_type::now();
  runtime::ModelDir c = runtime::ModelDir::open(model, embed ? weights : "none");
  if (embed && !c.weights)
    throw Error(ErrorCode::weights, "--embed-weights needs weights: none beside the IR (weights.safetensors, synth.json); give --weights",
                {.file = model});
  program::CompileOptions o = cli::compile_options(tc);
  o.verify = verify;
  program::CompiledProgram p = program::compile(c.graph, cli::target_info(tc), o);
  std::optional<cli::NpuChoice> npu = cli::npu_choice(npu_args, p, model);
  if (npu) npu::attach(p, npu->description, npu->dtype);
  program::save(p, out, embed ? c.weights.get() : nullptr);
  print_compile_summary(p, seconds_since(t0));
  if (npu) cli::print_npu_summary(*npu, cli::estimate_for(*npu, p));
  std::printf("wrote %s (%s%s)\n", out.c_str(), program::human_bytes(static_cast<std::int64_t>(fs::file_size(out))).c_str(),
              embed ? ", weights embedded" : ", no weights: run it with --weights");
  return 0;
}

int cmd_inspect(const std::string& path, bool json, bool buffers, bool no_kernels, cli::NpuArgs npu_args) {
  cli::load_npu(npu_args);
  program::CompiledProgram p = program::load(path);
  const program::EmbeddedWeightsInfo w = program::embedded_info(path);
  const std::optional<cli::NpuChoice> npu = cli::npu_choice(npu_args, p, path);
  std::optional<npu::Estimate> est;
  if (npu) est = cli::estimate_for(*npu, p);
  if (json) {
    ir::json j = ir::json::parse(program::inspect_json(p, w));
    if (est) j["npu_estimate"] = npu::estimate_json(*est, npu->description);
    std::printf("%s\n", j.dump(1).c_str());
  } else {
    program::InspectOptions o;
    o.buffers = buffers, o.kernels = !no_kernels, o.embedded = w;
    if (est)
      o.kernel_note = [&](std::size_t pi, std::size_t ki) {
        const npu::KernelEstimate* k = npu::find_kernel(*est, static_cast<std::int32_t>(pi), static_cast<std::int32_t>(ki));
        return k && k->placement != npu::Placement::free ? "npu estimate: " + npu::kernel_brief(*k) + (k->placement == npu::Placement::npu ? "; " + k->tiling : "")
                                                          : std::string();
      };
    std::printf("%s", program::inspect_text(p, o).c_str());
    if (est) std::printf("\n"), cli::print_npu_summary(*npu, *est);
  }
  return 0;
}

// explain --kernels: per kernel of the target's partitions, the implementation it runs and why
// each better candidate declined.
void print_implementations(const program::CompiledProgram& p, const cli::TargetChoice& tc) {
  const auto& entry = cli::target(tc.target);
  if (!entry.implementations) {
    std::printf("kernels: the %s target has one implementation per kernel kind\n", tc.target.c_str());
    return;
  }
  std::printf("kernels: the candidate each %s kernel runs, and why the better ones declined (NPUSIM_CPU_SKIP=NAME skips one)\n",
              tc.target.c_str());
  for (std::size_t pi = 0; pi < p.partitions.size(); ++pi) {
    const program::Partition& part = p.partitions[pi];
    if (part.target != tc.target) continue;
    for (const KernelImplementation& r : entry.implementations(part)) {
      const Kernel& k = part.kernels.at(r.kernel);
      std::printf("  k%zu %-14s %-28s -> %s%s%s\n", r.kernel, k.kind.c_str(), part.graph.nodes.at(static_cast<std::size_t>(k.nodes.back())).name.c_str(),
                  r.chosen.c_str(), r.note.empty() ? "" : "; ", r.note.c_str());
      for (const auto& [name, why] : r.declined) std::printf("      %-18s %s\n", name.c_str(), why.c_str());
    }
  }
}

int cmd_explain(const std::string& ir_path, const cli::TargetChoice& tc, bool kernels, cli::NpuArgs npu_args) {
  cli::validate(tc);
  cli::load_npu(npu_args);
  ir::Graph g = runtime::ModelDir::open(ir_path, "none").graph;
  program::CompiledProgram p = cli::compile(tc, g);
  std::printf("%s on %s (%s): %lld IR nodes, %lld after passes, %zu partition(s)\n", ir_path.c_str(), p.target.c_str(),
              std::string(dtype_short_name(p.compute)).c_str(), static_cast<long long>(p.stats.nodes_in),
              static_cast<long long>(p.stats.nodes_after_passes), p.partitions.size());
  // Re-derive the verdicts on the transformed graph the partitioner saw: the compiler's own passes.
  ir::Graph t = g;
  const partition::TargetInfo target = cli::target_info(tc);
  const program::CompileOptions opt = cli::compile_options(tc);
  program::CompiledProgram scratch;
  program::run_passes(t, target, opt, scratch);
  auto sup = partition::node_support(t, target, opt.force);
  int fallback = 0;
  for (std::size_t i = 0; i < sup.size(); ++i)
    if (!sup[i].on_target) {
      ++fallback;
      std::printf("  fallback  %-32s %-34s %s\n", t.nodes[i].name.c_str(), t.nodes[i].op_type.c_str(), sup[i].reason.c_str());
    }
  std::printf("%d node(s) fall back to %s\n", fallback, fallback ? "the reference target" : "nothing");
  // Coverage of every target of this build: the nodes (after its passes) each runs itself, and
  // what it leaves to its fallback, by op type.
  std::printf("coverage by target (nodes after the target's passes that it runs itself):\n");
  for (const auto& entry : cli::targets()) {
    cli::TargetChoice other = tc;
    other.target = entry.name, other.interpret = false, other.device.clear();
    try {
      ir::Graph tg = g;
      const partition::TargetInfo info = entry.info();
      const program::CompileOptions o = cli::compile_options(other);
      program::CompiledProgram tmp;
      program::run_passes(tg, info, o, tmp);
      const auto s = partition::node_support(tg, info, o.force);
      std::map<std::string, int> by_op;
      std::size_t own = 0;
      for (std::size_t i = 0; i < s.size(); ++i) s[i].on_target ? ++own : ++by_op[tg.nodes[i].op_type];
      std::string left;
      for (const auto& [op, n] : by_op) left += (left.empty() ? "" : ", ") + op + " x" + std::to_string(n);
      std::printf("  %-10s %zu/%zu (%.1f%%)%s%s\n", entry.name.c_str(), own, s.size(), s.empty() ? 100.0 : 100.0 * static_cast<double>(own) / static_cast<double>(s.size()),
                  left.empty() ? "" : "; to the fallback: ", left.c_str());
    } catch (const Error& e) {
      std::printf("  %-10s cannot compile this model: %s\n", entry.name.c_str(), e.what());
    }
  }
  for (std::size_t k = 0; k < p.partitions.size(); ++k)
    std::printf("  partition %zu: %s%s, %zu kernels\n", k, p.partitions[k].target.c_str(), p.partitions[k].fallback ? " (fallback)" : "",
                p.partitions[k].kernels.size());
  for (const auto& x : p.transfers)
    if (x.from >= 0 && x.to >= 0)
      std::printf("  transfer %-28s partition %d -> %d  %s\n", x.tensor.c_str(), x.from, x.to, program::human_bytes(x.bytes).c_str());
  if (kernels) print_implementations(p, tc);
  if (auto c = cli::npu_choice(npu_args, p, ir_path)) cli::print_npu_explain(*c, cli::estimate_for(*c, p));
  return 0;
}

int cmd_devices() {
#ifdef NPUSIM_WITH_OPENCL
  auto devs = ocl::list_devices();
  if (devs.empty()) std::printf("no OpenCL devices (no OpenCL driver installed?)\n");
  std::string chosen;
  if (!devs.empty()) chosen = ocl::select_device().name;
  for (const auto& d : devs) {
    std::printf("%zu  %-40s %-34s %-9s %3u CUs  %6.1f GiB  driver %s  %s%s\n", d.index, d.name.c_str(), d.platform_name.c_str(), d.gpu ? "GPU" : "CPU/other",
                d.compute_units, static_cast<double>(d.global_mem) / (1u << 30), d.driver.c_str(), d.c_version.c_str(),
                d.name == chosen ? "  (default)" : "");
    std::string path;
    try {
      path = ocl::mma_support(*ocl::open_device(std::to_string(d.index))).why;
    } catch (const Error& e) {
      path = std::string("unusable: ") + e.what();
    }
    std::printf("   matrix kernels: %s\n", path.c_str());
  }
  std::printf("choose with NPUSIM_OPENCL_DEVICE=<index or name substring> or --device\n");
  return 0;
#else
  std::printf("this npusim was built without OpenCL\n");
  return 0;
#endif
}

int cmd_ops(bool markdown, const std::string& out) {
  if (markdown) {
    const std::string md = cli::ops_markdown();
    if (out.empty()) std::fwrite(md.data(), 1, md.size(), stdout);
    else write_file_atomic(out, md), std::printf("wrote %s\n", out.c_str());
    return 0;
  }
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
  app.fallthrough();  // options of the whole program (--threads) also after the subcommand
  cli::TargetChoice tc;
  int threads = 0;
  app.add_option("--threads", threads, "worker threads of the cpu target and Eigen (default: all cores)")->check(CLI::Range(1, 4096));

  const std::string target_help = "execution target: " + [] {
    std::string s;
    for (const auto& n : cli::target_names()) s += (s.empty() ? "" : ", ") + n + (n == cli::default_target ? " (default)" : "");
    return s;
  }();
  auto add_target = [&](CLI::App* sub, bool interpret) {
    sub->add_option_function<std::string>("--target", [&](const std::string& t) { tc.target = t, tc.target_given = true; }, target_help)
        ->check(CLI::IsMember(cli::target_names()));
    sub->add_option_function<std::string>("--dtype", [&](const std::string& d) { tc.dtype = d, tc.dtype_given = true; }, "compute dtype (default f32)")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    sub->add_option("--force-fallback", tc.force_fallback,
                    "debug: run these on the fallback (op types, op ids or node:NAME, comma-separated; also NPUSIM_FORCE_FALLBACK)");
    if (interpret) sub->add_flag("--interpret", tc.interpret, "reference only: interpret the IR node by node (no passes, no fusion)");
    sub->add_option("--device", tc.device, "opencl target: device index or name substring (sets NPUSIM_OPENCL_DEVICE; see `npusim devices`)");
  };
  auto add_inputs = [](CLI::App* sub, cli::InputArgs& in) {
    sub->add_option("--input", in.inputs, "an input's value: NAME=FILE (.npy, .safetensors, raw:FILE); NAME may be left out for a single input")
        ->allow_extra_args(false);
    sub->add_option("--image", in.image, "image classifiers: a JPEG/PNG/BMP, with ImageNet preprocessing (resize, centre crop, normalise)");
  };

  RunArgs ra;
  auto* run = app.add_subcommand("run", "run a model (case directory, IR .json or .npubin); compare with expected outputs when the case has them");
  run->add_option("model", ra.model, "case directory, IR .json file or .npubin")->required();
  run->add_option("--weights", ra.weights, "auto, none, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  run->add_option("--tol", ra.tol, "relative L2 tolerance (default: by dtype and reduction length)")->check(finite_range(0.0, 1.0, true));
  add_inputs(run, ra.inputs);
  run->add_option("--output", ra.output, "write the outputs here (.safetensors: all by name; .npy: one)");
  run->add_option("--expected", ra.expected, "compare the outputs with these (.safetensors by output name, or .npy for one output)")
      ->check(CLI::ExistingFile);
  ProfileArgs prof;
  auto* run_profile = run->add_flag("--profile", prof.enabled, "time every kernel over --runs runs; print a table by kernel kind");
  run->add_option("--runs", prof.runs, "runs to profile (default 10)")->check(CLI::Range(1, 1000000))->needs(run_profile);
  run->add_option("--trace", prof.trace, "with --profile: write a Chrome/Perfetto trace JSON here")->needs(run_profile);
  run->add_option("--time", prof.time_runs, "time N more runs: median/min/max wall latency")->check(CLI::Range(1, 1000000));
  run->add_option("--npu", prof.npu.npu, cli::npu_help("with --profile: the NPU whose estimate to print next to the measured times"))->needs(run_profile);
  run->add_option("--npu-dtype", prof.npu.dtype, "with --profile: the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(run_profile);
  add_target(run, true);

  GenerateArgs ga;
  auto* gen = app.add_subcommand("generate", "prefill + decode an LLM (teacher-forced --check against the fixtures)");
  gen->add_option("prefill_dir", ga.prefill_dir, "prefill case directory")->required();
  gen->add_option("decode_dir", ga.decode_dir, "decode case directory (with kv_mapping.json)")->required();
  auto* gen_check = gen->add_flag("--check", ga.check, "compare prefill/decode logits and greedy tokens with the reference");
  gen->add_option("--weights", ga.weights, "auto, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  gen->add_option("--tol", ga.tol, "with --check: relative L2 tolerance for logits")->check(finite_range(0.0, 1.0, true))->needs(gen_check);
  gen->add_option("--min-token-matches", ga.min_matches, "with --check: greedy tokens that must match (default: all; half dtypes: all but one)")
      ->check(CLI::NonNegativeNumber)->needs(gen_check);
  gen->add_option("--max-new-tokens", ga.max_new_tokens, "tokens to generate (default 16; stops earlier at an --eos id or the cache's end)")
      ->check(no_sign())->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40))->excludes(gen_check);
  auto* gen_ids = gen->add_option("--prompt-ids", ga.prompt_ids, "prompt token ids, e.g. 1,2,3 (default: the prefill case's input_ids)")->excludes(gen_check);
  auto* gen_ids_file = gen->add_option("--prompt-ids-file", ga.prompt_ids_file, "file of prompt token ids (whitespace or comma separated)")
      ->excludes(gen_check)->excludes(gen_ids)->check(CLI::ExistingFile);
  auto* gen_prompt = gen->add_option("--prompt", ga.text.prompt, "prompt text (tokenized with the model's tokenizer.json; the output is text)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  auto* gen_prompt_file = gen->add_option("--prompt-file", ga.text.prompt_file, "file holding the prompt text (UTF-8)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file)->excludes(gen_prompt)->check(CLI::ExistingFile);
  gen->add_option("--tokenizer", ga.text.tokenizer, "tokenizer.json, or a directory with it (default: next to --weights or the cases)")
      ->excludes(gen_check)->check(CLI::ExistingPath);
  auto* gen_chat = gen->add_flag("--chat", ga.text.chat, "the prompt is a user message: apply the model's chat template (ChatML, Llama 3)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  gen->add_option("--system", ga.text.system, "with --chat: the system message (default: the template's own, if it has one)")->needs(gen_chat);
  gen->add_option("--chat-format", ga.text.chat_format, "with --chat: render this form instead of the template's")
      ->check(CLI::IsMember({"chatml", "llama3"}))->needs(gen_chat);
  gen->callback([gen_chat, gen_prompt, gen_prompt_file] {
    if (gen_chat->count() && !gen_prompt->count() && !gen_prompt_file->count())
      throw CLI::ValidationError("--chat", "needs the user's message: --prompt TEXT or --prompt-file FILE");
  });
  gen->add_option("--eos", ga.eos, "stop after generating any of these ids (comma separated)")->excludes(gen_check);
  gen->add_option("--temperature", ga.sampling.temperature, "sampling temperature (0: greedy)")->check(finite_range(0.0, 100.0))->excludes(gen_check);
  gen->add_option("--top-k", ga.sampling.top_k, "sample among the k most likely tokens (0: all)")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 31))->excludes(gen_check);
  gen->add_option("--top-p", ga.sampling.top_p, "sample among the smallest set reaching this probability (1: all)")
      ->check(finite_range(0.0, 1.0, true))->excludes(gen_check);
  gen->add_option("--seed", ga.sampling.seed, "sampling seed")->check(no_sign())->excludes(gen_check);
  auto* gen_profile = gen->add_flag("--profile", ga.profile, "time every decode kernel; print a table by kernel kind");
  gen->add_option("--trace", ga.trace, "with --profile: write a Chrome/Perfetto trace of the decode steps")->needs(gen_profile);
  add_target(gen, true);

  auto* tlist = app.add_subcommand("targets", "list the targets this build has (the default is marked)");

  std::string c_ir, c_out, c_weights = "auto";
  bool c_verify = false, c_embed = false;
  auto* comp = app.add_subcommand("compile", "compile an IR (case directory or .json) to a .npubin program");
  comp->add_option("model", c_ir, "case directory or torch_ir JSON file")->required();
  comp->add_option("-o,--output", c_out, "output .npubin path")->required();
  comp->add_flag("--verify", c_verify, "re-check every node after each pass");
  comp->add_flag("--embed-weights", c_embed, "store the weights in the .npubin (aligned, mmap'able, checksummed): it then runs on its own");
  comp->add_option("--weights", c_weights, "with --embed-weights: the weights to embed (default: those beside the IR)");
  cli::NpuArgs c_npu;
  auto* c_npu_opt = comp->add_option("--npu", c_npu.npu, cli::npu_help("estimate every kernel on this NPU and store the description in the .npubin"));
  comp->add_option("--npu-dtype", c_npu.dtype, "with --npu: the estimate's operand dtype (default: the compute dtype if the NPU has it, else its first)")
      ->needs(c_npu_opt);
  add_target(comp, false);

  std::string i_path;
  bool i_json = false, i_buffers = false, i_no_kernels = false;
  auto* insp = app.add_subcommand("inspect", "print a .npubin program: kernels with fused members, buffers, weights, memory");
  insp->add_option("npubin", i_path, ".npubin file")->required();
  auto* i_json_flag = insp->add_flag("--json", i_json, "machine-readable JSON");
  insp->add_flag("--buffers", i_buffers, "list every stored tensor with its arena offset and lifetime")->excludes(i_json_flag);
  insp->add_flag("--no-kernels", i_no_kernels, "omit the kernel list")->excludes(i_json_flag);
  cli::NpuArgs i_npu;
  insp->add_option("--npu", i_npu.npu, cli::npu_help("show every kernel's estimate on this NPU (default: the one the program was compiled against)"));
  insp->add_option("--npu-dtype", i_npu.dtype, "the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)");

  std::string e_ir;
  bool e_kernels = false;
  auto* expl = app.add_subcommand("explain", "list every node that falls back to the reference target, and why");
  expl->add_option("model", e_ir, "case directory or torch_ir JSON file")->required();
  expl->add_flag("--kernels", e_kernels, "also print the implementation each kernel runs and why the better candidates declined");
  cli::NpuArgs e_npu;
  auto* e_npu_opt = expl->add_option("--npu", e_npu.npu, cli::npu_help("also list the kernels this NPU leaves to its host, and why"));
  expl->add_option("--npu-dtype", e_npu.dtype, "with --npu: the estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(e_npu_opt);
  add_target(expl, false);

  cli::SimulateArgs sa;
  cli::TargetChoice s_tc;
  auto* sim = app.add_subcommand("simulate", "estimate a model on an NPU: latency, DRAM traffic, SRAM peak, MAC utilisation; roofline SVG, Perfetto trace");
  sim->add_option("model", sa.model, "case directory, IR .json file or .npubin (weights are not needed)")->required();
  sim->add_option("--npu", sa.npu, cli::npu_help("the NPU"))->required();
  sim->add_option("--dtype", sa.dtype, "operand dtype on the NPU: f32, f16, bf16, i16, i8 (default: the description's first)");
  sim->add_option("--svg", sa.svg, "write a roofline of the kernels here (SVG)");
  sim->add_option("--trace", sa.trace, "write the simulated timeline here (Chrome/Perfetto JSON: DMA, compute and host lanes)");
  sim->add_option("--json", sa.json, "write the estimate here (JSON: totals and every kernel)");
  auto* s_top = sim->add_option("--top", sa.top, "list the N longest kernels (default 10)")->check(CLI::Range(0, 1000000));
  sim->add_flag("--kernels", sa.kernels, "list every kernel")->excludes(s_top);
  sim->add_option_function<std::string>("--target", [&](const std::string& t) { s_tc.target = t, s_tc.target_given = true; },
                                        "target whose compiler prepares the program (its fusion decides the kernels; default cpu)")
      ->check(CLI::IsMember(cli::target_names()));

  bool o_markdown = false;
  std::string o_out;
  auto* opsc = app.add_subcommand("ops", "list registered ops, their ATen names and attribute defaults");
  auto* devs = app.add_subcommand("devices", "list the OpenCL devices the opencl target can use");

  std::string b_dir, b_weights = "auto";
  cli::BenchArgs ba;
  cli::InputArgs b_inputs;
  auto* bench = app.add_subcommand("bench", "time a model (case directory, IR .json or .npubin): compile, weight load, latency, throughput");
  bench->add_option("model", b_dir, "case directory, IR .json file or .npubin")->required();
  bench->add_option("--weights", b_weights, "auto, none, safetensors, synth, or a path");
  add_inputs(bench, b_inputs);
  bench->add_option("--warmup", ba.warmup, "untimed runs first (default 3)")->check(CLI::Range(0, 1000000));
  bench->add_option("--repeats", ba.repeats, "timed runs (default 20)")->check(CLI::Range(1, 1000000));
  bench->add_option("--json", ba.json, "write the results as JSON here");
  add_target(bench, false);

  std::string bl_prefill, bl_decode;
  cli::BenchArgs bla;
  bla.repeats = 5;
  auto* bench_llm = app.add_subcommand("bench-llm", "LLM: time to first token, decode step time vs cache position, bandwidth floor");
  bench_llm->add_option("prefill_dir", bl_prefill, "prefill case directory (weights come from here)")->required();
  bench_llm->add_option("decode_dir", bl_decode, "decode case directory (with kv_mapping.json)")->required();
  bench_llm->add_option("--positions", bla.positions, "cache positions: log2 (1, 2, 4, ..., max-1) or a comma list");
  bench_llm->add_option("--repeats", bla.repeats, "timed steps per position (default 5)")->check(CLI::Range(1, 1000000));
  bench_llm->add_flag("!--no-check", bla.check, "skip the check against the reference at every position");
  bench_llm->add_option("--json", bla.json, "write the results as JSON here");
  bench_llm->add_option("--svg", bla.svg, "write a chart of step time vs position here");
  add_target(bench_llm, false);
  auto* o_md = opsc->add_flag("--markdown", o_markdown, "print docs/operators.md: ops, attributes, targets, fusion patterns");
  opsc->add_option("-o,--output", o_out, "with --markdown: write to this file instead of stdout")->needs(o_md);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);    // prints help/version or the usage error
    return rc == 0 ? 0 : 2;  // exit codes: 0 pass, 1 results outside tolerance, 2 bad input
  }
  try {
    // --interpret without --target means the reference (the only target that interprets).
    if (tc.interpret && !tc.target_given) tc.target = "reference";
    if (threads > 0) set_threads(threads);
    if (*run) return cmd_run(ra, tc, prof);
    if (*gen) return cmd_generate(ga, tc);
    if (*comp) return cmd_compile(c_ir, c_out, tc, c_verify, c_embed, c_weights, c_npu);
    if (*insp) return cmd_inspect(i_path, i_json, i_buffers, i_no_kernels, i_npu);
    if (*expl) return cmd_explain(e_ir, tc, e_kernels, e_npu);
    if (*sim) return cli::cmd_simulate(sa, s_tc);
    if (*opsc) return cmd_ops(o_markdown, o_out);
    if (*bench) return cli::cmd_bench(b_dir, tc, ba, b_weights, b_inputs);
    if (*bench_llm) return cli::cmd_bench_llm(bl_prefill, bl_decode, tc, bla);
    if (*devs) return cmd_devices();
    if (*tlist) {
      for (const auto& t : cli::targets())
        std::printf("%-12s %s%s\n", t.name.c_str(), t.summary.c_str(), t.name == cli::default_target ? "  (default)" : "");
      return 0;
    }
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes are checked before allocating (docs/robustness.md); this is memory the machine ran out of.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim resource error: out of memory (the machine could not provide an allocation; a smaller model, batch or --threads may fit)\n");
    return 2;
  } catch (const std::exception& e) {
    // Every failure npusim knows of is an npusim::Error; anything else is a bug in npusim.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim internal error: an unexpected exception escaped (%s); please report it with the command line\n", e.what());
    return 2;
  }
  return 0;
}
