// GPT-2's byte-to-unicode table: every byte gets a printable code point so that byte-level BPE
// vocabularies are plain strings. Printable Latin-1 bytes map to themselves; the other 68 bytes
// map, in byte order, to U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#pragma once

#include <array>
#include <string>

#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

inline constexpr std::array<char32_t, 256> byte_to_unicode_table() {
  std::array<char32_t, 256> t{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    t[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return t;
}

inline constexpr std::array<char32_t, 256> byte_to_unicode = byte_to_unicode_table();
static_assert(byte_to_unicode[' '] == 0x120 && byte_to_unicode['\n'] == 0x10A && byte_to_unicode[0xAD] == 0x143);

// The inverse, as a code point -> byte lookup (-1: not a byte-level character). All mapped
// code points are below U+0144.
inline constexpr std::array<int, 0x144> unicode_to_byte_table() {
  std::array<int, 0x144> t{};
  for (auto& v : t) v = -1;
  for (int b = 0; b < 256; ++b) t[byte_to_unicode[static_cast<std::size_t>(b)]] = b;
  return t;
}
inline constexpr std::array<int, 0x144> unicode_to_byte = unicode_to_byte_table();

inline int byte_of_char(char32_t cp) { return cp < unicode_to_byte.size() ? unicode_to_byte[cp] : -1; }

// Bytes -> the byte-level string (each byte as its mapped code point, UTF-8 encoded).
inline void append_byte_level(std::string& out, std::string_view bytes) {
  for (unsigned char b : bytes) utf8_append(out, byte_to_unicode[b]);
}

// A byte-level token back to bytes, as HF's ByteLevel decoder: when any character is not in the
// table (an added token such as "<|im_start|> " with a plain space), the token's own UTF-8 is used.
inline std::string byte_level_token_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (std::size_t i = 0; i < token.size();) {
    char32_t cp;
    const std::size_t n = utf8_decode(token, i, cp);
    const int b = n ? byte_of_char(cp) : -1;
    if (b < 0) return std::string(token);
    out += static_cast<char>(b);
    i += n;
  }
  return out;
}

}  // namespace npusim::inline NPUSIM_ABI::text
