// The tokenizer.json components around the BPE model, each read from its JSON and run as HF does:
// Normalizer (NFC, Prepend, Replace with a string pattern, Sequence), PreTokenizer (Split with a
// recognised regex and Isolated behaviour, ByteLevel, Sequence), DecoderChain (ByteLevel, Replace,
// ByteFallback, Fuse, Strip, Sequence) and PostProcessor (ByteLevel, TemplateProcessing's single
// template, Sequence). Any other type or option is an Error that names it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/byte_level.hpp"
#include "npusim/text/split_pattern.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

namespace detail {
inline std::string component_type(const ir::json& j, const std::string& what, const std::string& source) {
  return ir::get_string(ir::require_field(j, "type", what, source), what + ".type", source);
}

inline void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  for (std::size_t p; (p = s.find(from, i)) != std::string::npos; i = p + from.size()) out.append(s, i, p - i).append(to);
  out.append(s, i);
  s = std::move(out);
}

// Replace's pattern: {"String": "..."} only (a {"Regex": ...} pattern is refused).
inline std::string replace_pattern(const ir::json& j, const std::string& what, const std::string& source) {
  const auto& pat = ir::require_field(j, "pattern", what, source);
  if (pat.is_object() && pat.contains("String")) return ir::get_string(pat["String"], what + ".pattern.String", source);
  throw Error(ErrorCode::unsupported, what + " pattern is not a plain string", {.file = source, .expected = "{\"String\": ...}", .found = pat.dump()});
}

[[noreturn]] inline void unsupported_component(const std::string& what, const std::string& type, const std::string& source,
                                               const char* supported) {
  throw Error(ErrorCode::unsupported, what + " type is not supported", {.file = source, .expected = supported, .found = type});
}
}  // namespace detail

class Normalizer {
 public:
  static Normalizer from_json(const ir::json& j, const std::string& source) {
    Normalizer n;
    n.add(j, source);
    return n;
  }

  std::string apply(std::string_view in) const {
    std::string s(in);
    for (const auto& st : steps_) {
      if (st.kind == Kind::nfc) s = nfc(s);
      else if (st.kind == Kind::prepend) { if (!s.empty()) s.insert(0, st.a); }
      else detail::replace_all(s, st.a, st.b);
    }
    return s;
  }

 private:
  enum class Kind { nfc, prepend, replace };
  struct Step { Kind kind; std::string a, b; };

  void add(const ir::json& j, const std::string& source) {
    if (j.is_null()) return;
    const std::string type = detail::component_type(j, "normalizer", source);
    if (type == "Sequence") {
      for (const auto& sub : ir::require_field(j, "normalizers", "normalizer", source)) add(sub, source);
    } else if (type == "NFC") {
      steps_.push_back({Kind::nfc, {}, {}});
    } else if (type == "Prepend") {
      steps_.push_back({Kind::prepend, ir::get_string(ir::require_field(j, "prepend", "Prepend normalizer", source), "prepend", source), {}});
    } else if (type == "Replace") {
      steps_.push_back({Kind::replace, detail::replace_pattern(j, "Replace normalizer", source),
                        ir::get_string(ir::require_field(j, "content", "Replace normalizer", source), "content", source)});
    } else {
      detail::unsupported_component("normalizer", type, source, "NFC, Prepend, Replace or Sequence");
    }
  }

  std::vector<Step> steps_;
};

class PreTokenizer {
 public:
  static PreTokenizer from_json(const ir::json& j, const std::string& source) {
    PreTokenizer p;
    p.add(j, source);
    return p;
  }

  // Calls emit(std::string_view word) for each word the model sees (byte-level mapped where a
  // ByteLevel step is present), in order, without collecting them.
  template <class F>
  void apply(std::string_view text, F&& emit) const {
    run(0, std::string(text), emit);
  }

  std::vector<std::string> apply(std::string_view text) const {
    std::vector<std::string> out;
    apply(text, [&](std::string_view w) { out.emplace_back(w); });
    return out;
  }

 private:
  struct Step {
    std::optional<SplitPattern> split;
    bool byte_level = false, add_prefix_space = false;
  };

