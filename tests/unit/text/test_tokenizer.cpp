// The tokenizer: byte-level table, split matchers (expectations derived by hand from the regex
// semantics, written next to each case), NFC, hand-made tokenizer.json files with exact ids,
// streaming decode, clear errors on bad files, and conformance with HF over generated cases.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "npusim/ir/json.hpp"
#include "npusim/text/bpe.hpp"
#include "npusim/text/byte_level.hpp"
#include "npusim/text/pipeline.hpp"
#include "npusim/text/split_pattern.hpp"
#include "npusim/text/tokenizer.hpp"
#include "npusim/text/unicode.hpp"

using namespace npusim;
using namespace npusim::text;
using Ids = std::vector<std::int64_t>;
using Strs = std::vector<std::string>;

namespace {

// A byte-level vocabulary: token of byte b is its GPT-2 character, with id b.
ir::json byte_vocab() {
  ir::json v = ir::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8_append(s, byte_to_unicode[static_cast<std::size_t>(b)]);
    v[s] = b;
  }
  return v;
}

// Qwen2-style: NFC, Split(qwen2) + ByteLevel(use_regex false), ByteLevel decoder.
ir::json qwen_like(bool pair_merges) {
  ir::json v = byte_vocab();
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"l", "l"}, {"h", "e"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}, {"Ġwor", "l"}, {"Ġworl", "d"}};
  ir::json m = ir::json::array();
  int next = 256;
  for (const auto& [a, b] : merges) {
    v[a + b] = next++;
    if (pair_merges) m.push_back(ir::json::array({a, b}));
    else m.push_back(a + " " + b);
  }
  ir::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", v}, {"merges", m}, {"dropout", nullptr}, {"byte_fallback", false}};
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", std::string(qwen2_pattern)}}}, {"behavior", "Isolated"}, {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["post_processor"] = {{"type", "ByteLevel"}};
  j["added_tokens"] = {{{"id", 265}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}},
                       {{"id", 266}, {"content", "<|im_start|>"}, {"special", true}, {"normalized", false}}};
  return j;
}

// Llama 2 style: Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, byte_fallback, <s> template.
ir::json llama2_like() {
  ir::json v = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) v[BpeModel::byte_token(static_cast<unsigned char>(b))] = 3 + b;
  int next = 259;
  for (const char* t : {"▁", "h", "e", "l", "o"}) v[t] = next++;
  ir::json m = ir::json::array();
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{{"▁", "h"}, {"e", "l"}, {"▁h", "el"}, {"l", "o"}, {"▁hel", "lo"}}) {
    v[a + b] = next++;
    m.push_back(a + " " + b);
  }
  ir::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", v}, {"merges", m}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}};
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", "▁"}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["added_tokens"] = {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
                       {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                       {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}}};
  return j;
}

Tokenizer load(const ir::json& j) { return Tokenizer::from_json_string(j.dump(), "test.json"); }

