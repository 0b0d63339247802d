// Chat templates and the text side of a model directory: the rendering of every template form
// against transformers' apply_chat_template (tests/data/text_gen/chat_render.json, made by
// tests/data/text_gen/make_text_gen.py), the forms npusim refuses, tokenizer_config.json and the
// EOS ids of generation_config.json / config.json.
#include <gtest/gtest.h>

#include "../../common/test_util.hpp"
#include "npusim/text/chat.hpp"
#include "npusim/text/model_text.hpp"

using namespace npusim;
using namespace npusim::text;
using npusim::test::data;
using npusim::test::TempDir;
using npusim::test::write_text;

namespace {

std::vector<ChatMessage> messages_of(const ir::json& arr) {
  std::vector<ChatMessage> m;
  for (const auto& x : arr) m.push_back({x.at("role").get<std::string>(), x.at("content").get<std::string>()});
  return m;
}

// A copy of the text_gen tokenizer directory with tokenizer_config.json replaced.
void tokenizer_dir(const TempDir& d, const ir::json& config) {
  write_text(d.file("tokenizer.json"), read_file(data("text_gen/tokenizer.json")));
  write_text(d.file("tokenizer_config.json"), config.dump());
}

}  // namespace

TEST(ChatTemplate, RendersAsTransformersDoes) {
  const std::string path = data("text_gen/chat_render.json");
  const ir::json j = ir::parse_json(read_file(path), path);
  std::map<std::string, int> per_template;
  for (const auto& c : j.at("cases")) {
    const std::string name = c.at("template").get<std::string>();
    const ir::json& t = j.at("templates").at(name);
    const std::string bos = t.at("bos_token").is_null() ? "" : t.at("bos_token").get<std::string>();
    const ChatTemplate tmpl = ChatTemplate::from_jinja(t.at("chat_template").get<std::string>(), bos);
    EXPECT_EQ(tmpl.render(messages_of(c.at("messages")), c.at("add_generation_prompt").get<bool>()), c.at("text").get<std::string>())
        << name << ": " << c.at("messages").dump();
    ++per_template[name];
  }
  EXPECT_EQ(per_template.size(), 4u);
  for (const auto& [name, n] : per_template) EXPECT_GE(n, 10) << name;
}

