// The text side of a model directory (a Hugging Face checkpoint, or what npusim-export copies next
// to its cases): tokenizer.json; tokenizer_config.json (chat_template, bos_token, eos_token);
// chat_template.jinja (newer transformers keep the template there); generation_config.json and
// config.json (eos_token_id: the ids generation stops at). docs/tokenizer.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/text/chat.hpp"
#include "npusim/text/tokenizer.hpp"

namespace npusim::inline NPUSIM_ABI::text {

// The ids a model stops generating at, and the file that said so.
struct EosIds {
  std::vector<Tokenizer::Id> ids;
  std::string source;
};

// eos_token_id of generation_config.json, else of config.json, in `dir` (an int, a list of ints,
// or null). nullopt when neither file names one.
std::optional<EosIds> read_eos_ids(const std::string& dir);

class ModelText {
 public:
  // `path`: a tokenizer.json, or a directory holding one.
  static ModelText open(const std::string& path);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const std::string& dir() const { return dir_; }
  const std::string& tokenizer_path() const { return tokenizer_path_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  const std::optional<std::string>& chat_template_source() const { return chat_template_; }
  const std::string& chat_template_file() const { return chat_template_file_; }

  // The chat template: the named form, else the form of the directory's template.
  ChatTemplate chat(std::optional<ChatFormat> format = std::nullopt) const;

  // The ids of the special tokens that end generation: eos_token_id of generation_config.json or
  // config.json next to the tokenizer (nullopt when neither says).
  std::optional<EosIds> eos_ids() const { return read_eos_ids(dir_); }

  // The ids generation stops at: eos_token_id of generation_config.json / config.json, else
  // tokenizer_config.json's eos_token; with a chat, its end-of-turn token too. Empty ids (and
  // source) when nothing names one.
  EosIds stop_ids(const ChatTemplate* chat = nullptr) const;

 private:
  std::string default_bos() const;

  static std::string token_text(const ir::json& v, const std::string& what, const std::string& file);

  void read_config();

  Tokenizer tokenizer_;
  std::string dir_, tokenizer_path_, bos_token_, eos_token_, chat_template_file_;
  std::optional<std::string> chat_template_;
};

}  // namespace npusim::inline NPUSIM_ABI::text

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/text/impl/model_text_inl.hpp"
#endif
