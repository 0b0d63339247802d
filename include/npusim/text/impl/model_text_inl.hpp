// Definitions for npusim/text/model_text.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <filesystem>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/model_text.hpp"

namespace npusim::inline NPUSIM_ABI::text {

NPUSIM_FUNC std::optional<EosIds> read_eos_ids(const std::string& dir) {
  namespace fs = std::filesystem;
  for (const char* name : {"generation_config.json", "config.json"}) {
    const std::string path = (fs::path(dir) / name).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    const ir::json j = ir::parse_json(read_file(path, std::uint64_t{1} << 26), path);
    if (!j.is_object()) throw Error(ErrorCode::parse, std::string(name) + " must be a JSON object", {.file = path, .found = j.type_name()});
    auto it = j.find("eos_token_id");
    if (it == j.end() || it->is_null()) continue;
    EosIds e{{}, path};
    if (it->is_array()) {
      for (const auto& v : *it) e.ids.push_back(ir::get_int64(v, "eos_token_id entry", path));
    } else {
      e.ids.push_back(ir::get_int64(*it, "eos_token_id", path));
    }
    for (auto id : e.ids)
      if (id < 0) throw Error(ErrorCode::parse, "eos_token_id must be non-negative", {.file = path, .found = std::to_string(id)});
    if (!e.ids.empty()) return e;
  }
  return std::nullopt;
}

NPUSIM_FUNC ModelText ModelText::open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  ModelText m;
  if (fs::is_directory(path, ec)) {
    m.dir_ = path;
    m.tokenizer_path_ = (fs::path(path) / "tokenizer.json").string();
    if (const std::string kind = path_kind(m.tokenizer_path_); kind != "a regular file")
      throw Error(ErrorCode::io, "no tokenizer.json in the tokenizer directory", {.file = path, .expected = "tokenizer.json (Hugging Face fast tokenizer)",
                  .found = kind != "none" ? "tokenizer.json is " + kind
                           : fs::is_regular_file(fs::path(path) / "tokenizer.model", ec) ? "tokenizer.model only (SentencePiece protobuf: not read; convert "
                                                                                           "it with transformers, or save a fast tokenizer)" : "no such file"});
  } else {
    m.tokenizer_path_ = path;
    m.dir_ = fs::path(path).parent_path().string();
    if (m.dir_.empty()) m.dir_ = ".";
  }
  m.tokenizer_ = Tokenizer::from_file(m.tokenizer_path_);
  m.read_config();
  return m;
}

NPUSIM_FUNC ChatTemplate ModelText::chat(std::optional<ChatFormat> format) const {
  ChatTemplate t;
  if (format) {
    t = ChatTemplate::of_format(*format, *format == ChatFormat::llama3 ? default_bos() : std::string());
    // A named ChatML keeps the directory template's default system prompt, when it has one.
    if (*format == ChatFormat::chatml && chat_template_) t.default_system = detail::chatml_default_system(*chat_template_);
  } else {
    if (!chat_template_)
      throw Error(ErrorCode::attr, "no chat template: tokenizer_config.json has no chat_template and there is no chat_template.jinja",
                  {.file = dir_, .expected = "a chat template, or --chat-format chatml|llama3"});
    t = ChatTemplate::from_jinja(*chat_template_, default_bos(), chat_template_file_);
  }
  t.check_tokenizer(tokenizer_);
  return t;
}

NPUSIM_FUNC EosIds ModelText::stop_ids(const ChatTemplate* chat) const {
  EosIds s;
  if (auto e = eos_ids()) s = std::move(*e);
  else if (!eos_token_.empty()) s = {{*tokenizer_.token_to_id(eos_token_)}, dir_ + "/tokenizer_config.json (eos_token)"};
  if (chat) {
    const Tokenizer::Id eot = *tokenizer_.token_to_id(chat->end_of_turn());  // chat() checked that the tokenizer has it
    if (std::find(s.ids.begin(), s.ids.end(), eot) == s.ids.end()) {
      s.ids.push_back(eot);
      s.source += std::string(s.source.empty() ? "" : " + ") + "the chat's end of turn";
    }
  }
  return s;
}

NPUSIM_FUNC std::string ModelText::default_bos() const {
  if (!bos_token_.empty()) return bos_token_;
  return tokenizer_.token_to_id("<|begin_of_text|>") ? "<|begin_of_text|>" : std::string();
}

NPUSIM_FUNC std::string ModelText::token_text(const ir::json& v, const std::string& what, const std::string& file) {
  if (v.is_null()) return {};
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return ir::get_string(v["content"], what + ".content", file);
  throw Error(ErrorCode::parse, what + " must be a string, null or an AddedToken object", {.file = file, .found = v.type_name()});
}

NPUSIM_FUNC void ModelText::read_config() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string cfg = (fs::path(dir_) / "tokenizer_config.json").string();
  if (fs::is_regular_file(cfg, ec)) {
    const ir::json j = ir::parse_json(read_file(cfg, std::uint64_t{1} << 28), cfg);
    if (!j.is_object()) throw Error(ErrorCode::parse, "tokenizer_config.json must be a JSON object", {.file = cfg, .found = j.type_name()});
    if (j.contains("bos_token")) bos_token_ = token_text(j["bos_token"], "bos_token", cfg);
    if (j.contains("eos_token")) eos_token_ = token_text(j["eos_token"], "eos_token", cfg);
    if (auto it = j.find("chat_template"); it != j.end() && !it->is_null()) {
      chat_template_file_ = cfg;
      if (it->is_string()) {
        chat_template_ = it->get<std::string>();
      } else if (it->is_array()) {  // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
        for (const auto& e : *it)
          if (e.is_object() && ir::get_string_or(e, "name", "", "chat_template entry", cfg) == "default") chat_template_ = ir::get_string(ir::require_field(e, "template", "chat_template entry", cfg), "chat_template", cfg);
        if (!chat_template_)
          throw Error(ErrorCode::parse, "chat_template list has no entry named \"default\"", {.file = cfg, .expected = "{\"name\": \"default\", \"template\": ...}"});
      } else {
        throw Error(ErrorCode::parse, "chat_template must be a string or a list of named templates", {.file = cfg, .found = it->type_name()});
      }
    }
  }
  const std::string jinja = (fs::path(dir_) / "chat_template.jinja").string();
  if (!chat_template_ && fs::is_regular_file(jinja, ec)) {
    chat_template_ = read_file(jinja, std::uint64_t{1} << 24);
    chat_template_file_ = jinja;
  }
  for (const std::string* s : {&bos_token_, &eos_token_})
    if (!s->empty() && !tokenizer_.token_to_id(*s))
      throw Error(ErrorCode::attr, "tokenizer_config.json names a token tokenizer.json does not have", {.file = cfg, .expected = "a token of the vocabulary",
                  .found = *s});
}

}  // namespace npusim::inline NPUSIM_ABI::text
