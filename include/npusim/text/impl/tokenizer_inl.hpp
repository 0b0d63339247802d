// Definitions for npusim/text/tokenizer.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/added_tokens.hpp"
#include "npusim/text/bpe.hpp"
#include "npusim/text/byte_level.hpp"
#include "npusim/text/pipeline.hpp"
#include "npusim/text/tokenizer.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

struct TokenizerParts {
  BpeModel model;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  DecoderChain decoder;
  AddedVocabulary added;
  PostProcessor post;
};

NPUSIM_FUNC Tokenizer::Tokenizer() : parts_(std::make_shared<TokenizerParts>()) {}

NPUSIM_FUNC Tokenizer Tokenizer::from_file(const std::string& path) {
  try {
    return from_json_string(read_file(path), path);
  } catch (Error& e) {
    e.with_file(path);
    throw;
  }
}

NPUSIM_FUNC Tokenizer Tokenizer::from_json_string(std::string_view text, const std::string& source) {
  const ir::json j = ir::parse_json(text, source);
  if (!j.is_object()) throw Error(ErrorCode::parse, "tokenizer.json must be a JSON object", {.file = source, .found = j.type_name()});
  auto p = std::make_shared<TokenizerParts>();
  Tokenizer t;
  t.parts_ = p;
  p->model = BpeModel::from_json(ir::require_field(j, "model", "tokenizer.json", source), source);
  p->normalizer = Normalizer::from_json(j.value("normalizer", ir::json()), source);
  p->pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", ir::json()), source);
  p->decoder = DecoderChain::from_json(j.value("decoder", ir::json()), source);
  p->added = AddedVocabulary::from_json(j.value("added_tokens", ir::json::array()), source,
                                        [&](std::string_view s) { return p->normalizer.apply(s); });
  p->post = PostProcessor::from_json(j.value("post_processor", ir::json()), source,
                                     [&](const std::string& tok) { return t.token_to_id(tok); });
  return t;
}

NPUSIM_FUNC auto Tokenizer::encode(std::string_view text, bool add_special) const -> std::vector<Id> {
  std::vector<Id> ids;
  if (add_special) ids = parts_->post.prefix;
  require_utf8(text, "text to encode");  // the matchers below assume UTF-8
  for (const auto& raw : parts_->added.split(text, false)) {
    if (raw.id) { ids.push_back(*raw.id); continue; }
    const std::string normalized = parts_->normalizer.apply(raw.text);
    for (const auto& piece : parts_->added.split(normalized, true)) {
      if (piece.id) { ids.push_back(*piece.id); continue; }
      parts_->pre_tokenizer.apply(piece.text, [&](std::string_view word) { parts_->model.tokenize(word, ids); });
    }
  }
  if (add_special) ids.insert(ids.end(), parts_->post.suffix.begin(), parts_->post.suffix.end());
  return ids;
}

NPUSIM_FUNC std::string Tokenizer::decode(const std::vector<Id>& ids, bool skip_special) const {
  return parts_->decoder.decode(tokens_of(ids, skip_special), false);
}

NPUSIM_FUNC std::string Tokenizer::decode_bytes(const std::vector<Id>& ids, bool skip_special) const {
  return parts_->decoder.decode(tokens_of(ids, skip_special), true);
}

NPUSIM_FUNC auto Tokenizer::token_to_id(std::string_view token) const -> std::optional<Id> {
  if (auto id = parts_->added.id_of(token)) return id;
  return parts_->model.token_to_id(token);
}

NPUSIM_FUNC std::optional<std::string> Tokenizer::id_to_token(Id id) const {
  if (const AddedToken* a = parts_->added.find(id)) return a->content;
  if (const std::string* t = parts_->model.id_to_token(id)) return *t;
  return std::nullopt;
}

NPUSIM_FUNC const std::vector<AddedToken>& Tokenizer::added_tokens() const { return parts_->added.tokens(); }

NPUSIM_FUNC std::vector<AddedToken> Tokenizer::special_tokens() const {
  std::vector<AddedToken> out;
  for (const auto& a : parts_->added.tokens())
    if (a.special) out.push_back(a);
  return out;
}

NPUSIM_FUNC bool Tokenizer::is_special(Id id) const {
  const AddedToken* a = parts_->added.find(id);
  return a && a->special;
}

NPUSIM_FUNC std::size_t Tokenizer::vocab_size() const { return parts_->model.vocab_size(); }

NPUSIM_FUNC std::vector<std::string> Tokenizer::tokens_of(const std::vector<Id>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (Id id : ids) {
    if (const AddedToken* a = parts_->added.find(id)) {
      if (!(skip_special && a->special)) tokens.push_back(a->content);
    } else if (const std::string* t = parts_->model.id_to_token(id)) {
      tokens.push_back(*t);
    } else {
      throw Error(ErrorCode::attr, "token id is not in the vocabulary",
                  {.expected = "0 <= id < " + std::to_string(parts_->model.vocab_size() + parts_->added.tokens().size()), .found = std::to_string(id)});
    }
  }
  return tokens;
}

NPUSIM_FUNC Decoder::Decoder(const Tokenizer& tok, bool skip_special) : tok_(&tok), skip_special_(skip_special) {}

NPUSIM_FUNC std::string Decoder::push(Tokenizer::Id id) {
  ids_.push_back(id);
  const std::string bytes = tok_->decode_bytes(ids_, skip_special_);
  if (bytes.size() < prefix_.size() || bytes.compare(0, prefix_.size(), prefix_) != 0)
    throw Error(ErrorCode::runtime, "streaming decode: the decoder re-decoded earlier tokens differently",
                {.expected = "a decode that extends \"" + prefix_ + "\"", .found = "\"" + bytes + "\""});
  std::string fresh = bytes.substr(prefix_.size());
  if (utf8_complete_prefix(fresh) < fresh.size()) return {};  // hold the unfinished character
  ids_ = {id};  // the last id stays as context for the next window
  prefix_ = tok_->decode_bytes(ids_, skip_special_);
  return utf8_lossy(fresh);
}

NPUSIM_FUNC std::string Decoder::flush() {
  const std::string bytes = tok_->decode_bytes(ids_, skip_special_);
  std::string fresh = bytes.size() > prefix_.size() ? bytes.substr(prefix_.size()) : std::string();
  ids_.clear(), prefix_.clear();
  return utf8_lossy(fresh);
}

}  // namespace npusim::inline NPUSIM_ABI::text
