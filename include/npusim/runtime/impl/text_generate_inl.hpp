// Definitions for npusim/runtime/text_generate.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/runtime/text_generate.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

NPUSIM_FUNC TextGeneration generate_text(LlmPrograms& m, const text::Tokenizer& tok, std::span<const std::int64_t> prompt,
                                         const GenerateOptions& o, const std::function<void(std::string_view piece)>& on_text) {
  TextGeneration r;
  r.prompt.assign(prompt.begin(), prompt.end());
  text::Decoder decoder(tok, /*skip_special=*/true);
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    r.text += piece;
    if (on_text) on_text(piece);
  };
  r.generation = generate(m, prompt, o, [&](std::int64_t id, std::size_t) { emit(decoder.push(id)); });
  emit(decoder.flush());
  return r;
}

NPUSIM_FUNC TextGeneration generate_text(LlmPrograms& m, const text::Tokenizer& tok, std::string_view prompt, const GenerateOptions& o,
                                         const std::function<void(std::string_view piece)>& on_text) {
  const std::vector<std::int64_t> ids = tok.encode(prompt, /*add_special=*/true);
  return generate_text(m, tok, std::span<const std::int64_t>(ids), o, on_text);
}

NPUSIM_FUNC TextGeneration generate_chat(LlmPrograms& m, const text::Tokenizer& tok, const text::ChatTemplate& chat,
                                         std::span<const text::ChatMessage> messages, const GenerateOptions& o,
                                         const std::function<void(std::string_view piece)>& on_text) {
  const std::vector<std::int64_t> ids = chat.encode(tok, messages, /*add_generation_prompt=*/true);
  return generate_text(m, tok, std::span<const std::int64_t>(ids), o, on_text);
}

}  // namespace npusim::inline NPUSIM_ABI::llm
