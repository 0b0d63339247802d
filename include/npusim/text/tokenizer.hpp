// A Hugging Face tokenizer.json reader and runner for the byte-level BPE of GPT-2 / Qwen2 /
// Qwen2.5 / Llama 3 and the SentencePiece-style BPE of Llama 2 / Mistral (docs/tokenizer.md).
// encode follows HF's pipeline: added tokens split out first (non-normalized ones on the raw
// text, normalized ones after normalising), normaliser, pre-tokenizer, BPE, post-processor.
// decode runs the decoder chain as HF's decode_chain. Anything in the file this code does not
// implement is an Error naming the component, never a silent approximation.
//
// The pipeline's parts (bpe.hpp, pipeline.hpp, added_tokens.hpp, unicode.hpp and its tables) stay
// behind Tokenizer's pointer: this header is all a program that tokenizes needs to parse.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"
#include "npusim/text/token.hpp"

namespace npusim::inline NPUSIM_ABI::text {

struct TokenizerParts;  // the model, normaliser, pre-tokenizer, decoder, added tokens, post-processor

class Tokenizer {
 public:
  using Id = std::int64_t;

  Tokenizer();  // an empty vocabulary

  static Tokenizer from_file(const std::string& path);

  static Tokenizer from_json_string(std::string_view text, const std::string& source = "tokenizer.json");

  std::vector<Id> encode(std::string_view text, bool add_special = false) const;

  std::string decode(const std::vector<Id>& ids, bool skip_special = false) const;

  // The decoder chain without the final UTF-8 repair: raw bytes, for the streaming Decoder.
  std::string decode_bytes(const std::vector<Id>& ids, bool skip_special = false) const;

  std::optional<Id> token_to_id(std::string_view token) const;

  std::optional<std::string> id_to_token(Id id) const;

  const std::vector<AddedToken>& added_tokens() const;
  std::vector<AddedToken> special_tokens() const;
  bool is_special(Id id) const;
  std::size_t vocab_size() const;

 private:
  std::vector<std::string> tokens_of(const std::vector<Id>& ids, bool skip_special) const;

  std::shared_ptr<const TokenizerParts> parts_;  // immutable once read: copies share it
};

// Streaming detokenisation: push ids one at a time, get back only text that is complete UTF-8.
// Bytes of a multi-byte character split across tokens are held until the character completes.
// Like HF's DecodeStream it decodes a short window of earlier ids with each new one and returns
// the difference, so decoders that look at neighbours (Strip of the first space) agree with decode.
// It keeps a pointer to the Tokenizer, which must outlive it (and not move).
class Decoder {
 public:
  explicit Decoder(const Tokenizer& tok, bool skip_special = false);

  std::string push(Tokenizer::Id id);

  // Whatever is still held (an unfinished character) as U+FFFD; call at the end of a stream.
  std::string flush();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<Tokenizer::Id> ids_;
  std::string prefix_;  // decode_bytes(ids_) as already emitted
};

}  // namespace npusim::inline NPUSIM_ABI::text

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/text/impl/tokenizer_inl.hpp"
#endif
