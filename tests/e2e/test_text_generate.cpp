// Text in, text out on the tiny Qwen2 (CPU target): for every case of tests/data/text_gen/expected.json
// (made by transformers' generate() on the fixture's weights, with a tokenizer trained by HF
// tokenizers), the prompt's ids equal HF's, the greedy ids equal transformers', and the streamed
// text equals HF's decode of them, stop reason included.
#include "../common/test_util.hpp"
#include "../common/tiny_llm.hpp"
#include "npusim/runtime/text_generate.hpp"
#include "npusim/text/model_text.hpp"

using namespace npusim;
using npusim::test::data;

TEST(TextGenerate, MatchesTransformersGenerateAndDecode) {
  const text::ModelText mt = text::ModelText::open(data("text_gen"));
  const std::string path = data("text_gen/expected.json");
  const ir::json j = ir::parse_json(read_file(path), path);
  npusim::test::TinyLlm lm;
  int n = 0, chats = 0;
  for (const auto& c : j.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    const auto hf_prompt = c.at("prompt_ids").get<std::vector<std::int64_t>>();
    llm::GenerateOptions o;
    o.max_new_tokens = c.at("max_new_tokens").get<std::size_t>();
    o.eos = c.at("eos").get<std::vector<std::int64_t>>();
    std::string streamed;
    auto on_text = [&](std::string_view piece) {
      EXPECT_FALSE(piece.empty()) << name;
      streamed += piece;
    };
    llm::TextGeneration g;
    if (c.contains("messages")) {
      std::vector<text::ChatMessage> msgs;
      for (const auto& x : c.at("messages")) msgs.push_back({x.at("role").get<std::string>(), x.at("content").get<std::string>()});
      const text::ChatTemplate chat = mt.chat();
      EXPECT_EQ(chat.render(msgs), c.at("rendered").get<std::string>()) << name;
      g = llm::generate_chat(*lm.m, mt.tokenizer(), chat, msgs, o, on_text);
      ++chats;
    } else {
      g = llm::generate_text(*lm.m, mt.tokenizer(), c.at("prompt").get<std::string>(), o, on_text);
    }
    EXPECT_EQ(g.prompt, hf_prompt) << name;
    EXPECT_EQ(g.generation.tokens, c.at("ids").get<std::vector<std::int64_t>>()) << name;
    EXPECT_EQ(g.generation.stop, c.at("stop").get<std::string>()) << name;
    EXPECT_EQ(g.text, c.at("text").get<std::string>()) << name;
    EXPECT_EQ(streamed, g.text) << name;
    ++n;
  }
  EXPECT_GE(n, 7);
  EXPECT_GE(chats, 2);
}
