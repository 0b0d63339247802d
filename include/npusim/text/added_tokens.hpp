// Added tokens (<|im_start|>, <|endoftext|>, <s>, ...): found in the text before any splitting,
// as HF's AddedVocabulary does: leftmost-longest match, then single_word / lstrip / rstrip
// adjust the match. Non-normalized tokens are matched on the raw text, normalized ones on the
// normalised text (their content normalised too).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/token.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

struct TextPiece {
  std::string text;
  std::optional<std::int64_t> id;  // set: this piece is the added token id
};

class AddedVocabulary {
 public:
  static AddedVocabulary from_json(const ir::json& arr, const std::string& source,
                                   const std::function<std::string(std::string_view)>& normalize) {
    AddedVocabulary v;
    if (!arr.is_array()) throw Error(ErrorCode::parse, "added_tokens must be an array", {.file = source, .found = arr.type_name()});
    for (const auto& a : arr) {
      AddedToken t;
      t.id = ir::get_int64(ir::require_field(a, "id", "added token", source), "added token id", source);
      t.content = ir::get_string(ir::require_field(a, "content", "added token", source), "added token content", source);
      if (t.id < 0 || t.id >= (std::int64_t{1} << 31))
        throw Error(ErrorCode::parse, "added token '" + t.content + "': id out of range", {.file = source, .expected = "0 <= id < 2^31",
                    .found = std::to_string(t.id)});
      t.special = ir::get_bool_or(a, "special", false, "added token '" + t.content + "'", source);
      t.lstrip = ir::get_bool_or(a, "lstrip", false, "added token '" + t.content + "'", source);
      t.rstrip = ir::get_bool_or(a, "rstrip", false, "added token '" + t.content + "'", source);
      t.normalized = ir::get_bool_or(a, "normalized", !t.special, "added token '" + t.content + "'", source);
      t.single_word = ir::get_bool_or(a, "single_word", false, "added token '" + t.content + "'", source);
      utf8_to_code_points(t.content, "added token content");
      v.by_id_[t.id] = v.tokens_.size();
      v.by_content_[t.content] = t.id;
      v.tokens_.push_back(t);
    }
    for (std::size_t i = 0; i < v.tokens_.size(); ++i) {
      const auto& t = v.tokens_[i];
      if (t.content.empty()) continue;
      auto& set = t.normalized ? v.normalized_ : v.raw_;
      std::string text = t.normalized ? normalize(t.content) : t.content;
      if (!text.empty()) set.push_back({std::move(text), i});
    }
    for (auto* set : {&v.raw_, &v.normalized_})  // longest first: the first hit at a position is the longest
      std::stable_sort(set->begin(), set->end(), [](const Pattern& x, const Pattern& y) { return x.text.size() > y.text.size(); });
    for (std::size_t k = 0; k < v.raw_.size(); ++k) v.raw_first_[static_cast<unsigned char>(v.raw_[k].text[0])].push_back(k);
    for (std::size_t k = 0; k < v.normalized_.size(); ++k)
      v.normalized_first_[static_cast<unsigned char>(v.normalized_[k].text[0])].push_back(k);
    return v;
  }

  // Splits text on the added tokens of one kind (normalized or not). Pieces without an id are
  // the text between matches; empty ones are dropped.
  std::vector<TextPiece> split(std::string_view s, bool normalized) const {
    const auto& set = normalized ? normalized_ : raw_;
    const auto& first = normalized ? normalized_first_ : raw_first_;
    std::vector<TextPiece> out;
    std::size_t start_offset = 0;
    for (std::size_t i = 0; i < s.size() && !set.empty();) {
      const Pattern* hit = nullptr;
      for (std::size_t k : first[static_cast<unsigned char>(s[i])])
        if (s.compare(i, set[k].text.size(), set[k].text) == 0) { hit = &set[k]; break; }
      if (!hit) { ++i; continue; }
      const AddedToken& t = tokens_[hit->index];
      std::size_t start = i, stop = i + hit->text.size();
      if (t.single_word && !(is_word_boundary(s, start, true) && is_word_boundary(s, stop, false))) { ++i; continue; }
      if (t.lstrip) {
        std::size_t b = start;
        while (b > start_offset) {
          std::size_t k = b - 1;
          while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
          char32_t cp;
          if (!utf8_decode(s, k, cp) || !is_whitespace(cp)) break;
          b = k;
        }
        start = b;
      }
      if (t.rstrip) {
        char32_t cp;
        while (stop < s.size()) {
          std::size_t n = utf8_decode(s, stop, cp);
          if (!n || !is_whitespace(cp)) break;
          stop += n;
        }
      }
      if (start_offset < start) out.push_back({std::string(s.substr(start_offset, start - start_offset)), std::nullopt});
      out.push_back({std::string(s.substr(start, stop - start)), t.id});
      start_offset = i = stop;
    }
    if (start_offset < s.size()) out.push_back({std::string(s.substr(start_offset)), std::nullopt});
    return out;
  }

  const AddedToken* find(std::int64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
  }
  std::optional<std::int64_t> id_of(std::string_view content) const {
    auto it = by_content_.find(std::string(content));
    return it == by_content_.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Pattern {
    std::string text;
    std::size_t index;
  };

  // single_word: the match must not touch a word character (letter, number, '_') on that side.
  static bool is_word_boundary(std::string_view s, std::size_t at, bool before) {
    char32_t cp = 0;
    if (before) {
      if (at == 0) return true;
      std::size_t k = at - 1;
      while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
      utf8_decode(s, k, cp);
    } else {
      if (at >= s.size()) return true;
      utf8_decode(s, at, cp);
    }
    return !(is_letter(cp) || is_number(cp) || cp == '_');
  }

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::int64_t, std::size_t> by_id_;
  std::unordered_map<std::string, std::int64_t> by_content_;
  std::vector<Pattern> raw_, normalized_;
  std::array<std::vector<std::size_t>, 256> raw_first_, normalized_first_;  // pattern indices by first byte
};

}  // namespace npusim::inline NPUSIM_ABI::text
