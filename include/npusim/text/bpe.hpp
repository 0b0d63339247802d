// The BPE model of HF tokenizers: a vocabulary, merges ranked by their order in the file, and the
// word -> ids step. Merging follows HF's word.rs exactly (lowest rank first, ties to the left, a
// queued merge re-checked when popped), using a min-heap over a linked list of symbols, so a word
// of n symbols costs O(n log n). Words up to 256 bytes are cached (word -> ids).
// Supported options: byte_fallback (<0xNN> tokens), unk_token with fuse_unk, ignore_merges.
// Refused loudly: dropout, continuing_subword_prefix, end_of_word_suffix.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/text/unicode.hpp"

namespace npusim::inline NPUSIM_ABI::text {

// Lets the hash maps be searched with a string_view (no temporary std::string per lookup).
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  using Id = std::int64_t;

  static BpeModel from_json(const ir::json& model, const std::string& source) {
    BpeModel m;
    const std::string type = model.contains("type") ? ir::get_string(model["type"], "model.type", source) : "BPE";
    if (type != "BPE")
      throw Error(ErrorCode::unsupported, "tokenizer model type is not supported", {.file = source, .expected = "BPE", .found = type});
    for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
      if (auto it = model.find(key); it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
        throw Error(ErrorCode::unsupported, std::string("BPE option \"") + key + "\" is not supported", {.file = source, .expected = "null", .found = it->dump()});
    const auto& vocab = ir::require_field(model, "vocab", "model", source);
    if (!vocab.is_object()) throw Error(ErrorCode::parse, "model.vocab must be an object", {.file = source, .found = vocab.type_name()});
    for (const auto& [tok, idj] : vocab.items()) {
      const Id id = ir::get_int64(idj, "model.vocab[\"" + tok + "\"]", source);
      // Ids index a table: one far beyond the entries (a tiny file claiming id 2^31) would
      // allocate gigabytes for nothing. Gaps of up to 2^16 unused ids are allowed.
      const Id limit = std::min<Id>(static_cast<Id>(vocab.size()) + (Id{1} << 16), Id{1} << 31);
      if (id < 0 || id >= limit)
        throw Error(ErrorCode::parse, "model.vocab[\"" + tok + "\"]: vocabulary id out of range (the vocabulary has " + std::to_string(vocab.size()) +
                                          " entries; ids may leave gaps of up to 65536)",
                    {.file = source, .expected = "0 <= id < " + std::to_string(limit), .found = std::to_string(id)});
      m.vocab_[tok] = id;
      if (static_cast<std::size_t>(id) >= m.id_to_token_.size()) m.id_to_token_.resize(static_cast<std::size_t>(id) + 1);
      m.id_to_token_[static_cast<std::size_t>(id)] = tok;
    }
    const auto& merges = ir::require_field(model, "merges", "model", source);
    if (!merges.is_array()) throw Error(ErrorCode::parse, "model.merges must be an array", {.file = source, .found = merges.type_name()});
    std::uint32_t rank = 0;
    for (const auto& mj : merges) {
      std::string a, b;
      if (mj.is_string()) {  // "a b"
        const std::string s = mj.get<std::string>();
        const auto sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw Error(ErrorCode::parse, "merge #" + std::to_string(rank) + " is not two tokens separated by one space", {.file = source, .found = "\"" + s + "\""});
        a = s.substr(0, sp), b = s.substr(sp + 1);
      } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {  // ["a", "b"]
        a = mj[0].get<std::string>(), b = mj[1].get<std::string>();
      } else {
        throw Error(ErrorCode::parse, "merge #" + std::to_string(rank) + " has the wrong form", {.file = source, .expected = "\"a b\" or [\"a\", \"b\"]", .found = mj.dump()});
      }
      const Id ia = m.require_token(a, rank, source), ib = m.require_token(b, rank, source), inew = m.require_token(a + b, rank, source);
      m.merges_[pair_key(ia, ib)] = Merge{rank, inew};  // a repeated pair keeps its last rank, as HF's HashMap
      ++rank;
    }
    m.byte_fallback_ = ir::get_bool_or(model, "byte_fallback", false, "model", source);
    m.fuse_unk_ = ir::get_bool_or(model, "fuse_unk", false, "model", source);
    m.ignore_merges_ = ir::get_bool_or(model, "ignore_merges", false, "model", source);
    if (auto it = model.find("unk_token"); it != model.end() && !it->is_null()) {
      const std::string unk = ir::get_string(*it, "model.unk_token", source);
      auto v = m.vocab_.find(unk);
      if (v == m.vocab_.end()) throw Error(ErrorCode::parse, "model.unk_token is not in the vocabulary", {.file = source, .found = unk});
      m.unk_id_ = v->second;
    }
    if (m.byte_fallback_)
      for (int b = 0; b < 256; ++b) {
        auto v = m.vocab_.find(byte_token(static_cast<unsigned char>(b)));
        m.byte_ids_[static_cast<std::size_t>(b)] = v == m.vocab_.end() ? -1 : v->second;
      }
    return m;
  }

  static std::string byte_token(unsigned char b) {
    static constexpr char hex[] = "0123456789ABCDEF";
    return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
  }

  std::optional<Id> token_to_id(std::string_view t) const {
    auto it = vocab_.find(t);
    return it == vocab_.end() ? std::nullopt : std::optional<Id>(it->second);
  }
  const std::string* id_to_token(Id id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size() || id_to_token_[static_cast<std::size_t>(id)].empty()) return nullptr;
    return &id_to_token_[static_cast<std::size_t>(id)];
  }
  std::size_t vocab_size() const { return vocab_.size(); }

