// Text in, text out: an LLM's programs driven by llm::generate with a tokenizer on both ends. The
// prompt is encoded as Hugging Face does (tokenizer(text): the post-processor's BOS where the model
// has one; a chat through its template), and each generated id goes through a streaming
// text::Decoder, so on_text receives complete UTF-8 as soon as a character is whole. Special tokens
// (the EOS that ended the generation) are not part of the text, as decode(skip_special_tokens=True).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/text/chat.hpp"
#include "npusim/text/tokenizer.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

struct TextGeneration {
  std::vector<std::int64_t> prompt;  // the prompt's ids
  Generation generation;             // the generated ids, stop reason, timings
  std::string text;                  // the generated text (without special tokens)
};

// From prompt ids.
TextGeneration generate_text(LlmPrograms& m, const text::Tokenizer& tok, std::span<const std::int64_t> prompt, const GenerateOptions& o,
                             const std::function<void(std::string_view piece)>& on_text = {});

// From text: encoded as tokenizer(text) (add_special_tokens=True).
TextGeneration generate_text(LlmPrograms& m, const text::Tokenizer& tok, std::string_view prompt, const GenerateOptions& o,
                             const std::function<void(std::string_view piece)>& on_text = {});

// From a conversation: rendered by the chat template, which opens the assistant's turn.
TextGeneration generate_chat(LlmPrograms& m, const text::Tokenizer& tok, const text::ChatTemplate& chat,
                             std::span<const text::ChatMessage> messages, const GenerateOptions& o,
                             const std::function<void(std::string_view piece)>& on_text = {});

}  // namespace npusim::inline NPUSIM_ABI::llm

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/text_generate_inl.hpp"
#endif
