// Tokenizer throughput: encode ~1 MB of mixed text (prose, code, numbers, accents, CJK, emoji,
// whitespace runs) on one core, cold (fresh word cache) and warm, plus decode. The tokenizer is
// tests/data/tokenizers/qwen2_style/tokenizer.json when generated, else a byte-level BPE trained
// here on the same text (greedy pair merges, 1500 of them) with the Qwen2 split.
// NPUSIM_TOKENIZER_BENCH_TEXT=path writes the text, so bench/tokenizer_peer.py can time HF on it.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/byte_level.hpp"
#include "npusim/text/split_pattern.hpp"
#include "npusim/text/tokenizer.hpp"
#include "npusim/text/unicode.hpp"

using namespace npusim;
using namespace npusim::text;

namespace {

std::string mixed_text(std::size_t bytes) {
  static const char* const parts[] = {
      "The quick brown fox jumps over the lazy dog. ", "It's a tokenizer; we'll see how it performs! ",
      "def forward(self, x):\n    return self.proj(torch.relu(x)) * 0.5\n", "for (int i = 0; i < 1024; ++i) sum += a[i];\n",
      "Prices rose 3.75% to $1,234.56 on 2024-03-15. ", "Café, naïve, résumé, jalapeño, Zürich, Łódź. ",
      "今天天气很好，我们去公园散步。", "日本語のテキストも少し。", "Emoji: 😀 👍🏽 👨‍👩‍👧 🎉 ", "\n\n    indented\tline\n",
      "SELECT name, COUNT(*) FROM users GROUP BY name;\n", "Tiếng Việt có dấu. Ελληνικά. Русский текст. "};
  std::string s;
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  while (s.size() < bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s += parts[x % std::size(parts)];
  }
  return s;
}

// A small byte-level BPE learned from the text: the most frequent adjacent pair merges first.
std::string train_tokenizer_json(const std::string& text) {
  std::map<std::string, long> words;
  for (auto& w : split_text(std::string_view(text).substr(0, 200000), SplitPattern::qwen2)) {
    std::string m;
    append_byte_level(m, w);
    ++words[m];
  }
  std::vector<std::pair<std::vector<std::string>, long>> seqs;
  for (auto& [w, n] : words) {
    std::vector<std::string> syms;
    for (std::size_t i = 0; i < w.size();) {
      char32_t cp;
      std::size_t k = utf8_decode(w, i, cp);
      syms.push_back(w.substr(i, k));
      i += k;
    }
    seqs.emplace_back(std::move(syms), n);
  }
  ir::json vocab = ir::json::object(), merges = ir::json::array();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8_append(s, byte_to_unicode[static_cast<std::size_t>(b)]);
    vocab[s] = b;
  }
  for (int m = 0; m < 1500; ++m) {
    std::map<std::pair<std::string, std::string>, long> counts;
    for (auto& [syms, n] : seqs)
      for (std::size_t i = 0; i + 1 < syms.size(); ++i) counts[{syms[i], syms[i + 1]}] += n;
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [a, b] = best->first;
    if (!vocab.contains(a + b)) vocab[a + b] = static_cast<int>(vocab.size());
    merges.push_back(ir::json::array({a, b}));
    for (auto& [syms, n] : seqs) {
      std::vector<std::string> next;
      for (std::size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) next.push_back(a + b), ++i;
        else next.push_back(syms[i]);
      }
      syms = std::move(next);
    }
  }
  ir::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", std::string(qwen2_pattern)}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["added_tokens"] = {{{"id", static_cast<int>(vocab.size())}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}}};
  return j.dump();
}

const std::string& text() {
  static const std::string t = [] {
    std::string s = mixed_text(1 << 20);
    if (const char* out = std::getenv("NPUSIM_TOKENIZER_BENCH_TEXT")) std::ofstream(out, std::ios::binary) << s;
    return s;
  }();
  return t;
}

const std::string& tokenizer_json() {
  static const std::string j = [] {
    const std::string p = std::string(NPUSIM_BENCH_DATA) + "/tokenizers/qwen2_style/tokenizer.json";
    return std::filesystem::exists(p) ? read_file(p) : train_tokenizer_json(text());
  }();
  return j;
}

void BM_EncodeCold(benchmark::State& st) {
  for (auto _ : st) {
    st.PauseTiming();
    Tokenizer t = Tokenizer::from_json_string(tokenizer_json());  // a fresh word cache each time
    st.ResumeTiming();
    benchmark::DoNotOptimize(t.encode(text()).size());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * text().size()));
}

void BM_EncodeWarm(benchmark::State& st) {
  const Tokenizer t = Tokenizer::from_json_string(tokenizer_json());
  std::size_t n = t.encode(text()).size();
  for (auto _ : st) benchmark::DoNotOptimize(n = t.encode(text()).size());
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * text().size()));
  st.counters["tokens"] = static_cast<double>(n);
}

void BM_Decode(benchmark::State& st) {
  const Tokenizer t = Tokenizer::from_json_string(tokenizer_json());
  const auto ids = t.encode(text());
  for (auto _ : st) benchmark::DoNotOptimize(t.decode(ids).size());
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * text().size()));
}

void BM_Load(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(Tokenizer::from_json_string(tokenizer_json()).vocab_size());
}

}  // namespace

BENCHMARK(BM_EncodeCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
