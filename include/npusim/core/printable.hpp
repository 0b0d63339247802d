// Text from files (model, node and tensor names, paths, tokenizer strings) made safe to print on a
// terminal: a name holding ESC [ ... could otherwise recolour, retitle or rewrite the user's
// terminal. Valid UTF-8 passes unchanged (names in any script stay readable); escaped are the C0
// controls and DEL (\n, \r, \t, else \xNN), the C1 controls U+0080..U+009F (\u0080; a terminal may
// take U+009B as CSI), the bidirectional overrides and isolates U+202A..U+202E and U+2066..U+2069
// (they reorder what follows on the line), and every byte that is not part of valid UTF-8 (\xNN).
// Backslashes are left alone: this is for the terminal's safety, not a reversible encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace printable_detail {
// Length of the valid UTF-8 sequence at s[i] and its code point; 0 when the byte starts none
// (overlong forms, surrogates and values past U+10FFFF are invalid, as the standard says).
inline int utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  int n = 0;
  if (c < 0x80) return cp = c, 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + static_cast<std::size_t>(n) > s.size()) return 0;
  for (int k = 1; k < n; ++k) {
    const unsigned t = b(i + static_cast<std::size_t>(k));
    if ((t & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (t & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}
inline void append_hex(std::string& out, const char* prefix, unsigned v, int digits) {
  static constexpr char hex[] = "0123456789abcdef";
  out += prefix;
  for (int d = digits - 1; d >= 0; --d) out += hex[(v >> (4 * d)) & 15];
}
}  // namespace printable_detail

// `s` with control characters, bidi overrides and invalid UTF-8 escaped (see above). With
// keep_newlines, '\n' passes through: for whole multi-line reports whose lines npusim made.
inline std::string printable(std::string_view s, bool keep_newlines = false) {
  using namespace printable_detail;
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const int n = utf8_sequence(s, i, cp);
    if (n == 0) {
      append_hex(out, "\\x", static_cast<unsigned char>(s[i]), 2);
      ++i;
      continue;
    }
    if (cp == '\n' && keep_newlines) out += '\n';
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || cp == 0x7F) append_hex(out, "\\x", static_cast<unsigned>(cp), 2);
    else if ((cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
      append_hex(out, "\\u", static_cast<unsigned>(cp), 4);
    else out.append(s.substr(i, static_cast<std::size_t>(n)));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace npusim::inline NPUSIM_ABI
