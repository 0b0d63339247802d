// Chat templates (docs/tokenizer.md). npusim does not run Jinja: it recognises the template forms
// of the models it runs in the tokenizer's chat_template and renders them itself, to the same text
// transformers' apply_chat_template gives (tests/data/text_gen/chat_render.json, made by it):
//   chatml  Qwen2 / Qwen2.5 and other ChatML models: "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per
//           message, "<|im_start|>assistant\n" to prompt; the default system prompt a template
//           carries (Qwen2.5: "You are Qwen, created by Alibaba Cloud. ...") is used when the
//           conversation has none.
//   llama3  Llama 3: BOS, then "<|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>" per
//           message with CONTENT trimmed, "<|start_header_id|>assistant<|end_header_id|>\n\n" to prompt.
// A template of another form (Llama 3.1's date preamble and tools, Llama 2's [INST], ...) is an
// Error naming it, never a guess; ChatTemplate::of_format renders a named form regardless.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/text/tokenizer.hpp"

namespace npusim::inline NPUSIM_ABI::text {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

enum class ChatFormat { chatml, llama3 };

inline std::string_view chat_format_name(ChatFormat f) { return f == ChatFormat::chatml ? "chatml" : "llama3"; }

ChatFormat parse_chat_format(std::string_view name);

namespace detail {

// Python's str.strip() (Jinja's trim): White_Space plus U+001C..U+001F.
std::string python_strip(std::string_view s);

// A Jinja string literal's escapes (\n, \t, \\, \', \") in text copied out of a template.
std::string jinja_unescape(std::string_view s);

// The default system prompt of a ChatML template: a literal "<|im_start|>system\n...<|im_end|>"
// (the branch taken when the conversation has no system message). Literals that go on with an
// expression (the message's own content, a tools preamble) are not defaults.
std::optional<std::string> chatml_default_system(std::string_view tmpl);

}  // namespace detail

class ChatTemplate {
 public:
  ChatFormat format = ChatFormat::chatml;
  std::optional<std::string> default_system;  // chatml: used when the conversation has no system message
  std::string bos;                            // llama3: the text before the first message
  bool always_prompt = false;                 // the template opens the assistant's turn even without add_generation_prompt
  bool thinking = false;                      // a Qwen3-style template (<think> blocks in the assistant's last turns)

  // A named form. llama3 needs the BOS text (tokenizer_config.json's bos_token).
  static ChatTemplate of_format(ChatFormat f, std::string bos_token = {});

  // The form of a Jinja chat_template (tokenizer_config.json's, or chat_template.jinja).
  static ChatTemplate from_jinja(std::string_view tmpl, std::string bos_token = {}, const std::string& file = {});

  // The prompt text for `messages`; with add_generation_prompt, the assistant's turn is opened.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt = true) const;

  // The added tokens the rendered text is made of; the tokenizer must have each of them.
  std::vector<std::string> special_tokens() const;
  // The token that ends a turn: generation stops there.
  std::string end_of_turn() const { return format == ChatFormat::chatml ? "<|im_end|>" : "<|eot_id|>"; }

  // Checks that the tokenizer has every token the form relies on (as added tokens, so that the
  // rendered markers become those ids and not pieces of text).
  void check_tokenizer(const Tokenizer& tok) const;

  // Prompt ids: the rendered conversation encoded as apply_chat_template(tokenize=True) does (the
  // template's own markers, no post-processor template).
  std::vector<Tokenizer::Id> encode(const Tokenizer& tok, std::span<const ChatMessage> messages, bool add_generation_prompt = true) const;

 private:
  // A template that never reads add_generation_prompt (Llama 3's first one) always opens the
  // assistant's turn.
  static ChatTemplate with_prompt_rule(ChatTemplate t, std::string_view tmpl);
  static std::string excerpt(std::string_view s);
};

}  // namespace npusim::inline NPUSIM_ABI::text

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/text/impl/chat_inl.hpp"
#endif