  // Appends the ids of one pre-tokenized word (model-level characters, e.g. byte-level mapped).
  void tokenize(std::string_view word, std::vector<Id>& out) const {
    if (word.empty()) return;
    if (ignore_merges_)
      if (auto it = vocab_.find(word); it != vocab_.end()) return out.push_back(it->second);
    const bool cacheable = word.size() <= 256;
    if (cacheable) {
      std::lock_guard lock(cache_->mutex);
      if (auto it = cache_->words.find(word); it != cache_->words.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const std::size_t first = out.size();
    merge_word(word, out);
    if (cacheable) {
      std::lock_guard lock(cache_->mutex);
      if (cache_->words.size() > 200000) cache_->words.clear();
      cache_->words.emplace(std::string(word), std::vector<Id>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
    }
  }

 private:
  struct Merge { std::uint32_t rank; Id new_id; };
  struct Symbol { Id id; std::ptrdiff_t prev, next; bool alive; };

  static std::uint64_t pair_key(Id a, Id b) { return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b); }

  Id require_token(const std::string& t, std::uint32_t rank, const std::string& source) const {
    auto it = vocab_.find(t);
    if (it == vocab_.end())
      throw Error(ErrorCode::parse, "merge #" + std::to_string(rank) + " names a token that is not in the vocabulary",
                  {.file = source, .expected = "a token of model.vocab", .found = "\"" + t + "\""});
    return it->second;
  }

  void merge_word(std::string_view word, std::vector<Id>& out) const {
    std::vector<Symbol> sym;
    sym.reserve(word.size());
    bool last_unk = false;
    const auto push = [&](Id id) {
      const auto n = static_cast<std::ptrdiff_t>(sym.size());
      sym.push_back({id, n - 1, n + 1, true});
    };
    for (std::size_t i = 0; i < word.size();) {
      char32_t cp;
      std::size_t n = utf8_decode(word, i, cp);
      if (n == 0) n = 1;  // cannot happen for valid input; keeps the loop finite
      const std::string_view ch = word.substr(i, n);
      i += n;
      if (auto it = vocab_.find(ch); it != vocab_.end()) {
        push(it->second), last_unk = false;
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (unsigned char b : ch) all = all && byte_ids_[b] >= 0;
        if (all) {
          for (unsigned char b : ch) push(byte_ids_[b]);
          last_unk = false;
          continue;
        }
      }
      if (unk_id_ >= 0) {  // with no unk token HF drops the character; so do we
        if (!(fuse_unk_ && last_unk)) push(unk_id_);
        last_unk = true;
      }
    }
    if (sym.empty()) return;
    sym.back().next = -1;
    struct Item { std::uint32_t rank; std::ptrdiff_t pos; Id new_id; };
    const auto later = [](const Item& x, const Item& y) { return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos; };
    std::priority_queue<Item, std::vector<Item>, decltype(later)> heap(later);
    const auto queue_pair = [&](std::ptrdiff_t p) {
      const std::ptrdiff_t q = sym[static_cast<std::size_t>(p)].next;
      if (q < 0) return;
      auto it = merges_.find(pair_key(sym[static_cast<std::size_t>(p)].id, sym[static_cast<std::size_t>(q)].id));
      if (it != merges_.end()) heap.push({it->second.rank, p, it->second.new_id});
    };
    for (std::size_t p = 0; p + 1 < sym.size(); ++p) queue_pair(static_cast<std::ptrdiff_t>(p));
    while (!heap.empty()) {
      const Item top = heap.top();
      heap.pop();
      Symbol& left = sym[static_cast<std::size_t>(top.pos)];
      if (!left.alive || left.next < 0) continue;
      Symbol& right = sym[static_cast<std::size_t>(left.next)];
      auto it = merges_.find(pair_key(left.id, right.id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale entry
      left.id = top.new_id;
      right.alive = false;
      left.next = right.next;
      if (left.next >= 0) sym[static_cast<std::size_t>(left.next)].prev = top.pos;
      if (left.prev >= 0) queue_pair(left.prev);
      queue_pair(top.pos);
    }
    for (const Symbol& s : sym)
      if (s.alive) out.push_back(s.id);
  }

  StringMap<Id> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::array<Id, 256> byte_ids_{};
  Id unk_id_ = -1;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  struct Cache {  // behind a pointer: the model stays movable; guarded for concurrent encode calls
    std::mutex mutex;
    StringMap<std::vector<Id>> words;
  };
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>();
};

}  // namespace npusim::inline NPUSIM_ABI::text
