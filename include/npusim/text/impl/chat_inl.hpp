// Definitions for npusim/text/chat.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/text/chat.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

NPUSIM_FUNC ChatFormat parse_chat_format(std::string_view name) {
  if (name == "chatml") return ChatFormat::chatml;
  if (name == "llama3") return ChatFormat::llama3;
  throw Error(ErrorCode::attr, "unknown chat format", {.expected = "chatml or llama3", .found = std::string(name)});
}

}  // namespace npusim::inline NPUSIM_ABI::text

namespace npusim::inline NPUSIM_ABI::text {
namespace detail {

NPUSIM_FUNC std::string python_strip(std::string_view s) {
  const std::vector<char32_t> cps = utf8_to_code_points(s, "chat message");
  auto space = [](char32_t c) { return is_whitespace(c) || (c >= 0x1C && c <= 0x1F); };
  std::size_t b = 0, e = cps.size();
  while (b < e && space(cps[b])) ++b;
  while (e > b && space(cps[e - 1])) --e;
  std::string out;
  for (std::size_t i = b; i < e; ++i) utf8_append(out, cps[i]);
  return out;
}

NPUSIM_FUNC std::string jinja_unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c);
  }
  return out;
}

NPUSIM_FUNC std::optional<std::string> chatml_default_system(std::string_view tmpl) {
  static constexpr std::string_view head = "<|im_start|>system";
  for (std::size_t at = tmpl.find(head); at != std::string_view::npos; at = tmpl.find(head, at + 1)) {
    std::size_t p = at + head.size();
    if (tmpl.substr(p, 2) == "\\n") p += 2;
    else if (tmpl.substr(p, 1) == "\n") p += 1;
    else continue;
    const std::size_t end = tmpl.find("<|im_end|>", p);
    if (end == std::string_view::npos) continue;
    const std::string_view body = tmpl.substr(p, end - p);
    if (body.empty() || body.find_first_of("'\"{}+") != std::string_view::npos) continue;
    return jinja_unescape(body);
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace npusim::inline NPUSIM_ABI::text

namespace npusim::inline NPUSIM_ABI::text {

NPUSIM_FUNC ChatTemplate ChatTemplate::of_format(ChatFormat f, std::string bos_token) {
  ChatTemplate t;
  t.format = f;
  if (f == ChatFormat::llama3) {
    if (bos_token.empty())
      throw Error(ErrorCode::attr, "the llama3 chat format needs the BOS token's text", {.expected = "bos_token in tokenizer_config.json",
                  .found = "none"});
    t.bos = std::move(bos_token);
  }
  return t;
}

NPUSIM_FUNC ChatTemplate ChatTemplate::from_jinja(std::string_view tmpl, std::string bos_token, const std::string& file) {
  auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::unsupported, "chat template of a form npusim does not render: " + what,
                {.file = file, .expected = "a ChatML (Qwen2, Qwen2.5) or Llama 3 template; or choose one with --chat-format chatml|llama3",
                 .found = excerpt(tmpl)});
  };
  const bool chatml = tmpl.find("<|im_start|>") != std::string_view::npos;
  const bool llama3 = tmpl.find("<|start_header_id|>") != std::string_view::npos && tmpl.find("<|eot_id|>") != std::string_view::npos;
  if (chatml && llama3) refuse("it has both ChatML and Llama 3 markers");
  if (chatml) {
    ChatTemplate t;
    t.format = ChatFormat::chatml;
    t.default_system = detail::chatml_default_system(tmpl);
    t.thinking = tmpl.find("<think>") != std::string_view::npos;
    return with_prompt_rule(t, tmpl);
  }
  if (llama3) {
    if (tmpl.find("Cutting Knowledge Date") != std::string_view::npos)
      refuse("Llama 3.1+ (a date preamble in the system message, tool calls)");
    return with_prompt_rule(of_format(ChatFormat::llama3, std::move(bos_token)), tmpl);
  }
  if (tmpl.find("[INST]") != std::string_view::npos) refuse("Llama 2 / Mistral [INST]");
  refuse("no ChatML or Llama 3 markers");
  return {};
}

NPUSIM_FUNC std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  if (messages.empty()) throw Error(ErrorCode::attr, "a chat needs at least one message");
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw Error(ErrorCode::attr, "chat message role not rendered", {.expected = "system, user or assistant", .found = m.role});
    require_utf8(m.content, "chat message");
  }
  if (thinking) {  // Qwen3: assistant turns after the last user message get <think> blocks
    std::size_t last_user = 0;
    for (std::size_t i = 0; i < messages.size(); ++i)
      if (messages[i].role == "user") last_user = i;
    for (std::size_t i = 0; i < messages.size(); ++i)
      if (messages[i].role == "assistant" && (i > last_user || messages[i].content.find("</think>") != std::string::npos))
        throw Error(ErrorCode::unsupported, "thinking chat template (Qwen3 style): an assistant turn after the last user message, or one with "
                    "</think>, is rendered with <think> blocks npusim does not reproduce",
                    {.expected = "a conversation that ends with the user's message", .found = "assistant message #" + std::to_string(i)});
  }
  add_generation_prompt = add_generation_prompt || always_prompt;
  std::string out;
  if (format == ChatFormat::chatml) {
    auto turn = [&](const std::string& role, const std::string& content) { out += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n"; };
    if (messages[0].role != "system" && default_system) turn("system", *default_system);
    for (const auto& m : messages) turn(m.role, m.content);
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
  } else {
    out = bos;
    for (const auto& m : messages) out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + detail::python_strip(m.content) + "<|eot_id|>";
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  }
  return out;
}

NPUSIM_FUNC std::vector<std::string> ChatTemplate::special_tokens() const {
  if (format == ChatFormat::chatml) return {"<|im_start|>", "<|im_end|>"};
  return {bos, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
}

NPUSIM_FUNC void ChatTemplate::check_tokenizer(const Tokenizer& tok) const {
  for (const auto& s : special_tokens()) {
    bool added = false;
    for (const auto& a : tok.added_tokens()) added = added || a.content == s;
    if (!added)
      throw Error(ErrorCode::attr, "the chat template uses the special token " + s + ", which the tokenizer does not define",
                  {.expected = s + " among tokenizer.json's added_tokens (" + std::string(chat_format_name(format)) + " format)",
                   .found = "no such added token"});
  }
}

NPUSIM_FUNC std::vector<Tokenizer::Id> ChatTemplate::encode(const Tokenizer& tok, std::span<const ChatMessage> messages,
                                                            bool add_generation_prompt) const {
  check_tokenizer(tok);
  return tok.encode(render(messages, add_generation_prompt), false);
}

NPUSIM_FUNC ChatTemplate ChatTemplate::with_prompt_rule(ChatTemplate t, std::string_view tmpl) {
  t.always_prompt = tmpl.find("add_generation_prompt") == std::string_view::npos;
  return t;
}

NPUSIM_FUNC std::string ChatTemplate::excerpt(std::string_view s) {
  std::string e(s.substr(0, 80));
  for (char& c : e)
    if (c == '\n') c = ' ';
  return "\"" + e + (s.size() > 80 ? "...\"" : "\"");
}

}  // namespace npusim::inline NPUSIM_ABI::text
