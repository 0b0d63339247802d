// Code point level helpers the tokenizer needs: strict UTF-8 decode/encode, the general
// categories \p{L} and \p{N} (generated tables, binary search behind an ASCII fast path),
// Unicode White_Space (the set Oniguruma's \s matches), and NFC normalisation.
// NFC is the full algorithm (canonical decomposition, canonical ordering, composition, Hangul)
// over the tables Python's unicodedata produced, so it covers every script of that Unicode version.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/text/unicode_tables.hpp"

namespace npusim::inline NPUSIM_ABI::text {

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 when the bytes there are not a
// complete, shortest-form, non-surrogate sequence.
inline std::size_t utf8_decode(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return cp = c, 1;
  std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  char32_t v = c & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3F);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return cp = v, n;
}

inline void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Whole string to code points; invalid UTF-8 is an error naming the byte offset.
inline std::vector<char32_t> utf8_to_code_points(std::string_view s, std::string_view what = "text") {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    std::size_t n = utf8_decode(s, i, cp);
    if (n == 0)
      throw Error(ErrorCode::parse, std::string(what) + " is not valid UTF-8",
                  {.offset = i, .expected = "a UTF-8 sequence", .found = "byte " + std::to_string(static_cast<unsigned char>(s[i]))});
    out.push_back(cp);
    i += n;
  }
  return out;
}

// Throws unless s is valid UTF-8 (the offset of the first bad byte in the message).
inline void require_utf8(std::string_view s, std::string_view what = "text") {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    char32_t cp;
    const std::size_t n = utf8_decode(s, i, cp);
    if (n == 0)
      throw Error(ErrorCode::parse, std::string(what) + " is not valid UTF-8",
                  {.offset = i, .expected = "a UTF-8 sequence", .found = "byte " + std::to_string(static_cast<unsigned char>(s[i]))});
    i += n;
  }
}

// Length of the longest prefix of s that ends on a complete UTF-8 boundary, treating a
// truncated sequence at the end as "not yet complete" (its bytes are kept for later).
inline std::size_t utf8_complete_prefix(std::string_view s) {
  std::size_t n = s.size(), k = 0;
  while (k < 3 && k < n && (static_cast<unsigned char>(s[n - 1 - k]) & 0xC0) == 0x80) ++k;
  if (k == n) return n;  // only continuation bytes: nothing can complete them
  const unsigned char lead = static_cast<unsigned char>(s[n - 1 - k]);
  std::size_t need = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead < 0xE0 ? 2 : 1;
  if (lead < 0xC2 || lead > 0xF4) need = 1;
  return need > k + 1 ? n - 1 - k : n;
}

// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
inline std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    if (std::size_t n = utf8_decode(s, i, cp)) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    // Maximal subpart: the lead byte plus the continuation bytes that could still have been valid.
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t len = 1;
    if (c >= 0xC2 && c <= 0xF4) {
      const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      while (len < need && i + len < s.size()) {
        const unsigned char d = static_cast<unsigned char>(s[i + len]);
        unsigned char lo = 0x80, hi = 0xBF;
        if (len == 1) {
          if (c == 0xE0) lo = 0xA0;
          else if (c == 0xED) hi = 0x9F;
          else if (c == 0xF0) lo = 0x90;
          else if (c == 0xF4) hi = 0x8F;
        }
        if (d < lo || d > hi) break;
        ++len;
      }
    }
    out += "\xEF\xBF\xBD";
    i += len;
  }
  return out;
}

namespace detail {
template <std::size_t N>
inline bool in_ranges(const tables::CodeRange (&r)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(r), std::end(r), cp, [](char32_t v, const tables::CodeRange& x) { return v < x.first; });
  return it != std::begin(r) && cp <= (it - 1)->last;
}
}  // namespace detail

namespace detail {
inline constexpr std::uint8_t flag_letter = 1, flag_number = 2, flag_nfc_not_quick = 4;

// One byte of flags per BMP code point (64 KiB, built once), so that the split matchers and NFC's
// quick check do not binary-search the range tables for every character of CJK or Cyrillic text.
inline const std::vector<std::uint8_t>& bmp_flags() {
  static const std::vector<std::uint8_t> flags = [] {
    std::vector<std::uint8_t> f(0x10000, 0);
    const auto mark = [&](const auto& table, std::uint8_t bit) {
      for (const auto& r : table)
        for (char32_t c = r.first; c <= r.last && c < 0x10000; ++c) f[c] |= bit;
    };
    mark(tables::letters, flag_letter);
    mark(tables::numbers, flag_number);
    mark(tables::nfc_not_quick, flag_nfc_not_quick);
    return f;
  }();
  return flags;
}
}  // namespace detail

inline bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  if (cp < 0x10000) return detail::bmp_flags()[cp] & detail::flag_letter;
  return detail::in_ranges(tables::letters, cp);
}

inline bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  if (cp < 0x10000) return detail::bmp_flags()[cp] & detail::flag_number;
  return detail::in_ranges(tables::numbers, cp);
}

