// A Hugging Face tokenizer.json reader and runner for the byte-level BPE of GPT-2 / Qwen2 /
// Qwen2.5 / Llama 3 and the SentencePiece-style BPE of Llama 2 / Mistral (docs/tokenizer.md).
// encode follows HF's pipeline: added tokens split out first (non-normalized ones on the raw
// text, normalized ones after normalising), normaliser, pre-tokenizer, BPE, post-processor.
// decode runs the decoder chain as HF's decode_chain. Anything in the file this code does not
// implement is an Error naming the component, never a silent approximation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/added_tokens.hpp"
#include "npusim/text/bpe.hpp"
#include "npusim/text/byte_level.hpp"
#include "npusim/text/pipeline.hpp"

namespace npusim::inline NPUSIM_ABI::text {

class Tokenizer {
 public:
  using Id = std::int64_t;

  static Tokenizer from_file(const std::string& path) {
    try {
      return from_json_string(read_file(path), path);
    } catch (Error& e) {
      e.with_file(path);
      throw;
    }
  }

  static Tokenizer from_json_string(std::string_view text, const std::string& source = "tokenizer.json") {
    const ir::json j = ir::parse_json(text, source);
    if (!j.is_object()) throw Error(ErrorCode::parse, "tokenizer.json must be a JSON object", {.file = source, .found = j.type_name()});
    Tokenizer t;
    t.model_ = BpeModel::from_json(ir::require_field(j, "model", "tokenizer.json", source), source);
    t.normalizer_ = Normalizer::from_json(j.value("normalizer", ir::json()), source);
    t.pre_tokenizer_ = PreTokenizer::from_json(j.value("pre_tokenizer", ir::json()), source);
    t.decoder_ = DecoderChain::from_json(j.value("decoder", ir::json()), source);
    t.added_ = AddedVocabulary::from_json(j.value("added_tokens", ir::json::array()), source,
                                          [&](std::string_view s) { return t.normalizer_.apply(s); });
    t.post_ = PostProcessor::from_json(j.value("post_processor", ir::json()), source,
                                       [&](const std::string& tok) { return t.token_to_id(tok); });
    return t;
  }

  std::vector<Id> encode(std::string_view text, bool add_special = false) const {
    std::vector<Id> ids;
    if (add_special) ids = post_.prefix;
    require_utf8(text, "text to encode");  // the matchers below assume UTF-8
    for (const auto& raw : added_.split(text, false)) {
      if (raw.id) { ids.push_back(*raw.id); continue; }
      const std::string normalized = normalizer_.apply(raw.text);
      for (const auto& piece : added_.split(normalized, true)) {
        if (piece.id) { ids.push_back(*piece.id); continue; }
        pre_tokenizer_.apply(piece.text, [&](std::string_view word) { model_.tokenize(word, ids); });
      }
    }
    if (add_special) ids.insert(ids.end(), post_.suffix.begin(), post_.suffix.end());
    return ids;
  }

  std::string decode(const std::vector<Id>& ids, bool skip_special = false) const {
    return decoder_.decode(tokens_of(ids, skip_special), false);
  }

  // The decoder chain without the final UTF-8 repair: raw bytes, for the streaming Decoder.
  std::string decode_bytes(const std::vector<Id>& ids, bool skip_special = false) const {
    return decoder_.decode(tokens_of(ids, skip_special), true);
  }

  std::optional<Id> token_to_id(std::string_view token) const {
    if (auto id = added_.id_of(token)) return id;
    return model_.token_to_id(token);
  }

  std::optional<std::string> id_to_token(Id id) const {
    if (const AddedToken* a = added_.find(id)) return a->content;
    if (const std::string* t = model_.id_to_token(id)) return *t;
    return std::nullopt;
  }

  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }
  std::vector<AddedToken> special_tokens() const {
    std::vector<AddedToken> out;
    for (const auto& a : added_.tokens())
      if (a.special) out.push_back(a);
    return out;
  }
  bool is_special(Id id) const {
    const AddedToken* a = added_.find(id);
    return a && a->special;
  }
  std::size_t vocab_size() const { return model_.vocab_size(); }

 private:
  std::vector<std::string> tokens_of(const std::vector<Id>& ids, bool skip_special) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (Id id : ids) {
      if (const AddedToken* a = added_.find(id)) {
        if (!(skip_special && a->special)) tokens.push_back(a->content);
      } else if (const std::string* t = model_.id_to_token(id)) {
        tokens.push_back(*t);
      } else {
        throw Error(ErrorCode::attr, "token id is not in the vocabulary",
                    {.expected = "0 <= id < " + std::to_string(model_.vocab_size() + added_.tokens().size()), .found = std::to_string(id)});
      }
    }
    return tokens;
  }

  BpeModel model_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  DecoderChain decoder_;
  AddedVocabulary added_;
  PostProcessor post_;
};

// Streaming detokenisation: push ids one at a time, get back only text that is complete UTF-8.
// Bytes of a multi-byte character split across tokens are held until the character completes.
// Like HF's DecodeStream it decodes a short window of earlier ids with each new one and returns
// the difference, so decoders that look at neighbours (Strip of the first space) agree with decode.
// It keeps a pointer to the Tokenizer, which must outlive it (and not move).
class Decoder {
 public:
  explicit Decoder(const Tokenizer& tok, bool skip_special = false) : tok_(&tok), skip_special_(skip_special) {}

  std::string push(Tokenizer::Id id) {
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

  // Whatever is still held (an unfinished character) as U+FFFD; call at the end of a stream.
  std::string flush() {
    const std::string bytes = tok_->decode_bytes(ids_, skip_special_);
    std::string fresh = bytes.size() > prefix_.size() ? bytes.substr(prefix_.size()) : std::string();
    ids_.clear(), prefix_.clear();
    return utf8_lossy(fresh);
  }

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<Tokenizer::Id> ids_;
  std::string prefix_;  // decode_bytes(ids_) as already emitted
};

}  // namespace npusim::inline NPUSIM_ABI::text