  template <class F>
  void run(std::size_t k, std::string piece, F& emit) const {
    if (k == steps_.size()) return emit(std::string_view(piece));
    const Step& st = steps_[k];
    if (st.byte_level && st.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
    const auto forward = [&](std::string_view sub) {
      if (!st.byte_level) return run(k + 1, std::string(sub), emit);
      std::string mapped;
      mapped.reserve(sub.size() * 2);
      append_byte_level(mapped, sub);
      run(k + 1, std::move(mapped), emit);
    };
    if (!st.split) return forward(piece);
    const auto cps = utf8_to_code_points(piece);
    std::size_t byte = 0, cp = 0;  // split boundaries are character boundaries: walk both in step
    for_each_split(cps, *st.split, [&](std::size_t, std::size_t end) {
      const std::size_t start = byte;
      for (; cp < end; ++cp) byte += cps[cp] < 0x80 ? 1 : cps[cp] < 0x800 ? 2 : cps[cp] < 0x10000 ? 3 : 4;
      forward(std::string_view(piece).substr(start, byte - start));
    });
  }

  void add(const ir::json& j, const std::string& source) {
    if (j.is_null()) return;
    const std::string type = detail::component_type(j, "pre_tokenizer", source);
    if (type == "Sequence") {
      for (const auto& sub : ir::require_field(j, "pretokenizers", "pre_tokenizer", source)) add(sub, source);
    } else if (type == "Split") {
      const auto& pat = ir::require_field(j, "pattern", "Split pre_tokenizer", source);
      if (!pat.is_object() || !pat.contains("Regex"))
        throw Error(ErrorCode::unsupported, "Split pre_tokenizer pattern is not a regex", {.file = source, .expected = "{\"Regex\": ...}", .found = pat.dump()});
      const std::string behavior = ir::get_string_or(j, "behavior", "Isolated", "Split pre_tokenizer", source);
      const bool invert = ir::get_bool_or(j, "invert", false, "Split pre_tokenizer", source);
      if (behavior != "Isolated" || invert)
        throw Error(ErrorCode::unsupported, "Split pre_tokenizer behaviour is not supported", {.file = source, .expected = "Isolated, invert false",
                    .found = behavior + (invert ? ", invert true" : "")});
      steps_.push_back({split_pattern_from_regex(ir::get_string(pat["Regex"], "Split pattern", source), source), false, false});
    } else if (type == "ByteLevel") {
      Step st;
      st.byte_level = true;
      st.add_prefix_space = ir::get_bool_or(j, "add_prefix_space", false, "ByteLevel pre_tokenizer", source);
      if (ir::get_bool_or(j, "use_regex", true, "ByteLevel pre_tokenizer", source)) st.split = SplitPattern::gpt2;
      steps_.push_back(st);
    } else {
      detail::unsupported_component("pre_tokenizer", type, source, "Split, ByteLevel or Sequence");
    }
  }

  std::vector<Step> steps_;
};

class DecoderChain {
 public:
  static DecoderChain from_json(const ir::json& j, const std::string& source) {
    DecoderChain d;
    d.add(j, source);
    return d;
  }

