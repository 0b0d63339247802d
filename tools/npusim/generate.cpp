// `npusim generate`: prefill + decode of an LLM, from token ids or text; --check against the fixtures.
#include <algorithm>
#include <cerrno>
#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>

#include "options.hpp"
#include "cli.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/runtime/text_generate.hpp"
#include "npusim/target/profiler.hpp"

namespace npusim::cli {

namespace fs = std::filesystem;

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

// Token ids must index the embedding table. `what` and `from` name where the ids come from (an
// option, the tokenizer, a config.json): that is what is wrong, not the model's ir.json.
void check_ids_in_vocab(const std::vector<std::int64_t>& ids, const ir::Graph& g, const std::string& what, const std::string& from = {}) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "aten.embedding.default" && !n.inputs.empty() && !g.tensor(n.inputs[0]).shape.empty()) {
      const std::int64_t vocab = g.tensor(n.inputs[0]).shape[0];
      for (auto id : ids)
        if (id < 0 || id >= vocab)
          throw Error(ErrorCode::attr, what + ": token id outside the vocabulary of the model's embedding (" + std::to_string(vocab) + " rows in " + g.source +
                                           (from.empty() ? ")" : "; do the ids' source and the model belong together?)"),
                      {.file = from, .expected = "0 <= id < " + std::to_string(vocab), .found = std::to_string(id)});
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

// generate --check's pass rule: relative L2 of the logits (prefill, each step), their cosine,
// whether the prefill's top-1 must match, and the greedy tokens that must match. Quantized
// weights (--weights-dtype) have tolerances of their own, set from the tiny Qwen2 and
// Qwen2.5-1.5B fixtures (docs/quantization.md, "Quality"): the error is the format's (the reference
// target with the same weights gives the same cosines), and the fixtures' synthetic weights have
// near-flat logits whose close greedy tokens flip.
struct CheckTolerances {
  double prefill, step, min_cos;
  bool top1 = true;
  int num = 1, den = 1, less = 0;  // tokens that must match: steps * num / den - less
  const char* format = nullptr;    // quantized weights: their format
  const char* tokens = "";
  int need(int steps) const { return steps * num / den - less; }
};

CheckTolerances check_tolerances(const TargetChoice& tc, std::optional<double> given) {
  CheckTolerances t{1e-3, 1e-3, 0.99999};
  if (half_dtype(tc.dtype)) t = {0.035, 0.04, 0.9995, true, 1, 1, 1};
  if (const auto f = quant::parse_block_format(tc.weights_dtype)) {
    const double r = *quantized_tolerance(tc.weights_dtype);
    // The prefill's top-1 is not required: its rows are quantized per block as the decode's are (the
    // CPU target's block GEMM), and a close top-1 of the fixtures' near-flat logits moves as a
    // decode step's token may (tiny Qwen2, f32, q8_0: 219 for 208 at cosine 0.99977).
    if (*f == quant::BlockFormat::q8_0) t = {r, r, 0.998, false, 1, 2, 0, "q8_0", "half"};
    else t = {r, r, 0.9, false, 1, 4, 0, "q4_0", "a quarter"};
  }
  if (given) t.prefill = t.step = *given;
  return t;
}

namespace {

// What the command line says to generate from and stop at: prompt ids (given, or the text prompt
// as tokenized), stop ids (--eos, or the model's), where each came from, and the tokenizer in
// text mode. All of it checked before anything is compiled or loaded.
struct PromptInputs {
  std::vector<std::int64_t> prompt, eos;
  std::string prompt_source = "--prompt-ids", eos_source;
  std::optional<text::ModelText> mt;
  std::optional<TextPrompt> tp;
};

PromptInputs read_prompt_inputs(const GenerateArgs& a, FILE* info) {
  PromptInputs in;
  if (!a.prompt_ids.empty()) in.prompt = parse_ids(a.prompt_ids, "--prompt-ids");
  if (!a.prompt_ids_file.empty()) in.prompt = parse_ids(read_file(a.prompt_ids_file), a.prompt_ids_file), in.prompt_source = a.prompt_ids_file;
  if (!a.eos.empty()) in.eos = parse_ids(a.eos, "--eos"), in.eos_source = "--eos";
  if (!a.text.text_mode()) return in;
  in.mt = open_model_text(a.text, tokenizer_search_dirs({a.weights == "auto" || a.weights == "safetensors" || a.weights == "synth" ? "" : a.weights,
                                                         a.prefill_dir, a.decode_dir}));
  std::fprintf(info, "tokenizer: %s (vocabulary %zu, %zu added tokens)\n", in.mt->tokenizer_path().c_str(), in.mt->tokenizer().vocab_size(),
               in.mt->tokenizer().added_tokens().size());
  if (a.text.prompt || !a.text.prompt_file.empty()) {
    in.tp = encode_prompt(*in.mt, a.text);
    in.prompt = in.tp->ids;
    in.prompt_source = a.text.prompt ? "--prompt (as tokenized)" : a.text.prompt_file + " (as tokenized)";
  }
  // --eos when given, else the model's stop ids (docs/tokenizer.md).
  text::EosIds s = in.eos.empty() ? in.mt->stop_ids(in.tp && in.tp->chat ? &*in.tp->chat : nullptr) : text::EosIds{in.eos, "--eos"};
  in.eos = s.ids, in.eos_source = s.source;
  if (in.eos.empty()) std::fprintf(info, "stop ids: none (no eos_token_id in generation_config.json or config.json beside the tokenizer; give --eos)\n");
  else std::fprintf(info, "stop ids: %s (from %s)\n", printable(describe_ids(in.mt->tokenizer(), in.eos)).c_str(), printable(s.source).c_str());
  return in;
}

// The prompt and stop ids against the model: inside its vocabulary, the prompt inside its KV cache;
// with neither a prompt nor --check, the prefill case's own prompt (io.safetensors) must exist.
void check_prompt_inputs(const GenerateArgs& a, const PromptInputs& in, const runtime::ModelDir& pc, const llm::KvMapping& map) {
  if (!in.prompt.empty()) {
    check_ids_in_vocab(in.prompt, pc.graph, in.prompt_source, in.tp ? in.mt->tokenizer_path() : a.prompt_ids_file);
    if (static_cast<std::int64_t>(in.prompt.size()) > map.max_cache_len)
      throw Error(ErrorCode::resource, "prompt longer than the KV cache", {.file = a.decode_dir + "/kv_mapping.json",
                  .expected = "<= " + std::to_string(map.max_cache_len) + " tokens", .found = std::to_string(in.prompt.size())});
  }
  check_ids_in_vocab(in.eos, pc.graph, "stop ids", in.eos_source.empty() || in.eos_source == "--eos" ? std::string() : in.eos_source);
  if (!a.check && in.prompt.empty() && !pc.io)
    throw Error(ErrorCode::io, "no prompt: give --prompt, --prompt-ids or --prompt-ids-file (the prefill case has no io.safetensors)", {.file = a.prefill_dir});
}

// "stopped: ...; time to first token ...; decode ... ms/token", and rank 0's link bytes under mpirun.
void print_generation_summary(const llm::Generation& g, std::size_t prompt_len, std::int64_t cache_len,
                              std::pair<std::uint64_t, std::uint64_t> link_at_first, bool text_mode, FILE* info) {
  std::vector<double> st = g.step_ms;
  std::sort(st.begin(), st.end());
  double total = 0;
  for (double x : st) total += x;
  std::fprintf(info, "stopped: %s", g.stop.c_str());
  if (g.stop == "eos" && !g.tokens.empty()) std::fprintf(info, " (id %lld)", static_cast<long long>(g.tokens.back()));
  if (g.stop == "cache_full")
    std::fprintf(info, " (the KV cache holds %lld positions, all used: %zu prompt + %zu generated tokens)", static_cast<long long>(cache_len),
                 prompt_len, g.tokens.size());
  std::fprintf(info, "\ntime to first token %.1f ms", g.prefill_ms);
  if (!st.empty())
    std::fprintf(info, "; decode %.1f ms/token median (p10 %.1f, p90 %.1f), %.2f tok/s", st[st.size() / 2], st[st.size() / 10], st[st.size() * 9 / 10],
                 1000.0 * static_cast<double>(st.size()) / total);
  std::fprintf(info, "\n");
  if (const runtime::StageLink* l = stage_link(); l && !text_mode) {
    const double steps = static_cast<double>(std::max<std::size_t>(g.step_ms.size(), 1));
    std::fprintf(info, "stage link (rank 0): prefill sent %s, received %s; decode %s sent and %s received per step\n",
                 program::human_bytes(static_cast<std::int64_t>(link_at_first.first)).c_str(),
                 program::human_bytes(static_cast<std::int64_t>(link_at_first.second)).c_str(),
                 program::human_bytes(static_cast<std::int64_t>(static_cast<double>(l->bytes_sent - link_at_first.first) / steps)).c_str(),
                 program::human_bytes(static_cast<std::int64_t>(static_cast<double>(l->bytes_received - link_at_first.second) / steps)).c_str());
  }
}

// Generation from the prompt (the user's, else the prefill case's): tokens, or text in text mode, as they come.
llm::Generation generate_free(const GenerateArgs& a, llm::LlmPrograms& model, const runtime::ModelDir& pc, const llm::KvMapping& map,
                              const PromptInputs& in, FILE* info) {
  std::vector<std::int64_t> prompt = in.prompt;
  if (prompt.empty()) {
    Tensor ids = pc.io->tensor(model.prefill_roles.input_ids);
    prompt.assign(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
  }
  llm::GenerateOptions go;
  go.max_new_tokens = a.max_new_tokens;
  go.sampling = a.sampling;
  go.eos = in.eos;
  std::fprintf(info, "prompt: %zu tokens%s; generating up to %zu tokens (%s)\n", prompt.size(), in.tp ? (" from " + in.tp->what).c_str() : "",
               go.max_new_tokens,
               go.sampling.greedy() ? "greedy" : ("temperature " + fmt_num(go.sampling.temperature) + ", top-k " + std::to_string(go.sampling.top_k) +
                                                  ", top-p " + fmt_num(go.sampling.top_p) + ", seed " + std::to_string(go.sampling.seed)).c_str());
  llm::Generation g;
  std::pair<std::uint64_t, std::uint64_t> link_at_first{0, 0};  // rank 0's link bytes when the first token came (after the prefill)
  const bool text_mode = a.text.text_mode();
  if (text_mode) {
    std::fflush(info);
    llm::TextGeneration tg = llm::generate_text(model, in.mt->tokenizer(), prompt, go, [](std::string_view piece) {
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
    g = llm::generate(model, prompt, go, [&](std::int64_t t, std::size_t i) {
      if (i == 0 && stage_link()) link_at_first = {stage_link()->bytes_sent, stage_link()->bytes_received};
      std::printf(" %lld", static_cast<long long>(t));
      std::fflush(stdout);
    });
    std::printf("\n");
  }
  print_generation_summary(g, prompt.size(), map.max_cache_len, link_at_first, text_mode, info);
  return g;
}

// --check: the fixture's prompt, teacher-forced, each step's logits and greedy token against the
// references; prints PASS or FAIL and returns the exit code.
int generate_check(const GenerateArgs& a, const TargetChoice& tc, llm::LlmPrograms& model, const runtime::ModelDir& pc, const runtime::ModelDir& dc,
                   const std::function<void(const std::vector<double>&)>& print_profile) {
  if (!pc.io) throw Error(ErrorCode::io, "--check needs the prefill case's io.safetensors (prompt ids and expected logits)", {.file = a.prefill_dir});
  if (!dc.io || !dc.io->find("decode_tokens") || !dc.io->find("decode_logits"))
    throw Error(ErrorCode::io, "decode case has no decode_tokens/decode_logits to check against", {.file = a.decode_dir + "/io.safetensors"});
  Tensor ids = pc.io->tensor(model.prefill_roles.input_ids);
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
  Tensor tokens = dc.io->tensor("decode_tokens");
  Tensor dlogits = dc.io->tensor("decode_logits");
  Tensor plogits = pc.io->tensor(pc.graph.tensor(pc.graph.outputs.at(0)).name);
  const CheckTolerances tol = check_tolerances(tc, a.tol);
  if (tol.format) std::printf("weights quantized to %s: tolerances rel_l2 <= %.3g, cosine >= %.4g, greedy tokens: %s\n", tol.format, tol.step, tol.min_cos, tol.tokens);
  bool ok = true;
  harness::GenerateCallbacks cb;
  cb.on_prefill = [&](const harness::GenerateCheck& r) {
    // q4_0 weights may move a close top-1 (counted in the greedy tokens, not required here).
    bool pass = r.prefill.rel_l2 <= tol.prefill && r.prefill.cosine >= tol.min_cos && (!tol.top1 || r.prefill_top1 == r.prefill_top1_ref);
    ok = ok && pass;
    std::printf("prefill  %5.0f ms  logits rel_l2 %.3g  cos %.7f  top1 %lld (ref %lld)  %s\n", r.prefill_ms, r.prefill.rel_l2, r.prefill.cosine,
                static_cast<long long>(r.prefill_top1), static_cast<long long>(r.prefill_top1_ref), pass ? "OK" : "FAIL");
    std::fflush(stdout);
  };
  cb.on_step = [&](const harness::StepCheck& s, std::size_t i, std::size_t) {
    bool pass = s.metrics.rel_l2 <= tol.step && s.metrics.cosine >= tol.min_cos;
    ok = ok && pass;
    std::printf("step %zu pos %-5lld %5.0f ms  logits rel_l2 %.3g  cos %.7f  token %lld (ref %lld) %s%s\n", i,
                static_cast<long long>(s.position), s.ms, s.metrics.rel_l2, s.metrics.cosine, static_cast<long long>(s.token),
                static_cast<long long>(s.token_ref), s.token == s.token_ref ? "same" : "DIFFERENT", pass ? "" : "  FAIL");
    std::fflush(stdout);
  };
  std::vector<std::int64_t> tok(tokens.span<std::int64_t>().begin(), tokens.span<std::int64_t>().end());
  harness::GenerateCheck r = harness::check_generation(model, prompt, plogits, tok, dlogits, cb);  // checks the references' sizes
  std::vector<double> step_ms;
  for (const auto& s : r.steps) step_ms.push_back(s.ms);
  print_profile(step_ms);
  const auto steps = static_cast<int>(r.steps.size());
  const int need = a.min_matches >= 0 ? a.min_matches : tol.need(steps);
  ok = ok && r.token_matches >= need;
  double step_total = 0;
  for (double ms : step_ms) step_total += ms;
  std::printf("greedy tokens: %d/%d match the reference (need %d)\n", r.token_matches, steps, need);
  std::printf("time to first token %.1f ms; decode %.1f ms/token (%.2f tok/s)\n", r.prefill_ms, step_total / steps, 1000.0 * steps / step_total);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int cmd_generate(const GenerateArgs& a, const TargetChoice& tc) {
  validate(tc);
  // Text mode (a text prompt or a tokenizer): the generated text streams to stdout, everything
  // else (what was loaded, timings) goes to stderr, so the text can be piped.
  FILE* info = a.text.text_mode() ? stderr : stdout;
  const PromptInputs in = read_prompt_inputs(a, info);
  using runtime::ModelDir;
  ModelDir pc = ModelDir::open(a.prefill_dir, a.weights);
  ModelDir dc = ModelDir::open(a.decode_dir, "none");
  llm::KvMapping map = llm::KvMapping::read((fs::path(a.decode_dir) / "kv_mapping.json").string());
  map.complete(pc.graph);
  if (!pc.weights) throw Error(ErrorCode::weights, "prefill case has no weights (weights.safetensors or synth.json; or give --weights)", {.file = a.prefill_dir});
  for (const auto& n : pc.weights->notes()) std::fprintf(info, "weights: %s\n", n.c_str());
  check_prompt_inputs(a, in, pc, map);
  std::fprintf(info, "prefill %s: %zu nodes; decode %s: %zu nodes; %zu layers, prefill %lld tokens, cache %lld\n", pc.name.c_str(),
               pc.graph.nodes.size(), dc.name.c_str(), dc.graph.nodes.size(), map.layers.size(), static_cast<long long>(map.prefill_seq_len),
               static_cast<long long>(map.max_cache_len));
  // --check compares every row of the prefill's logits; generation reads the last prompt row only.
  const ir::Graph pg = a.check ? pc.graph : prefill_for_generation(pc.graph, info);
  // One set of weights for both programs: loaded once, shared.
  std::unordered_map<std::string, Tensor> cache;
  auto t0 = clock_type::now();
  Prepared prefill = prepare(tc, pg, pc.weights.get(), &cache, info, 0);
  Prepared decode = prepare(tc, dc.graph, pc.weights.get(), &cache, info, 1);
  std::fprintf(info, "weights from %s ready in %.1f s\n", pc.weights->path().c_str(), seconds_since(t0));
  cache.clear();
  std::fprintf(info, "target: %s\n", prefill.runner->describe().c_str());
  print_device(tc, info);

  llm::LlmPrograms model(*prefill.runner, *decode.runner, map, pg, dc.graph);
  if (serving()) {  // another rank's process: its stage of both programs, until rank 0 is done
    llm::Session keeps_kv(model);  // the KV cache of this stage's layers stays here between steps
    runtime::ProgramRunner* const programs[] = {prefill.plan, decode.plan};
    runtime::serve_stages(*stage_link(), programs);
    return 0;
  }
  Profiler prof;
  if (a.profile) {
    if (!decode.plan) throw Error(ErrorCode::unsupported, "--profile needs compiled programs (not --interpret)");
    decode.plan->set_profiler(&prof);
  }
  // --profile: the decode steps' kernels, printed after the run.
  auto print_profile = [&](const std::vector<double>& step_ms, FILE* out) {
    if (!a.profile) return;
    decode.plan->set_profiler(nullptr);
    print_decode_profile(prof, step_ms, a.trace, out);
  };
  if (a.check) return generate_check(a, tc, model, pc, dc, [&](const std::vector<double>& ms) { print_profile(ms, stdout); });
  const llm::Generation g = generate_free(a, model, pc, map, in, info);
  print_profile(g.step_ms, info);
  return 0;
}

Registered add_generate(Shared& s) {
  auto ga = std::make_shared<GenerateArgs>();
  auto* gen = s.app.add_subcommand("generate", "prefill + decode an LLM (teacher-forced --check against the fixtures)");
  gen->add_option("prefill_dir", ga->prefill_dir, "prefill case directory")->required();
  gen->add_option("decode_dir", ga->decode_dir, "decode case directory (with kv_mapping.json)")->required();
  auto* gen_check = gen->add_flag("--check", ga->check, "compare prefill/decode logits and greedy tokens with the reference");
  gen->add_option("--weights", ga->weights, "auto, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  gen->add_option("--tol", ga->tol, "with --check: relative L2 tolerance for logits")->check(finite_range(0.0, 1.0, true))->needs(gen_check);
  gen->add_option("--min-token-matches", ga->min_matches, "with --check: greedy tokens that must match (default: all; half dtypes: all but one; q8 weights: half; q4 weights: a quarter)")
      ->check(integer_in(0, INT32_MAX))->needs(gen_check);
  gen->add_option("--max-new-tokens", ga->max_new_tokens, "tokens to generate (default 16; stops earlier at an --eos id or the cache's end)")
      ->check(integer_in(1, std::uint64_t{1} << 40))->excludes(gen_check);
  auto* gen_ids = gen->add_option("--prompt-ids", ga->prompt_ids, "prompt token ids, e.g. 1,2,3 (default: the prefill case's input_ids)")->excludes(gen_check);
  auto* gen_ids_file = gen->add_option("--prompt-ids-file", ga->prompt_ids_file, "file of prompt token ids (whitespace or comma separated)")
      ->excludes(gen_check)->excludes(gen_ids)->check(CLI::ExistingFile);
  auto* gen_prompt = gen->add_option("--prompt", ga->text.prompt, "prompt text (tokenized with the model's tokenizer.json; the output is text)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  auto* gen_prompt_file = gen->add_option("--prompt-file", ga->text.prompt_file, "file holding the prompt text (UTF-8)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file)->excludes(gen_prompt)->check(CLI::ExistingFile);
  gen->add_option("--tokenizer", ga->text.tokenizer, "tokenizer.json, or a directory with it (default: next to --weights or the cases)")
      ->excludes(gen_check)->check(CLI::ExistingPath);
  auto* gen_chat = gen->add_flag("--chat", ga->text.chat, "the prompt is a user message: apply the model's chat template (ChatML, Llama 3)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  gen->add_option("--system", ga->text.system, "with --chat: the system message (default: the template's own, if it has one)")->needs(gen_chat);
  gen->add_option("--chat-format", ga->text.chat_format, "with --chat: render this form instead of the template's")
      ->check(CLI::IsMember({"chatml", "llama3"}))->needs(gen_chat);
  auto* gen_eos = gen->add_option("--eos", ga->eos, "stop after generating any of these ids (comma separated)")->excludes(gen_check);
  auto* gen_temp = gen->add_option("--temperature", ga->sampling.temperature, "sampling temperature (0: greedy)")->check(finite_range(0.0, 100.0))->excludes(gen_check);
  auto* gen_top_k = gen->add_option("--top-k", ga->sampling.top_k, "sample among the k most likely tokens (0: all)")->check(integer_in(0, std::uint64_t{1} << 31))->excludes(gen_check);
  auto* gen_top_p = gen->add_option("--top-p", ga->sampling.top_p, "sample among the smallest set reaching this probability (1: all)")
      ->check(finite_range(0.0, 1.0, true))->excludes(gen_check);
  auto* gen_seed = gen->add_option("--seed", ga->sampling.seed, "sampling seed (with --temperature)")->check(integer_in(0, UINT64_MAX))->excludes(gen_check);
  // Flags that do not apply are errors, never ignored (README): sampling options without a
  // temperature (greedy decoding uses none of them), an --eos that lists no id.
  gen->callback([gen_chat, gen_prompt, gen_prompt_file, gen_eos, gen_temp, gen_top_k, gen_top_p, gen_seed, ga] {
    if (gen_chat->count() && !gen_prompt->count() && !gen_prompt_file->count())
      throw CLI::ValidationError("--chat", "needs the user's message: --prompt TEXT or --prompt-file FILE");
    for (const CLI::Option* o : {gen_top_k, gen_top_p, gen_seed})
      if (o->count() && !(gen_temp->count() && ga->sampling.temperature > 0))
        throw CLI::ValidationError(o->get_name(), "applies to sampling: give --temperature > 0 too (without it decoding is greedy and takes no " +
                                                      o->get_name() + ")");
    if (gen_eos->count() && ga->eos.find_first_not_of(" ,\t\n") == std::string::npos)
      throw CLI::ValidationError("--eos", "no token ids (expected ids such as 2,0, found '" + ga->eos + "')");
  });
  auto* gen_profile = gen->add_flag("--profile", ga->profile, "time every decode kernel; print a table by kernel kind");
  gen->add_option("--trace", ga->trace, "with --profile: write a Chrome/Perfetto trace of the decode steps")->needs(gen_profile);
  add_target_options(gen, s.tc, true);
  return {gen, [ga, &tc = s.tc] { return cmd_generate(*ga, tc); }};
}

}  // namespace npusim::cli
