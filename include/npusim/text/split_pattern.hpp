// The pre-tokenizer split regexes of GPT-2, Qwen2 and Llama 3, as hand-written matchers over code
// points. Their tokenizer.json files carry the regex as a string; we recognise the exact strings
// and refuse any other, so a new pattern is a loud error rather than a silent mis-split.
// Semantics follow Oniguruma (what HF tokenizers runs): alternatives tried left to right at each
// position, greedy quantifiers with backtracking, \s = White_Space, \p{L}/\p{N} = general
// categories, (?i:...) folds case (so 'ſ' matches s, as Unicode simple case folding does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

enum class SplitPattern { gpt2, qwen2, llama3 };

inline constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline SplitPattern split_pattern_from_regex(std::string_view regex, const std::string& source) {
  if (regex == qwen2_pattern) return SplitPattern::qwen2;
  if (regex == llama3_pattern) return SplitPattern::llama3;
  if (regex == gpt2_pattern) return SplitPattern::gpt2;
  throw Error(ErrorCode::unsupported, "pre-tokenizer Split regex is not one this tokenizer implements",
              {.file = source, .expected = "the GPT-2, Qwen2 or Llama 3 pattern (docs/tokenizer.md)", .found = std::string(regex)});
}

namespace detail {
inline bool is_crlf(char32_t c) { return c == '\r' || c == '\n'; }
inline bool is_other(char32_t c) { return !is_whitespace(c) && !is_letter(c) && !is_number(c); }

// The contractions 's 't 're 've 'm 'll 'd at i; returns the match length or 0.
inline std::size_t match_contraction(const std::vector<char32_t>& t, std::size_t i, bool fold) {
  if (t[i] != '\'' || i + 1 >= t.size()) return 0;
  const auto eq = [&](std::size_t k, char lower) {
    if (i + k >= t.size()) return false;
    const char32_t c = t[i + k];
    if (c == static_cast<char32_t>(lower)) return true;
    if (!fold) return false;
    return c == static_cast<char32_t>(lower - 'a' + 'A') || (lower == 's' && c == 0x17F);
  };
  if (eq(1, 's') || eq(1, 't') || eq(1, 'm') || eq(1, 'd')) return 2;
  if ((eq(1, 'r') && eq(2, 'e')) || (eq(1, 'v') && eq(2, 'e')) || (eq(1, 'l') && eq(2, 'l'))) return 3;
  return 0;
}

inline std::size_t run_end(const std::vector<char32_t>& t, std::size_t i, bool (*pred)(char32_t)) {
  while (i < t.size() && pred(t[i])) ++i;
  return i;
}

// \s+(?!\S) then \s+, at i where t[i] is whitespace.
inline std::size_t match_trailing_space(const std::vector<char32_t>& t, std::size_t i) {
  const std::size_t k = run_end(t, i, is_whitespace);
  if (k == t.size()) return k - i;
  if (k - i >= 2) return k - 1 - i;  // backtrack one so the next char is whitespace
  return k - i;                       // the plain \s+ alternative
}

inline std::size_t match_gpt2(const std::vector<char32_t>& t, std::size_t i) {
  if (std::size_t n = match_contraction(t, i, false)) return n;
  const std::size_t j = t[i] == ' ' && i + 1 < t.size() ? i + 1 : i;  // the optional leading space
  for (auto pred : {is_letter, is_number, is_other})
    if (pred(t[j])) return run_end(t, j, pred) - i;
  return match_trailing_space(t, i);  // t[i] is whitespace here
}

inline std::size_t match_qwen2_llama3(const std::vector<char32_t>& t, std::size_t i, std::size_t max_digits) {
  if (std::size_t n = match_contraction(t, i, true)) return n;
  const char32_t c = t[i];
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (is_letter(c)) return run_end(t, i, is_letter) - i;
  if (!is_crlf(c) && !is_number(c) && i + 1 < t.size() && is_letter(t[i + 1])) return run_end(t, i + 1, is_letter) - i;
  // \p{N} or \p{N}{1,3}
  if (is_number(c)) {
    std::size_t k = i;
    while (k < t.size() && k - i < max_digits && is_number(t[k])) ++k;
    return k - i;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const std::size_t j = c == ' ' && i + 1 < t.size() && is_other(t[i + 1]) ? i + 1 : i;
  if (is_other(t[j])) return run_end(t, run_end(t, j, is_other), is_crlf) - i;
  // \s*[\r\n]+ : the whitespace run up to its last line break
  const std::size_t k = run_end(t, i, is_whitespace);
  for (std::size_t p = k; p > i; --p)
    if (is_crlf(t[p - 1])) return p - i;
  return match_trailing_space(t, i);
}
}  // namespace detail

// Splits text (already as code points) into pieces: piece(begin, end) per piece, code point indices.
// Every code point lands in exactly one piece (the patterns match any character), so this is also
// HF's "Isolated" split behaviour.
template <class F>
void for_each_split(const std::vector<char32_t>& t, SplitPattern p, F&& piece) {
  for (std::size_t i = 0; i < t.size();) {
    std::size_t n = p == SplitPattern::gpt2     ? detail::match_gpt2(t, i)
                    : p == SplitPattern::qwen2 ? detail::match_qwen2_llama3(t, i, 1)
                                               : detail::match_qwen2_llama3(t, i, 3);
    if (n == 0) n = 1;  // unreachable for these patterns; guards against an endless loop
    piece(i, i + n);
    i += n;
  }
}

inline std::vector<std::pair<std::size_t, std::size_t>> split_code_points(const std::vector<char32_t>& t, SplitPattern p) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for_each_split(t, p, [&](std::size_t b, std::size_t e) { out.emplace_back(b, e); });
  return out;
}

// Convenience for tests and tools: the pieces as UTF-8 strings.
inline std::vector<std::string> split_text(std::string_view text, SplitPattern p) {
  const auto cps = utf8_to_code_points(text);
  std::vector<std::string> out;
  for (auto [b, e] : split_code_points(cps, p)) {
    std::string s;
    for (std::size_t k = b; k < e; ++k) utf8_append(s, cps[k]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace npusim::inline NPUSIM_ABI::text
