// Text prompts: the tokenizer, the chat template, the prompt ids (text_prompt.hpp).
#include "text_prompt.hpp"

#include <filesystem>

#include "npusim/core/file.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::cli {

bool TextPromptArgs::text_mode() const { return prompt || !prompt_file.empty() || !tokenizer.empty(); }

std::vector<std::string> tokenizer_search_dirs(const std::vector<std::string>& paths) {
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

text::ModelText open_model_text(const TextPromptArgs& a, const std::vector<std::string>& search) {
  namespace fs = std::filesystem;
  if (!a.tokenizer.empty()) return text::ModelText::open(a.tokenizer);
  std::string looked;
  for (const auto& d : search) {
    std::error_code ec;
    // Anything named tokenizer.json counts: a directory of that name is an error saying so.
    if (fs::exists(fs::symlink_status(fs::path(d) / "tokenizer.json", ec))) return text::ModelText::open(d);
    looked += (looked.empty() ? "" : ", ") + d;
  }
  throw Error(ErrorCode::io, "no tokenizer.json for the text prompt: give --tokenizer FILE|DIR",
              {.expected = "tokenizer.json in one of: " + looked, .found = "none"});
}

TextPrompt encode_prompt(const text::ModelText& mt, const TextPromptArgs& a) {
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

std::string describe_ids(const text::Tokenizer& tok, const std::vector<std::int64_t>& ids) {
  std::string out;
  for (auto id : ids) {
    const auto t = tok.id_to_token(id);
    out += (out.empty() ? "" : ", ") + std::to_string(id) + (t ? " " + *t : std::string());
  }
  return out;
}

}  // namespace npusim::cli
