// `generate` from text: where the tokenizer is found, how the prompt becomes ids (plain text as
// tokenizer(text), a chat through its template); the stop ids are text::ModelText::stop_ids.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/core/file.hpp"
#include "npusim/text/model_text.hpp"

namespace npusim::cli {

struct TextPromptArgs {
  std::optional<std::string> prompt;  // --prompt TEXT
  std::string prompt_file;            // --prompt-file FILE (UTF-8 text)
  std::string tokenizer;              // --tokenizer FILE|DIR
  bool chat = false;                  // --chat: the prompt is the user's message
  std::optional<std::string> system;  // --system TEXT
  std::string chat_format;            // --chat-format chatml|llama3 (default: the template's form)

  bool text_mode() const;
};

// Where a tokenizer.json is looked for when --tokenizer is not given: the --weights directory,
// then each case directory and its parent (npusim-export puts the tokenizer files in OUT/, the
// cases in OUT/prefill and OUT/decode).
std::vector<std::string> tokenizer_search_dirs(const std::vector<std::string>& paths);

text::ModelText open_model_text(const TextPromptArgs& a, const std::vector<std::string>& search);

struct TextPrompt {
  std::vector<std::int64_t> ids;
  std::string what;                        // "text, 11 ids" / "chat (chatml), 43 ids"
  std::optional<text::ChatTemplate> chat;  // with --chat
};

TextPrompt encode_prompt(const text::ModelText& mt, const TextPromptArgs& a);

std::string describe_ids(const text::Tokenizer& tok, const std::vector<std::int64_t>& ids);

}  // namespace npusim::cli