// The Unicode White_Space property (PropList.txt; stable since Unicode 6.3): what Oniguruma's \s
// and Rust's char::is_whitespace match. Python's str.isspace differs (it adds U+001C..U+001F).
inline bool is_whitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

inline std::uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto& t = tables::combining_classes;
  auto it = std::upper_bound(std::begin(t), std::end(t), cp, [](char32_t v, const tables::CombiningClass& x) { return v < x.first; });
  return it != std::begin(t) && cp <= (it - 1)->last ? (it - 1)->ccc : 0;
}

namespace detail {
inline constexpr char32_t hangul_s = 0xAC00, hangul_l = 0x1100, hangul_v = 0x1161, hangul_t = 0x11A7;
inline constexpr char32_t hangul_lcount = 19, hangul_vcount = 21, hangul_tcount = 28;
inline constexpr char32_t hangul_ncount = hangul_vcount * hangul_tcount, hangul_scount = hangul_lcount * hangul_ncount;

inline void decompose_into(char32_t cp, std::vector<char32_t>& out) {
  if (cp < 0xC0) return out.push_back(cp);  // nothing below U+00C0 decomposes (checked by the generator)
  if (cp >= hangul_s && cp < hangul_s + hangul_scount) {
    const char32_t s = cp - hangul_s;
    out.push_back(hangul_l + s / hangul_ncount);
    out.push_back(hangul_v + (s % hangul_ncount) / hangul_tcount);
    if (s % hangul_tcount) out.push_back(hangul_t + s % hangul_tcount);
    return;
  }
  const auto& t = tables::decompositions;
  auto it = std::lower_bound(std::begin(t), std::end(t), cp, [](const tables::Decomposition& x, char32_t v) { return x.cp < v; });
  if (it == std::end(t) || it->cp != cp) return out.push_back(cp);
  decompose_into(it->first, out);
  if (it->second) decompose_into(it->second, out);
}

inline char32_t compose_pair(char32_t a, char32_t b) {
  if (b < 0x300) return 0;  // every second element of a composition is >= U+0300 (checked by the generator)
  if (a >= hangul_l && a < hangul_l + hangul_lcount && b >= hangul_v && b < hangul_v + hangul_vcount)
    return hangul_s + ((a - hangul_l) * hangul_vcount + (b - hangul_v)) * hangul_tcount;
  if (a >= hangul_s && a < hangul_s + hangul_scount && (a - hangul_s) % hangul_tcount == 0 && b > hangul_t &&
      b < hangul_t + hangul_tcount)
    return a + (b - hangul_t);
  const auto& t = tables::compositions;
  auto it = std::lower_bound(std::begin(t), std::end(t), std::pair{a, b}, [](const tables::Composition& x, std::pair<char32_t, char32_t> v) {
    return x.first != v.first ? x.first < v.first : x.second < v.second;
  });
  return it != std::end(t) && it->first == a && it->second == b ? it->composite : 0;
}
}  // namespace detail

// NFC (UAX #15): decompose canonically, order marks by combining class (stable), then compose
// each unblocked mark with the last starter.
inline std::string nfc(std::string_view s) {
  // Quick check: text with no character that NFC could change, compose or reorder is already NFC.
  bool quick = true;
  for (std::size_t i = 0; i < s.size() && quick;) {
    if (static_cast<unsigned char>(s[i]) < 0xCC) { ++i; continue; }  // ASCII, or a lead byte below U+0300
    char32_t cp;
    const std::size_t n = utf8_decode(s, i, cp);
    if (n == 0) { quick = false; break; }  // invalid: the full path reports it
    quick = cp < 0x10000 ? !(detail::bmp_flags()[cp] & detail::flag_nfc_not_quick) : !detail::in_ranges(tables::nfc_not_quick, cp);
    i += n;
  }
  if (quick) return std::string(s);
  std::vector<char32_t> d;
  d.reserve(s.size());
  for (char32_t cp : utf8_to_code_points(s)) detail::decompose_into(cp, d);
  for (std::size_t i = 0; i < d.size();) {  // canonical ordering of each run of non-starters
    if (combining_class(d[i]) == 0) { ++i; continue; }
    std::size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  std::vector<char32_t> out;
  out.reserve(d.size());
  std::size_t starter = SIZE_MAX;  // index in out of the last starter
  int last_ccc = -1;               // class of the last character appended after that starter
  for (char32_t cp : d) {
    const int ccc = combining_class(cp);
    if (starter != SIZE_MAX && (last_ccc < ccc || (last_ccc == 0 && out.size() == starter + 1))) {
      // Not blocked: nothing between the starter and cp has a class >= cp's (or cp follows it).
      if (char32_t c = detail::compose_pair(out[starter], cp)) {
        out[starter] = c;
        continue;
      }
    }
    if (ccc == 0) starter = out.size(), last_ccc = 0;
    else last_ccc = ccc;
    out.push_back(cp);
  }
  std::string r;
  r.reserve(s.size());
  for (char32_t cp : out) utf8_append(r, cp);
  return r;
}

}  // namespace npusim::inline NPUSIM_ABI::text