  // HF's decode: each step's decode_chain over the token list, then concatenation. raw: skip
  // the UTF-8 repair (U+FFFD for invalid bytes) so that a streaming caller sees the bytes.
  std::string decode(std::vector<std::string> tokens, bool raw) const {
    if (steps_.empty()) {  // HF joins with spaces when there is no decoder
      std::string s;
      for (std::size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + tokens[i];
      return s;
    }
    for (const auto& st : steps_) {
      switch (st.kind) {
        case Kind::byte_level: {
          std::string bytes;
          for (const auto& t : tokens) bytes += byte_level_token_bytes(t);
          tokens = {raw ? bytes : utf8_lossy(bytes)};
          break;
        }
        case Kind::replace:
          for (auto& t : tokens) detail::replace_all(t, st.a, st.b);
          break;
        case Kind::byte_fallback: tokens = byte_fallback(std::move(tokens), raw); break;
        case Kind::fuse: {
          std::string s;
          for (const auto& t : tokens) s += t;
          tokens = {std::move(s)};
          break;
        }
        case Kind::strip:
          for (auto& t : tokens) {
            std::size_t b = 0, e = t.size();
            for (std::size_t k = 0; k < st.start && t.compare(b, st.a.size(), st.a) == 0; ++k) b += st.a.size();
            for (std::size_t k = 0; k < st.stop && e >= b + st.a.size() && t.compare(e - st.a.size(), st.a.size(), st.a) == 0; ++k)
              e -= st.a.size();
            t = t.substr(b, e - b);
          }
          break;
      }
    }
    std::string s;
    for (const auto& t : tokens) s += t;
    return s;
  }

 private:
  enum class Kind { byte_level, replace, byte_fallback, fuse, strip };
  struct Step {
    Kind kind;
    std::string a, b;
    std::size_t start = 0, stop = 0;
  };

  // Runs of <0xNN> tokens become their bytes; a run that is not valid UTF-8 becomes one U+FFFD
  // per byte (HF's ByteFallback), unless raw.
  static std::vector<std::string> byte_fallback(std::vector<std::string> tokens, bool raw) {
    std::vector<std::string> out;
    std::string run;
    std::size_t run_len = 0;
    const auto flush = [&] {
      if (!run_len) return;
      bool valid = true;
      for (std::size_t i = 0; i < run.size() && valid;) {
        char32_t cp;
        const std::size_t n = utf8_decode(run, i, cp);
        valid = n != 0, i += n;
      }
      if (raw || valid) out.push_back(run);
      else for (std::size_t k = 0; k < run_len; ++k) out.push_back("\xEF\xBF\xBD");
      run.clear(), run_len = 0;
    };
    const auto hexval = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    for (auto& t : tokens) {
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hexval(t[3]) >= 0 && hexval(t[4]) >= 0) {
        run += static_cast<char>(hexval(t[3]) * 16 + hexval(t[4]));
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }

  void add(const ir::json& j, const std::string& source) {
    if (j.is_null()) return;
    const std::string type = detail::component_type(j, "decoder", source);
    if (type == "Sequence") {
      for (const auto& sub : ir::require_field(j, "decoders", "decoder", source)) add(sub, source);
    } else if (type == "ByteLevel") {
      steps_.push_back({Kind::byte_level, {}, {}});
    } else if (type == "Replace") {
      steps_.push_back({Kind::replace, detail::replace_pattern(j, "Replace decoder", source),
                        ir::get_string(ir::require_field(j, "content", "Replace decoder", source), "content", source)});
    } else if (type == "ByteFallback") {
      steps_.push_back({Kind::byte_fallback, {}, {}});
    } else if (type == "Fuse") {
      steps_.push_back({Kind::fuse, {}, {}});
    } else if (type == "Strip") {
      Step st{Kind::strip, ir::get_string(ir::require_field(j, "content", "Strip decoder", source), "content", source), {}};
      if (utf8_to_code_points(st.a).size() != 1)
        throw Error(ErrorCode::parse, "Strip decoder content must be one character", {.file = source, .found = "\"" + st.a + "\""});
      st.start = static_cast<std::size_t>(ir::get_int64(ir::require_field(j, "start", "Strip decoder", source), "start", source));
      st.stop = static_cast<std::size_t>(ir::get_int64(ir::require_field(j, "stop", "Strip decoder", source), "stop", source));
      steps_.push_back(st);
    } else {
      detail::unsupported_component("decoder", type, source, "ByteLevel, Replace, ByteFallback, Fuse, Strip or Sequence");
    }
  }

  std::vector<Step> steps_;
};

// What encode(add_special = true) puts around the ids: TemplateProcessing's "single" template
// (special tokens before and after $A); ByteLevel adds nothing.
struct PostProcessor {
  std::vector<std::int64_t> prefix, suffix;

  static PostProcessor from_json(const ir::json& j, const std::string& source,
                                 const std::function<std::optional<std::int64_t>(const std::string&)>& id_of) {
    PostProcessor p;
    p.add(j, source, id_of);
    return p;
  }

 private:
  void add(const ir::json& j, const std::string& source, const std::function<std::optional<std::int64_t>(const std::string&)>& id_of) {
    if (j.is_null()) return;
    const std::string type = detail::component_type(j, "post_processor", source);
    if (type == "Sequence") {
      for (const auto& sub : ir::require_field(j, "processors", "post_processor", source)) add(sub, source, id_of);
    } else if (type == "ByteLevel") {
      // offsets only
    } else if (type == "TemplateProcessing") {
      bool seen_a = false;
      const auto& specials = j.value("special_tokens", ir::json::object());
      for (const auto& item : ir::require_field(j, "single", "TemplateProcessing", source)) {
        if (item.contains("Sequence")) { seen_a = true; continue; }
        const std::string name = ir::get_string(ir::require_field(ir::require_field(item, "SpecialToken", "template item", source), "id", "SpecialToken", source),
                                                "SpecialToken.id", source);
        std::vector<std::int64_t> ids;
        if (auto it = specials.find(name); it != specials.end() && it->contains("ids")) {
          for (const auto& v : (*it)["ids"]) ids.push_back(ir::get_int64(v, "special_tokens ids", source));
        } else if (auto id = id_of(name)) {
          ids.push_back(*id);
        } else {
          throw Error(ErrorCode::parse, "TemplateProcessing names a special token that is not in the vocabulary", {.file = source, .found = name});
        }
        auto& dst = seen_a ? suffix : prefix;
        dst.insert(dst.end(), ids.begin(), ids.end());
      }
    } else {
      detail::unsupported_component("post_processor", type, source, "ByteLevel, TemplateProcessing or Sequence");
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI::text