TEST(ChatTemplate, FindsTheFormAndDefaultSystemPrompt) {
  const ir::json j = ir::parse_json(read_file(data("text_gen/chat_render.json")), "chat_render.json");
  auto form = [&](const char* name) { return ChatTemplate::from_jinja(j.at("templates").at(name).at("chat_template").get<std::string>(), "<|begin_of_text|>"); };
  EXPECT_EQ(form("qwen2.5").format, ChatFormat::chatml);
  EXPECT_EQ(form("qwen2.5").default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_EQ(form("qwen2").default_system, "You are a helpful assistant.");
  EXPECT_EQ(form("chatml").default_system, std::nullopt);
  EXPECT_EQ(form("llama3").format, ChatFormat::llama3);
  EXPECT_EQ(form("llama3").bos, "<|begin_of_text|>");
}

TEST(ChatTemplate, OtherFormsAreRefusedByName) {
  NPUSIM_EXPECT_ERROR(ChatTemplate::from_jinja("{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"), "Llama 2 / Mistral [INST]",
                      "--chat-format chatml|llama3");
  NPUSIM_EXPECT_ERROR(ChatTemplate::from_jinja("{{- \"Cutting Knowledge Date: December 2023\" }}<|start_header_id|><|eot_id|>", "<|begin_of_text|>"),
                      "Llama 3.1+");
  NPUSIM_EXPECT_ERROR(ChatTemplate::from_jinja("{{ messages[0]['content'] }}"), "no ChatML or Llama 3 markers");
  NPUSIM_EXPECT_ERROR(ChatTemplate::from_jinja("<|start_header_id|> <|eot_id|>"), "needs the BOS token");
  NPUSIM_EXPECT_ERROR(parse_chat_format("vicuna"), "unknown chat format", "chatml or llama3");
  const ChatTemplate t = ChatTemplate::of_format(ChatFormat::chatml);
  NPUSIM_EXPECT_ERROR(t.render({}), "at least one message");
  NPUSIM_EXPECT_ERROR(t.render(std::vector<ChatMessage>{{"tool", "x"}}), "role", "system, user or assistant", "tool");
  NPUSIM_EXPECT_ERROR(t.render(std::vector<ChatMessage>{{"user", "bad \xFF"}}), "UTF-8");
}

TEST(ModelText, ReadsTheDirectoryAndItsStopIds) {
  const ModelText mt = ModelText::open(data("text_gen"));
  EXPECT_EQ(mt.eos_token(), "<|im_end|>");
  const ChatTemplate chat = mt.chat();
  EXPECT_EQ(chat.format, ChatFormat::chatml);
  EXPECT_EQ(chat.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  const auto eos = mt.eos_ids();
  ASSERT_TRUE(eos);
  EXPECT_EQ(eos->ids, (std::vector<std::int64_t>{2, 0}));
  EXPECT_NE(eos->source.find("generation_config.json"), std::string::npos);
  EXPECT_EQ(mt.stop_ids(&chat).ids, eos->ids);  // <|im_end|> (the end of turn) is already among them
  // The same through the tokenizer.json path.
  EXPECT_EQ(ModelText::open(data("text_gen/tokenizer.json")).eos_ids()->ids, eos->ids);
}

TEST(ModelText, EosIdsFromConfigWhenGenerationConfigHasNone) {
  TempDir d;
  write_text(d.file("generation_config.json"), R"({"eos_token_id": null, "do_sample": false})");
  write_text(d.file("config.json"), R"({"eos_token_id": 7})");
  auto e = read_eos_ids(d.path().string());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ids, (std::vector<std::int64_t>{7}));
  EXPECT_NE(e->source.find("config.json"), std::string::npos);
  write_text(d.file("config.json"), R"({"eos_token_id": -1})");
  NPUSIM_EXPECT_ERROR(read_eos_ids(d.path().string()), "non-negative", "config.json");
  write_text(d.file("config.json"), R"({"eos_token_id": "x"})");
  NPUSIM_EXPECT_ERROR(read_eos_ids(d.path().string()), "eos_token_id must be an integer");
  write_text(d.file("config.json"), R"({})");
  EXPECT_FALSE(read_eos_ids(d.path().string()));
}

TEST(ModelText, BadDirectoriesGiveClearErrors) {
  {
    TempDir d;  // no tokenizer.json, only SentencePiece's model
    write_text(d.file("tokenizer.model"), "x");
    NPUSIM_EXPECT_ERROR(ModelText::open(d.path().string()), "no tokenizer.json", "tokenizer.model only");
  }
  {
    TempDir d;  // a Llama 3 template over a tokenizer without Llama 3's special tokens
    const ir::json j = ir::parse_json(read_file(data("text_gen/chat_render.json")), "chat_render.json");
    tokenizer_dir(d, {{"chat_template", j.at("templates").at("llama3").at("chat_template")}, {"bos_token", "<|endoftext|>"}});
    NPUSIM_EXPECT_ERROR(ModelText::open(d.path().string()).chat(), "uses the special token <|start_header_id|>", "does not define");
  }
  {
    TempDir d;
    tokenizer_dir(d, {{"eos_token", "<|nope|>"}});
    NPUSIM_EXPECT_ERROR(ModelText::open(d.path().string()), "names a token tokenizer.json does not have", "<|nope|>");
  }
  {
    TempDir d;
    tokenizer_dir(d, {{"chat_template", 3}});
    NPUSIM_EXPECT_ERROR(ModelText::open(d.path().string()), "chat_template must be a string or a list");
  }
  {
    TempDir d;  // no template at all: --chat-format names one
    tokenizer_dir(d, ir::json::object());
    const ModelText mt = ModelText::open(d.path().string());
    NPUSIM_EXPECT_ERROR(mt.chat(), "no chat template", "--chat-format");
    EXPECT_EQ(mt.chat(ChatFormat::chatml).format, ChatFormat::chatml);
  }
  {
    TempDir d;  // a list of named templates; chat_template.jinja is the fallback
    tokenizer_dir(d, {{"chat_template", ir::json::array({{{"name", "tool_use"}, {"template", "x"}}})}});
    NPUSIM_EXPECT_ERROR(ModelText::open(d.path().string()), "no entry named \"default\"");
    tokenizer_dir(d, ir::json::object());
    write_text(d.file("chat_template.jinja"), "{{ '<|im_start|>' + message['role'] }}");
    EXPECT_EQ(ModelText::open(d.path().string()).chat().format, ChatFormat::chatml);
  }
}
