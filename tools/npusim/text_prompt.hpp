// `generate` from text: where the tokenizer is found, how the prompt becomes ids (plain text as
// tokenizer(text), a chat through its template); the stop ids are text::ModelText::stop_ids.
#pragma once

#include <filesystem>
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

  bool text_mode() const { return prompt || !prompt_file.empty() || !tokenizer.empty(); }
};

// Where a tokenizer.json is looked for when --tokenizer is not given: the --weights directory,
// then each case directory and its parent (npusim-export puts the tokenizer files in OUT/, the
// cases in OUT/prefill and OUT/decode).
inline std::vector<std::string> tokenizer_search_dirs(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  auto add = [&](const fs::path& d) {
    const std::string s = d.empty() ? std::string(".") : d.lexically_normal().string();
    if (std::find(dirs.begin(), dirs.end(), s) == dirs.end()) dirs.push_back(s);
  };
  for (const auto& p : paths) {
    if (p.empty()) continue;
    std::error_code ec;
    const fs::path d = fs::is_directory(p, ec) ? fs::path(p) : fs::path(p).parent_path();
    add(d);
    add(fs::absolute(d, ec).lexically_normal().parent_path());
  }
  return dirs;
}

inline text::ModelText open_model_text(const TextPromptArgs& a, const std::vector<std::string>& search) {
  namespace fs = std::filesystem;
  if (!a.tokenizer.empty()) return text::ModelText::open(a.tokenizer);
  std::string looked;
  for (const auto& d : search) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(d) / "tokenizer.json", ec)) return text::ModelText::open(d);
    looked += (looked.empty() ? "" : ", ") + d;
  }
  throw Error(ErrorCode::io, "no tokenizer.json for the text prompt: give --tokenizer FILE|DIR",
              {.expected = "tokenizer.json in one of: " + looked, .found = "none"});
}

struct TextPrompt {
  std::vector<std::int64_t> ids;
  std::string what;                        // "text, 11 ids" / "chat (chatml), 43 ids"
  std::optional<text::ChatTemplate> chat;  // with --chat
};

inline TextPrompt encode_prompt(const text::ModelText& mt, const TextPromptArgs& a) {
  std::string text;
  if (a.prompt) text = *a.prompt;
  else if (!a.prompt_file.empty()) text = read_file(a.prompt_file, std::uint64_t{1} << 30);
  else throw Error(ErrorCode::attr, "--tokenizer needs a text prompt", {.expected = "--prompt TEXT or --prompt-file FILE"});
  const std::string source = a.prompt ? std::string("--prompt") : a.prompt_file;
  try {
    text::require_utf8(text, "prompt");
  } catch (Error& e) {
    e.with_file(source);
    throw;
  }
  TextPrompt p;
  if (a.chat) {
    std::optional<text::ChatFormat> fmt;
    if (!a.chat_format.empty()) fmt = text::parse_chat_format(a.chat_format);
    p.chat = mt.chat(fmt);
    std::vector<text::ChatMessage> msgs;
    if (a.system) msgs.push_back({"system", *a.system});
    msgs.push_back({"user", text});
    p.ids = p.chat->encode(mt.tokenizer(), msgs);
    p.what = "chat (" + std::string(text::chat_format_name(p.chat->format)) +
             (!a.system && p.chat->default_system ? ", the template's default system prompt" : "") + ")";
  } else {
    p.ids = mt.tokenizer().encode(text, /*add_special=*/true);
    p.what = "text";
  }
  if (p.ids.empty()) throw Error(ErrorCode::attr, "the prompt is empty: it encodes to no tokens", {.file = source, .expected = "at least one token"});
  return p;
}

inline std::string describe_ids(const text::Tokenizer& tok, const std::vector<std::int64_t>& ids) {
  std::string out;
  for (auto id : ids) {
    const auto t = tok.id_to_token(id);
    out += (out.empty() ? "" : ", ") + std::to_string(id) + (t ? " " + *t : std::string());
  }
  return out;
}

}  // namespace npusim::cli