std::string error_of(const ir::json& j) {
  try {
    load(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ByteLevel, Gpt2ByteToUnicodeTable) {
  std::set<char32_t> seen(byte_to_unicode.begin(), byte_to_unicode.end());
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_to_unicode['A'], U'A');
  EXPECT_EQ(byte_to_unicode[' '], 0x120u);   // 'Ġ'
  EXPECT_EQ(byte_to_unicode['\n'], 0x10Au);  // 'Ċ'
  EXPECT_EQ(byte_to_unicode[0], 0x100u);
  EXPECT_EQ(byte_to_unicode[0x7F], 0x121u);  // DEL follows the 33 control bytes and space
  EXPECT_EQ(byte_to_unicode[0xAD], 0x143u);  // soft hyphen is the last remapped byte
  EXPECT_EQ(byte_to_unicode[0xE9], 0xE9u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(byte_of_char(byte_to_unicode[static_cast<std::size_t>(b)]), b);
  EXPECT_EQ(byte_level_token_bytes("ĠhelloĊ"), " hello\n");
  EXPECT_EQ(byte_level_token_bytes("<|im_end|> x"), "<|im_end|> x");  // a plain space: token kept as is
}

TEST(Unicode, CategoriesAndWhitespace) {
  EXPECT_TRUE(is_letter(U'é'));
  EXPECT_TRUE(is_letter(U'中'));
  EXPECT_TRUE(is_letter(0x3042));   // hiragana a
  EXPECT_FALSE(is_letter(0x1F600)); // emoji: So
  EXPECT_TRUE(is_number(0x0663));   // Arabic-Indic 3 (Nd)
  EXPECT_TRUE(is_number(0x00BD));   // ½ (No)
  EXPECT_TRUE(is_number(0x2164));   // Roman numeral five (Nl)
  EXPECT_FALSE(is_number(U'a'));
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_TRUE(is_whitespace(0x85));
  EXPECT_FALSE(is_whitespace(0x200B));  // zero width space is not White_Space
  EXPECT_FALSE(is_whitespace(0x1C));    // Python's isspace says yes; Unicode White_Space says no
}

TEST(Unicode, NfcComposesReordersAndKeepsExclusions) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                      // e + U+0301 -> é
  EXPECT_EQ(nfc("A\xCC\x8A"), "\xC3\x85");                      // A + ring -> Å (U+00C5)
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                   // Angstrom sign U+212B -> Å (singleton)
  EXPECT_EQ(nfc("a\xCC\xA3\xCC\x82"), "\xE1\xBA\xAD");          // a + dot below + circumflex -> ậ
  EXPECT_EQ(nfc("a\xCC\x82\xCC\xA3"), "\xE1\xBA\xAD");          // same marks in the other order
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // Hangul L V T -> 각
  EXPECT_EQ(nfc("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");   // U+0958 is a composition exclusion
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc("\xEF\xAC\x81"), "\xEF\xAC\x81");               // ﬁ ligature: compatibility only, kept
}

// Expectations from the Qwen2 regex, alternative by alternative:
// (?i:'s|...) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ' ?[^\s\p{L}\p{N}]+[\r\n]*' | \s*[\r\n]+ | \s+(?!\S) | \s+
TEST(SplitPattern, Qwen2) {
  const auto q = [](std::string_view s) { return split_text(s, SplitPattern::qwen2); };
  EXPECT_EQ(q("Hello world"), (Strs{"Hello", " world"}));          // alt 2 takes the leading space
  EXPECT_EQ(q("I'm"), (Strs{"I", "'m"}));                          // contraction after the letter run
  EXPECT_EQ(q("I'M"), (Strs{"I", "'M"}));                          // (?i:...) folds case
  EXPECT_EQ(q("abc123"), (Strs{"abc", "1", "2", "3"}));            // \p{N}: one digit per piece
  EXPECT_EQ(q("3.14"), (Strs{"3", ".", "1", "4"}));
  EXPECT_EQ(q("你好世界"), (Strs{"你好世界"}));                      // Lo is \p{L}
  EXPECT_EQ(q("  hello"), (Strs{" ", " hello"}));                  // \s+(?!\S) leaves one space
  EXPECT_EQ(q("x   "), (Strs{"x", "   "}));                         // at the end all spaces go together
  EXPECT_EQ(q("a\n\nb"), (Strs{"a", "\n\n", "b"}));
  EXPECT_EQ(q("a  \n  b"), (Strs{"a", "  \n", " ", " b"}));        // \s*[\r\n]+ stops at the last newline
  EXPECT_EQ(q("!hello"), (Strs{"!hello"}));                        // one non-letter joins a letter run
  EXPECT_EQ(q("!!!hello"), (Strs{"!!!", "hello"}));                // alt 4 takes the punctuation run
  EXPECT_EQ(q(".\n\nfoo"), (Strs{".\n\n", "foo"}));                // [\r\n]* after punctuation
  EXPECT_EQ(q("tab\tx"), (Strs{"tab", "\tx"}));
  EXPECT_EQ(q("hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"), (Strs{"hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"}));  // emoji + skin tone: not L/N/\s
  EXPECT_EQ(q("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9"), (Strs{"\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9"}));  // ZWJ is Cf
  EXPECT_EQ(q("x\xE3\x80\x80y"), (Strs{"x", "\xE3\x80\x80y"}));    // ideographic space + letter
  EXPECT_EQ(q(""), Strs{});
}

TEST(SplitPattern, Llama3AndGpt2) {
  EXPECT_EQ(split_text("12345 abc", SplitPattern::llama3), (Strs{"123", "45", " abc"}));  // \p{N}{1,3}
  EXPECT_EQ(split_text("Hello world  123", SplitPattern::gpt2), (Strs{"Hello", " world", " ", " 123"}));
  EXPECT_EQ(split_text("I'M", SplitPattern::gpt2), (Strs{"I", "'", "M"}));  // case-sensitive contractions
  EXPECT_EQ(split_text("don't", SplitPattern::gpt2), (Strs{"don", "'t"}));
  EXPECT_EQ(split_text("a\n\nb", SplitPattern::gpt2), (Strs{"a", "\n", "\n", "b"}));  // \s+(?!\S) then \s+
}

// The three matchers against the `regex` package, and NFC against Python's unicodedata, on the
// conformance strings
// (tests/data/tokenizers/make_split_cases.py writes split_cases.json).
TEST(SplitPattern, MatchesRegexEngine) {
  const std::string path = std::string(NPUSIM_TEST_DATA) + "/tokenizers/split_cases.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " missing: run tests/data/tokenizers/make_split_cases.py";
  const ir::json j = ir::parse_json(read_file(path), path);
  int n = 0;
  for (const auto& c : j.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    EXPECT_EQ(nfc(text), c.at("nfc").get<std::string>()) << "case " << n << ": \"" << text << "\"";
    EXPECT_EQ(split_text(text, SplitPattern::gpt2), c.at("gpt2").get<Strs>()) << "case " << n << ": \"" << text << "\"";
    EXPECT_EQ(split_text(text, SplitPattern::qwen2), c.at("qwen2").get<Strs>()) << "case " << n << ": \"" << text << "\"";
    EXPECT_EQ(split_text(text, SplitPattern::llama3), c.at("llama3").get<Strs>()) << "case " << n << ": \"" << text << "\"";
    ++n;
  }
  EXPECT_GE(n, 300);
}

TEST(Tokenizer, ByteLevelBpeExactIds) {
  for (bool pair_merges : {false, true}) {
    const Tokenizer t = load(qwen_like(pair_merges));
    EXPECT_EQ(t.encode("hello world"), (Ids{259, 264}));
    EXPECT_EQ(t.encode("lll"), (Ids{256, 'l'}));  // equal ranks: the leftmost pair merges first
    EXPECT_EQ(t.encode("hell\xC3\xB6"), (Ids{258, 0xC3, 0xB6}));
    EXPECT_EQ(t.encode("he\xCC\x81"), (Ids{'h', 0xC3, 0xA9}));  // NFC first: e + U+0301 is é, so no "he"
    EXPECT_EQ(t.encode("he\xCC\x80x"), (Ids{'h', 0xC3, 0xA8, 'x'}));
    EXPECT_EQ(t.encode("<|im_start|>hello<|endoftext|>"), (Ids{266, 259, 265}));
    EXPECT_EQ(t.encode("hello", true), (Ids{259}));  // the ByteLevel post-processor adds nothing
    EXPECT_EQ(t.decode({259, 264}), "hello world");
    EXPECT_EQ(t.decode({266, 259, 265}), "<|im_start|>hello<|endoftext|>");
    EXPECT_EQ(t.decode({266, 259, 265}, true), "hello");
    EXPECT_EQ(t.decode({0xC3}), "\xEF\xBF\xBD");  // a lone lead byte decodes to U+FFFD
    EXPECT_EQ(t.token_to_id("Ġworld"), 264);
    EXPECT_EQ(t.token_to_id("<|im_start|>"), 266);
    EXPECT_EQ(t.id_to_token(257), "he");
    EXPECT_EQ(t.id_to_token(265), "<|endoftext|>");
    EXPECT_FALSE(t.id_to_token(9999));
    EXPECT_EQ(t.special_tokens().size(), 2u);
    EXPECT_THROW(t.decode({9999}), Error);
  }
}

TEST(Tokenizer, SentencePieceStyleBpeWithByteFallback) {
  const Tokenizer t = load(llama2_like());
  EXPECT_EQ(t.encode("hello"), (Ids{268}));                // "▁hello" after Prepend
  EXPECT_EQ(t.encode("hi"), (Ids{264, 3 + 'i'}));          // 'i' is not in the vocabulary: <0x69>
  EXPECT_EQ(t.encode("\xC3\xA9"), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.encode("hello", true), (Ids{1, 268}));       // TemplateProcessing: <s> $A
  EXPECT_EQ(t.encode("<s>hello"), (Ids{1, 268}));          // each piece between added tokens is normalised
  EXPECT_EQ(t.decode({268}), "hello");                     // Strip removes the first space only
  EXPECT_EQ(t.decode({268, 268}), "hello hello");
  EXPECT_EQ(t.decode({264, 3 + 'i'}), "hi");
  EXPECT_EQ(t.decode({259, 3 + 0xC3, 3 + 0xA9}), "\xC3\xA9");
  EXPECT_EQ(t.decode({259, 3 + 0xC3, 268}), "\xEF\xBF\xBD hello");  // ByteFallback: U+FFFD per bad byte; Strip the first space
    EXPECT_EQ(t.decode({3 + 0xC3, 3 + 0xA9, 3 + 0xC3, 3 + 0xC3}), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // one invalid run: 4 x U+FFFD
  EXPECT_EQ(t.decode({1, 268}, true), "hello");
}

TEST(Tokenizer, StreamingDecoderHoldsPartialUtf8) {
  const Tokenizer q = load(qwen_like(false));
  Decoder d(q);
  EXPECT_EQ(d.push(259), "hello");
  EXPECT_EQ(d.push(0xF0), "");  // 😀 = F0 9F 98 80, one byte per token
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0x98), "");
  EXPECT_EQ(d.push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(264), " world");
  EXPECT_EQ(d.push(0xC3), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // an unfinished character at the end of the stream

  const Tokenizer l = load(llama2_like());
  Decoder s(l);
  std::string text;
  for (auto id : Ids{268, 259, 3 + 0xC3, 3 + 0xA9, 268}) text += s.push(id);
  EXPECT_EQ(text, l.decode({268, 259, 3 + 0xC3, 3 + 0xA9, 268}));
  EXPECT_EQ(text, "hello \xC3\xA9 hello");
}

TEST(Tokenizer, BadFilesGiveClearErrors) {
  ir::json j = qwen_like(false);
  j["model"].erase("merges");
  EXPECT_NE(error_of(j).find("has no \"merges\" field"), std::string::npos) << error_of(j);

  j = qwen_like(false);
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(error_of(j).find("model type is not supported (expected BPE, found WordPiece)"), std::string::npos) << error_of(j);

  j = qwen_like(false);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_NE(error_of(j).find("Split regex is not one this tokenizer implements"), std::string::npos) << error_of(j);
  EXPECT_NE(error_of(j).find("found \\w+"), std::string::npos) << error_of(j);

  j = qwen_like(false);
  j["model"]["merges"].push_back("he zz");
  EXPECT_NE(error_of(j).find("merge #9 names a token that is not in the vocabulary"), std::string::npos) << error_of(j);
  EXPECT_NE(error_of(j).find("\"zz\""), std::string::npos) << error_of(j);

  j = qwen_like(false);
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_NE(error_of(j).find("pre_tokenizer type is not supported"), std::string::npos) << error_of(j);

  j = qwen_like(false);
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(error_of(j).find("found NFKC"), std::string::npos) << error_of(j);

  EXPECT_THROW(Tokenizer::from_json_string("{\"model\": ", "x.json"), Error);
  EXPECT_THROW(load(qwen_like(false)).encode("bad \xFF utf8"), Error);
  try {
    Tokenizer::from_file("/nonexistent/tokenizer.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos) << e.what();
  }
}

// Over every tests/data/tokenizers/<name>/ with tokenizer.json and cases.json
// (tests/data/tokenizers/make_conformance.py writes them with HF tokenizers), and the same layout
// under $NPUSIM_EXTRA_TOKENIZERS (cases for real model tokenizers, too large for the repository).
TEST(TokenizerConformance, MatchesHuggingFace) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots{fs::path(NPUSIM_TEST_DATA) / "tokenizers"};
  if (const char* extra = std::getenv("NPUSIM_EXTRA_TOKENIZERS")) roots.emplace_back(extra);
  int sets = 0;
  for (const auto& root : roots) {
    if (!fs::is_directory(root)) continue;
    for (const auto& dir : fs::directory_iterator(root)) {
      const fs::path tj = dir.path() / "tokenizer.json", cj = dir.path() / "cases.json";
      if (!fs::exists(tj) || !fs::exists(cj)) continue;
      ++sets;
      const Tokenizer t = Tokenizer::from_file(tj.string());
      const ir::json cases = ir::parse_json(read_file(cj.string()), cj.string());
      int n = 0;
      for (const auto& c : cases.at("cases")) {
        const std::string text = c.at("text").get<std::string>();
        const Ids hf = c.at("ids").get<Ids>();
        const Ids ours = t.encode(text);
        EXPECT_EQ(ours, hf) << dir.path().filename() << " case " << n << ": \"" << text << "\"";
        EXPECT_EQ(t.decode(hf), c.at("decoded").get<std::string>()) << dir.path().filename() << " case " << n;
        if (c.at("decoded").get<std::string>() == text) {
          EXPECT_EQ(t.decode(ours), text) << dir.path().filename() << " case " << n;
        }
        if (c.contains("ids_special")) {
          EXPECT_EQ(t.encode(text, true), c.at("ids_special").get<Ids>()) << dir.path().filename() << " case " << n;
        }
        std::string streamed;
        Decoder d(t);
        for (auto id : hf) streamed += d.push(id);
        streamed += d.flush();
        EXPECT_EQ(streamed, c.at("decoded").get<std::string>()) << dir.path().filename() << " streamed, case " << n;
        ++n;
      }
      EXPECT_GE(n, 300) << dir.path();
    }
  }
  if (sets == 0) GTEST_SKIP() << "no tests/data/tokenizers/*/cases.json yet: run tests/data/tokenizers/make_conformance.py";
}
