// qwen_generate: compile an LLM's prefill and decode programs (Qwen2 tiny, Qwen2.5-1.5B, or any
// pair with a kv_mapping.json) for the CPU target, generate, report TTFT and tokens/s. With a
// tokenizer (a Hugging Face tokenizer.json) it takes a text prompt, or a chat message, and streams
// text; without one it takes and prints token ids.
//   qwen_generate tests/data/models/qwen2_tiny_prefill tests/data/models/qwen2_tiny_decode --max-new-tokens 16
//   ... --tokenizer tests/data/text_gen --prompt "The quick brown fox"
//   ... --tokenizer tests/data/text_gen --chat --system "You are terse." --prompt "Hi!"
//   ... --temperature 0.8 --top-k 40 --top-p 0.9 --seed 7 --prompt-ids 1,2,3 --eos 151643 --dtype bf16
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <npusim/npusim.hpp>
#include <optional>
#include <sstream>

namespace {

struct Args {
  std::string prefill_dir, decode_dir, dtype = "f32", prompt_ids, tokenizer, prompt, system;
  bool chat = false, eos_given = false;
  npusim::llm::GenerateOptions gen;
};

std::vector<std::int64_t> parse_ids(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) ids.push_back(std::stoll(item));
  return ids;
}

template <class DType>
int generate(const Args& a) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  // The cases give the IR graphs (the driver finds token ids, positions and mask by structure),
  // the weights (weights.safetensors or synth.json) and the prompt (io.safetensors).
  const auto pc = npusim::runtime::ModelDir::open(a.prefill_dir), dc = npusim::runtime::ModelDir::open(a.decode_dir);
  if (!pc.weights) throw npusim::Error(npusim::ErrorCode::weights, "the prefill case has no weights", {.file = a.prefill_dir});
  const auto map = npusim::llm::KvMapping::read(a.decode_dir + "/kv_mapping.json");

  npusim::Pipeline<npusim::CpuTarget, DType> prefill(a.prefill_dir + "/ir.json"), decode(a.decode_dir + "/ir.json");
  std::unordered_map<std::string, npusim::Tensor> cache;  // both programs bind each weight once
  npusim::weights::BindOptions bind;
  bind.cache = &cache;
  prefill.load_weights(*pc.weights, bind);
  decode.load_weights(*pc.weights, bind);
  cache.clear();
  std::printf("compiled prefill (%lld nodes) and decode (%lld nodes) for cpu (%s), weights bound: %.0f ms\n",
              static_cast<long long>(prefill.program().stats.nodes_in), static_cast<long long>(decode.program().stats.nodes_in),
              std::string(DType::name).c_str(), std::chrono::duration<double, std::milli>(Clock::now() - t0).count());

  npusim::llm::LlmPrograms model(prefill.runner(), decode.runner(), map, pc.graph, dc.graph);
  std::vector<std::int64_t> prompt;
  if (!a.tokenizer.empty()) {
    // Text: the tokenizer directory also gives the chat template and the EOS ids.
    const auto mt = npusim::text::ModelText::open(a.tokenizer);
    npusim::llm::GenerateOptions gen = a.gen;
    std::optional<npusim::text::ChatTemplate> chat;
    if (a.chat) chat = mt.chat();
    if (!a.eos_given) gen.eos = mt.stop_ids(chat ? &*chat : nullptr).ids;
    std::vector<npusim::text::ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    auto print = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
    std::printf("%s; %s\ntext: ", chat ? "chat" : "text", gen.sampling.greedy() ? "greedy" : "sampling");
    const npusim::llm::TextGeneration t = chat ? npusim::llm::generate_chat(model, mt.tokenizer(), *chat, messages, gen, print)
                                               : npusim::llm::generate_text(model, mt.tokenizer(), a.prompt, gen, print);
    std::printf("\nprompt: %zu tokens; generated %zu; stopped: %s\ntime to first token %.1f ms\n", t.prompt.size(), t.generation.tokens.size(),
                t.generation.stop.c_str(), t.generation.prefill_ms);
    return 0;
  }
  if (!a.prompt_ids.empty()) {
    prompt = parse_ids(a.prompt_ids);
  } else {
    if (!pc.io) throw npusim::Error(npusim::ErrorCode::io, "no --prompt-ids and no io.safetensors", {.file = a.prefill_dir});
    auto ids = pc.io->tensor(model.prefill_roles.input_ids).span<std::int64_t>();
    prompt.assign(ids.begin(), ids.end());
  }
  std::printf("prompt: %zu tokens; %s\ntokens:", prompt.size(), a.gen.sampling.greedy() ? "greedy" : "sampling");
  npusim::llm::Generation g = npusim::llm::generate(model, prompt, a.gen, [](std::int64_t token, std::size_t) {
    std::printf(" %lld", static_cast<long long>(token));
    std::fflush(stdout);
  });
  double decode_ms = 0;
  for (double ms : g.step_ms) decode_ms += ms;
  std::printf("\nstopped: %s\ntime to first token %.1f ms", g.stop.c_str(), g.prefill_ms);
  if (!g.step_ms.empty()) std::printf("; decode %.2f ms/token, %.1f tok/s", decode_ms / g.step_ms.size(), 1000.0 * g.step_ms.size() / decode_ms);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a;
  bool bad = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    auto& s = a.gen.sampling;
    if (k == "--max-new-tokens") a.gen.max_new_tokens = std::stoul(v), ++i;
    else if (k == "--temperature") s.temperature = std::stod(v), ++i;
    else if (k == "--top-k") s.top_k = std::stoll(v), ++i;
    else if (k == "--top-p") s.top_p = std::stod(v), ++i;
    else if (k == "--seed") s.seed = std::stoull(v), ++i;
    else if (k == "--eos") a.gen.eos = parse_ids(v), a.eos_given = true, ++i;
    else if (k == "--tokenizer") a.tokenizer = v, ++i;
    else if (k == "--prompt") a.prompt = v, ++i;
    else if (k == "--system") a.system = v, ++i;
    else if (k == "--chat") a.chat = true;
    else if (k == "--prompt-ids") a.prompt_ids = v, ++i;
    else if (k == "--dtype") a.dtype = v, ++i;
    else if (k.starts_with("--")) bad = true;
    else if (a.prefill_dir.empty()) a.prefill_dir = k;
    else if (a.decode_dir.empty()) a.decode_dir = k;
    else bad = true;
  }
  const bool text_args = !a.prompt.empty() || a.chat || !a.system.empty();
  if (bad || a.decode_dir.empty() || (a.dtype != "f32" && a.dtype != "bf16" && a.dtype != "f16") || (text_args && a.tokenizer.empty()) ||
      (!a.tokenizer.empty() && (a.prompt.empty() || !a.prompt_ids.empty())) || (!a.system.empty() && !a.chat)) {
    std::fprintf(stderr,
                 "usage: qwen_generate PREFILL_DIR DECODE_DIR [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]\n"
                 "                     [--seed S] [--eos ID,...] [--dtype f32|bf16|f16]\n"
                 "                     [--prompt-ids ID,...] | [--tokenizer FILE|DIR --prompt TEXT [--chat [--system TEXT]]]\n");
    return 2;
  }
  a.gen.sampling.validate();
  if (a.dtype == "bf16") return generate<npusim::Bf16>(a);
  if (a.dtype == "f16") return generate<npusim::F16>(a);
  return generate<npusim::F32>(a);
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
