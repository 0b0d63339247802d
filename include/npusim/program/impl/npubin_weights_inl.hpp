// Definitions for npusim/program/npubin_weights.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <map>
#include <set>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/program/impl/npubin_format.hpp"
#include "npusim/program/npubin_weights.hpp"

namespace npusim::inline NPUSIM_ABI::program {

namespace npubin_detail {

struct StoredTensor {
  std::string key, read;  // stored under `key`, read from the source as `read`
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t offset = 0, nbytes = 0;  // relative to the data start
  // Packed (dtype u8, shape [N, row_bytes(K)]): the blocks of `read`'s values in `from`.
  std::string format;
  Shape logical_shape;
  DType logical_dtype = DType::f32, from = DType::f32;
};

struct WeightsPlan {
  std::vector<StoredTensor> tensors;
  std::vector<std::pair<std::string, std::string>> aliases;
  std::vector<std::string> notes;  // what was not embedded, and why
  std::uint64_t data_bytes = 0;
};

inline WeightsPlan plan_weights(const CompiledProgram& p, const weights::WeightSource& src, const EmbedOptions& o) {
  WeightsPlan plan;
  std::map<std::string, std::size_t> by_read, by_canon;
  std::map<std::pair<DType, DType>, std::vector<std::string>> casts;
  std::uint64_t at = 0;
  for (const WeightNeed& n : weight_needs(p)) {
    std::string read = n.key;
    if (!src.contains(read)) {
      read.clear();
      for (const auto& [a, b] : o.ties) {
        if (!n.graph || !n.key.ends_with(a)) continue;
        std::string cand = n.key.substr(0, n.key.size() - a.size()) + b;
        if (src.contains(cand) && src.meta(cand).first == n.shape) {
          read = cand;
          break;
        }
      }
      if (read.empty() && n.graph && weights::detail::is_inv_freq(n.key)) {
        plan.notes.push_back("not embedded: " + n.key + " (recomputed at load from rope_theta, as without embedding)");
        continue;
      }
      if (read.empty())
        throw Error(ErrorCode::weights, "weight missing from the weights source (cannot embed it)",
                    {.file = src.path(), .node = n.user, .tensor = n.key, .expected = "a tensor named '" + n.key + "'", .found = "none"});
    }
    if (n.graph && !n.block_format.empty()) {
      // Stored under the IR's key (a tied lm_head gets blocks of its own; the embedding that
      // shares its source reads the float values under the other key).
      const auto f = quant::parse_block_format(n.block_format);
      auto [shape, dtype] = src.meta(read);
      if (!f || shape != n.shape || shape.size() != 2)
        throw Error(ErrorCode::shape, "weight cannot be packed as the program's linears read it",
                    {.file = src.path(), .node = n.user, .tensor = read, .expected = n.block_format + " rows of " + to_string(n.shape),
                     .found = to_string(shape)});
      if (!by_read.emplace(n.key + "#" + n.block_format, plan.tensors.size()).second) continue;
      const Shape packed = quant::packed_shape(*f, shape);
      StoredTensor s{n.key, read, DType::u8, packed, align_up(at), static_cast<std::uint64_t>(packed[0]) * static_cast<std::uint64_t>(packed[1]),
                     n.block_format, n.shape, n.dtype, n.storage};
      (void)dtype;
      at = s.offset + s.nbytes;
      plan.tensors.push_back(std::move(s));
      continue;
    }
    if (by_read.count(read)) continue;
    auto [shape, dtype] = src.meta(read);
    DType store = dtype;
    if (n.graph) {
      if (shape != n.shape)
        throw Error(ErrorCode::shape, "weight shape differs from the IR (cannot embed it)",
                    {.file = src.path(), .node = n.user, .tensor = read, .expected = to_string(n.shape), .found = to_string(shape)});
      // A recipe's input keeps the source's dtype: the recipe computes from exactly those values.
      if (dtype != n.dtype && !n.recipe_input && !src.derived(read)) {
        if (!same_dtype_kind(dtype, n.dtype))
          throw Error(ErrorCode::dtype, "weight has the wrong kind of dtype (the input rule: a float weight takes float tensors, an integer weight "
                                        "integer ones, a bool weight bool; no silent conversion)",
                      {.file = src.path(), .node = n.user, .tensor = read, .expected = std::string(dtype_name(n.dtype)),
                       .found = std::string(dtype_name(dtype))});
        // As binding converts at load: a source that converts (a Hugging Face checkpoint) is
        // stored in the program's dtype, and said so.
        if (!o.allow_cast && !src.casts())
          throw Error(ErrorCode::dtype, "weight dtype differs from the IR (only a Hugging Face model directory's checkpoint is converted; "
                                        "store this file's weights in the IR's dtype)",
                      {.file = src.path(), .node = n.user, .tensor = read, .expected = std::string(dtype_name(n.dtype)),
                       .found = std::string(dtype_name(dtype))});
        store = n.dtype;
        casts[{dtype, n.dtype}].push_back(read);
      }
    }
    const std::string canon = src.canonical(read);
    if (auto c = by_canon.find(canon); c != by_canon.end()) {
      const StoredTensor& s = plan.tensors[c->second];
      if (s.dtype == store && s.shape == shape) {
        plan.aliases.emplace_back(read, s.key);
        by_read[read] = c->second;
        continue;
      }
    }
    const std::uint64_t es = dtype_size(store), count = static_cast<std::uint64_t>(checked_numel(shape));
    if (count > (std::uint64_t{1} << 46) / es)
      throw Error(ErrorCode::resource, "weight too large to embed", {.file = src.path(), .tensor = read, .found = to_string(shape)});
    StoredTensor s{read, read, store, shape, align_up(at), count * es, {}, {}, DType::f32, DType::f32};
    at = s.offset + s.nbytes;
    by_read[read] = plan.tensors.size();
    by_canon.emplace(canon, plan.tensors.size());
    plan.tensors.push_back(std::move(s));
  }
  plan.data_bytes = align_up(at);
  for (const auto& [dt, keys] : casts) {
    const std::string how = std::string(dtype_name(dt.first)) + " -> " + std::string(dtype_name(dt.second));
    plan.notes.push_back(keys.size() == 1 ? "cast when embedded: " + keys[0] + " " + how + " (the program's dtype)"
                                          : "cast when embedded: " + std::to_string(keys.size()) + " weights " + how + " (the program's dtype; " +
                                                keys[0] + ", ...)");
  }
  std::map<std::string, int> packed;
  for (const StoredTensor& t : plan.tensors)
    if (!t.format.empty()) ++packed[t.format];
  for (const auto& [f, n] : packed) plan.notes.push_back("stored as " + f + " blocks: " + std::to_string(n) + " linear weight(s)");
  return plan;
}

inline std::string pack_index(const WeightsPlan& plan) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(3);
  put(pk, "format"), put(pk, "npubin-weights");
  put(pk, "tensors");
  pk.pack_array(static_cast<std::uint32_t>(plan.tensors.size()));
  for (const StoredTensor& t : plan.tensors) {
    pk.pack_array(t.format.empty() ? 5 : 6);
    put(pk, t.key), put(pk, dtype_name(t.dtype)), put_shape(pk, t.shape), pk.pack_uint64(t.offset), pk.pack_uint64(t.nbytes);
    if (!t.format.empty()) {
      pk.pack_map(3);
      put(pk, "format"), put(pk, t.format);
      put(pk, "shape"), put_shape(pk, t.logical_shape);
      put(pk, "dtype"), put(pk, dtype_name(t.logical_dtype));
    }
  }
  put(pk, "aliases");
  pk.pack_array(static_cast<std::uint32_t>(plan.aliases.size()));
  for (const auto& [k, v] : plan.aliases) pk.pack_array(2), put(pk, k), put(pk, v);
  return std::string(buf.data(), buf.size());
}

inline std::string section_head(std::uint64_t index_bytes, std::uint64_t data_bytes, std::uint64_t block_bytes, std::uint64_t index_hash,
                                std::uint64_t table_hash) {
  std::string h(weights_magic, sizeof weights_magic);
  for (std::uint64_t v : {index_bytes, data_bytes, block_bytes, index_hash, table_hash, std::uint64_t{0}}) put_u64(h, v);
  put_u64(h, xxh64(h.data(), h.size()));
  return h;
}

// Streams the data section through a block buffer: each full block is hashed, then written.
class BlockWriter {
 public:
  BlockWriter(AtomicFile& f, std::uint64_t block) : f_(f), block_(block) { buf_.reserve(static_cast<std::size_t>(block)); }
  void put(const char* p, std::uint64_t n) {
    while (n) {
      const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n, block_ - buf_.size()));
      buf_.append(p, k);
      p += k, n -= k;
      if (buf_.size() == block_) flush();
    }
  }
  void zeros(std::uint64_t n) {
    static constexpr char z[4096] = {};
    for (; n; n -= std::min<std::uint64_t>(n, sizeof z)) put(z, std::min<std::uint64_t>(n, sizeof z));
  }
  // The checksum table (one u64 per block).
  std::string finish() {
    if (!buf_.empty()) flush();
    return std::move(table_);
  }

 private:
  void flush() {
    put_u64(table_, xxh64(buf_.data(), buf_.size()));
    f_.write(buf_);
    buf_.clear();
  }
  AtomicFile& f_;
  std::uint64_t block_;
  std::string buf_, table_;
};

}  // namespace npubin_detail

NPUSIM_FUNC std::vector<WeightNeed> weight_needs(const CompiledProgram& p) {
  std::map<std::string, std::size_t> producer, at;
  for (std::size_t i = 0; i < p.recipes.size(); ++i)
    for (const auto& o : p.recipes[i].outputs) producer[o] = i;
  std::vector<WeightNeed> out;
  std::set<std::size_t> expanded;
  auto visit = [&](auto&& self, const std::string& key, const WeightNeed& how) -> void {
    if (key.empty()) return;  // an absent optional recipe input
    if (auto r = producer.find(key); r != producer.end()) {
      if (!expanded.insert(r->second).second) return;
      const weights::Recipe& rec = p.recipes[r->second];
      for (const auto& in : rec.inputs) self(self, in, WeightNeed{in, false, true, {}, DType::f32, rec.kind + " recipe for " + key, {}, DType::f32});
      return;
    }
    auto [it, fresh] = at.emplace(key, out.size());
    if (fresh) return out.push_back(how);
    WeightNeed& n = out[it->second];
    n.recipe_input = n.recipe_input || how.recipe_input;
    if (how.graph && !n.graph) n.graph = true, n.shape = how.shape, n.dtype = how.dtype, n.user = how.user;
  };
  // The block format every reader of a key agrees on ("" once anything reads it otherwise).
  std::map<std::string, std::string> formats;
  for (const Partition& part : p.partitions) {
    const ir::Graph& g = part.graph;
    std::vector<bool> used(g.tensors.size(), false);
    std::vector<std::optional<std::string>> reads_as(g.tensors.size());
    auto agree = [](std::optional<std::string>& have, const std::string& f) { have = !have || *have == f ? f : std::string(); };
    for (const ir::Node& n : g.nodes)
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const auto t = static_cast<std::size_t>(n.inputs[i]);
        used[t] = true;
        const auto f = i == 1 ? ops::weight_block_format(n) : std::nullopt;
        agree(reads_as[t], f ? std::string(quant::to_string(*f)) : std::string());
      }
    for (auto t : g.outputs) agree(reads_as[static_cast<std::size_t>(t)], "");
    for (ir::TensorId id : g.weights) {
      const ir::TensorInfo& w = g.tensor(id);
      if (!used[static_cast<std::size_t>(id)] || g.constants.count(w.weight_key)) continue;
      const std::string f = reads_as[static_cast<std::size_t>(id)].value_or("");
      auto [it, fresh] = formats.emplace(w.weight_key, f);
      if (!fresh && it->second != f) it->second.clear();
      WeightNeed need{w.weight_key, true, false, w.shape, w.dtype, weights::detail::describe_users(g, id), {}, DType::f32};
      need.storage = part.plan.tensors.at(static_cast<std::size_t>(id)).storage;
      visit(visit, w.weight_key, need);
    }
  }
  for (WeightNeed& n : out)
    if (n.graph && !n.recipe_input)
      if (auto f = formats.find(n.key); f != formats.end()) n.block_format = f->second;
  return out;
}

NPUSIM_FUNC EmbeddedWeightsInfo save(const CompiledProgram& p, const std::string& path, const weights::WeightSource* embed,
                                     const EmbedOptions& o) {
  using namespace npubin_detail;
  if (!embed) {
    save(p, path);
    return {};
  }
  if (o.block_bytes < min_block_bytes || o.block_bytes > max_block_bytes || (o.block_bytes & (o.block_bytes - 1)))
    throw Error(ErrorCode::attr, "checksum block size must be a power of two in [4096, 2^30]", {.found = std::to_string(o.block_bytes)});
  const WeightsPlan plan = plan_weights(p, *embed, o);
  const std::string index = pack_index(plan);
  AtomicFile f(path);
  f.write(serialize(p));
  f.write_zeros(align_up(f.size()) - f.size());
  const std::uint64_t section = f.size();
  f.write_zeros(head_bytes);
  f.write(index);
  f.write_zeros(align_up(f.size()) - f.size());
  BlockWriter data(f, o.block_bytes);
  std::uint64_t at = 0, done = 0;
  for (const StoredTensor& s : plan.tensors) {
    Tensor t = embed->load(s.read);
    const Shape& want = s.format.empty() ? s.shape : s.logical_shape;
    if (t.shape() != want)
      throw Error(ErrorCode::shape, "weights source returned a tensor of another shape than it declared",
                  {.file = embed->path(), .tensor = s.read, .expected = to_string(want), .found = to_string(t.shape())});
    if (!s.format.empty()) {
      // The blocks the target would pack at load: from the IR dtype's values in its storage dtype.
      Tensor rows = Tensor::empty(DType::u8, s.shape);
      try {
        quant::pack_matrix(*quant::parse_block_format(s.format), t.to(s.logical_dtype).to(s.from), static_cast<std::byte*>(rows.raw()),
                           quant::threaded_rows);
      } catch (Error& e) {
        throw e.with_tensor(s.read).with_file(embed->path());
      }
      t = std::move(rows);
    }
    t = t.to(s.dtype);
    data.zeros(s.offset - at);
    data.put(static_cast<const char*>(t.raw()), s.nbytes);
    at = s.offset + s.nbytes;
    done += s.nbytes;
    if (o.progress) o.progress("embedding weights", done, plan.data_bytes);
  }
  data.zeros(plan.data_bytes - at);
  const std::string table = data.finish();
  f.write(table);
  f.patch(section, section_head(index.size(), plan.data_bytes, o.block_bytes, xxh64(index.data(), index.size()), xxh64(table.data(), table.size())));
  EmbeddedWeightsInfo info{true, static_cast<std::int64_t>(plan.tensors.size()), static_cast<std::int64_t>(plan.aliases.size()), done,
                           f.size() - section, o.block_bytes, plan.notes};
  f.commit();
  return info;
}

NPUSIM_FUNC std::unique_ptr<NpubinWeights> NpubinWeights::open(const std::string& path) {
  std::unique_ptr<NpubinWeights> w(new NpubinWeights);
  w->path_ = path;
  MappedFile m = map_file(path);
  const std::uint64_t size = m.size;
  w->map_ = std::move(m.data);
  return w->parse(size) ? std::move(w) : nullptr;
}

NPUSIM_FUNC std::unique_ptr<NpubinWeights> NpubinWeights::from_bytes(std::string_view bytes, const std::string& name) {
  std::unique_ptr<NpubinWeights> w(new NpubinWeights);
  w->path_ = name;
  if (!bytes.empty()) {
    void* p = ::operator new(bytes.size(), std::align_val_t(Tensor::alignment));
    std::memcpy(p, bytes.data(), bytes.size());
    w->map_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(Tensor::alignment)); });
  }
  return w->parse(bytes.size()) ? std::move(w) : nullptr;
}

NPUSIM_FUNC std::pair<Shape, DType> NpubinWeights::meta(const std::string& key) const {
  const Entry& e = entry(key);
  if (!e.format.empty()) return {e.logical_shape, e.logical_dtype};
  return {e.shape, e.dtype};
}

NPUSIM_FUNC std::string NpubinWeights::block_format(const std::string& key) const {
  const Entry* e = find(canonical(key));
  return e ? e->format : std::string();
}

NPUSIM_FUNC Tensor NpubinWeights::load(const std::string& key) const {
  const Entry& e = entry(key);
  verify_range(e.offset, e.nbytes, key);
  auto* p = static_cast<std::byte*>(map_.get()) + l_.data + e.offset;
  if (e.dtype == DType::boolean)
    for (std::uint64_t i = 0; i < e.nbytes; ++i)
      if (static_cast<std::uint8_t>(p[i]) > 1)
        throw Error(ErrorCode::parse, "BOOL tensor holds a byte that is not 0 or 1",
                    {.file = path_, .tensor = key, .offset = l_.data + e.offset + i, .expected = "0 or 1",
                     .found = std::to_string(static_cast<std::uint8_t>(p[i]))});
  if (!e.format.empty()) {
    // Codes need no check (every byte is one); a scale that is Inf or NaN would poison its block.
    const quant::BlockFormat f = *quant::parse_block_format(e.format);
    const auto rb = static_cast<std::uint64_t>(e.shape[1]);
    for (std::int64_t r = 0; r < e.shape[0]; ++r)
      if (auto b = quant::first_bad_scale(f, p + static_cast<std::uint64_t>(r) * rb, e.logical_shape[1]))
        throw Error(ErrorCode::weights, "packed weight has a block whose scale is not finite (corrupted or hand-made file)",
                    {.file = path_, .tensor = key, .offset = l_.data + e.offset + static_cast<std::uint64_t>(r) * rb + static_cast<std::uint64_t>(*b) * quant::block_bytes(f),
                     .expected = "finite float16 scales", .found = "row " + std::to_string(r) + ", block " + std::to_string(*b)});
  }
  return Tensor::wrap(e.dtype, e.shape, p, map_);
}

NPUSIM_FUNC std::string NpubinWeights::canonical(const std::string& key) const {
  auto a = aliases_.find(key);
  return a == aliases_.end() ? key : a->second;
}

NPUSIM_FUNC EmbeddedWeightsInfo NpubinWeights::info() const {
  EmbeddedWeightsInfo i{true, static_cast<std::int64_t>(entries_.size()), static_cast<std::int64_t>(aliases_.size()), 0,
                        l_.end - l_.section, l_.block_bytes, {}};
  std::map<std::string, int> packed;
  for (const Entry& e : entries_) {
    i.bytes += e.nbytes;
    if (!e.format.empty()) ++packed[e.format];
  }
  for (const auto& [f, n] : packed) i.notes.push_back("stored as " + f + " blocks: " + std::to_string(n) + " linear weight(s)");
  return i;
}

NPUSIM_FUNC auto NpubinWeights::find(const std::string& key) const -> const Entry* {
  auto it = index_.find(canonical(key));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

NPUSIM_FUNC auto NpubinWeights::entry(const std::string& key) const -> const Entry& {
  const Entry* e = find(key);
  if (!e) throw Error(ErrorCode::weights, "not in the embedded weights", {.file = path_, .tensor = key});
  return *e;
}

NPUSIM_FUNC bool NpubinWeights::parse(std::uint64_t size) {
  using namespace npubin_detail;
  const std::string_view all(static_cast<const char*>(map_.get()), size);
  l_ = parse_frame(all.substr(0, std::min<std::uint64_t>(size, header_bytes)), size, path_);
  if (!l_.has_weights) return false;
  parse_weights_head(l_, all.substr(l_.program_end), size, path_);
  parse_index(all);
  return true;
}

NPUSIM_FUNC void NpubinWeights::verify_range(std::uint64_t offset, std::uint64_t n, const std::string& key) const {
  if (n == 0) return;
  const auto* base = static_cast<const char*>(map_.get());
  for (std::uint64_t b = offset / l_.block_bytes; b <= (offset + n - 1) / l_.block_bytes; ++b) {
    if (verified_[b].load(std::memory_order_acquire)) continue;
    const std::uint64_t begin = b * l_.block_bytes, len = std::min(l_.block_bytes, l_.data_bytes - begin);
    const std::uint64_t want = npubin_detail::get_u64(base + l_.table + 8 * b, 8), got = xxh64(base + l_.data + begin, len);
    if (want != got) {
      char e[24], f[24];
      std::snprintf(e, sizeof e, "%016llx", static_cast<unsigned long long>(want));
      std::snprintf(f, sizeof f, "%016llx", static_cast<unsigned long long>(got));
      throw Error(ErrorCode::parse, "embedded weights corrupted (checksum mismatch in data block " + std::to_string(b) + ")",
                  {.file = path_, .tensor = key, .offset = l_.data + begin, .expected = std::string("XXH64 ") + e, .found = f});
    }
    verified_[b].store(true, std::memory_order_release);
  }
}

NPUSIM_FUNC void NpubinWeights::parse_index(std::string_view all) {
  using namespace npubin_detail;
  auto fail = [&](const std::string& msg, const std::string& tensor = {}, std::string expected = {}, std::string found = {}) {
    return Error(ErrorCode::parse, "malformed .npubin weights section: " + msg,
                 {.file = path_, .tensor = tensor, .expected = std::move(expected), .found = std::move(found)});
  };
  const std::string_view index = all.substr(l_.index, l_.index_bytes);
  if (xxh64(index.data(), index.size()) != l_.index_hash) throw fail("index checksum mismatch (corrupted file)");
  const std::string_view table = all.substr(l_.table, 8 * l_.blocks);
  if (xxh64(table.data(), table.size()) != l_.table_hash) throw fail("checksum table mismatch (corrupted file)");
  for (std::uint64_t i = l_.index + l_.index_bytes; i < l_.data; ++i)
    if (all[i] != 0) throw fail("padding before the data is not zero");
  msgpack::object_handle oh;
  try {
    const std::size_t n = index.size();
    oh = msgpack::unpack(index.data(), n, nullptr, nullptr, msgpack::unpack_limit(n, n, n, n, n, 8));
  } catch (const std::exception& e) {
    throw fail(std::string("index is not msgpack: ") + e.what());
  }
  const msgpack::object& o = oh.get();
  Reader r{path_};
  if (r.str(r.field(o, "format")) != "npubin-weights") throw fail("index format is not \"npubin-weights\"");
  for (const auto& t : r.arr(r.field(o, "tensors"))) {
    const bool packed = t.type == msgpack::type::ARRAY && t.via.array.size == 6;
    auto f = r.arr(t, packed ? 6 : 5);
    Entry e;
    e.key = r.str(f[0]);
    e.dtype = r.dtype(f[1]);
    e.shape = r.shape(f[2]);
    const std::int64_t off = r.i64(f[3]), nb = r.i64(f[4]);
    if (e.key.empty()) throw fail("empty tensor key");
    if (packed) {
      e.format = r.str(r.field(f[5], "format"));
      e.logical_shape = r.shape(r.field(f[5], "shape"));
      e.logical_dtype = r.dtype(r.field(f[5], "dtype"));
      const auto bf = quant::parse_block_format(e.format);
      if (!bf || e.format != quant::to_string(*bf)) throw fail("unknown block format of a packed weight", e.key, "q8_0 or q4_0", e.format);
      if (e.logical_shape.size() != 2 || !is_floating(e.logical_dtype) || e.dtype != DType::u8 || e.shape != quant::packed_shape(*bf, e.logical_shape))
        throw fail("packed weight's rows do not hold its tensor's blocks", e.key,
                   "u8 [N, row_bytes(K)] for a float [N, K] (" + e.format + ")",
                   std::string(dtype_name(e.dtype)) + " " + to_string(e.shape) + " for " + std::string(dtype_name(e.logical_dtype)) + " " +
                       to_string(e.logical_shape));
    }
    if (off < 0 || nb < 0) throw fail("negative offset or size", e.key);
    e.offset = static_cast<std::uint64_t>(off), e.nbytes = static_cast<std::uint64_t>(nb);
    const std::uint64_t es = dtype_size(e.dtype), count = static_cast<std::uint64_t>(numel(e.shape));
    if (e.nbytes % es != 0 || e.nbytes / es != count)
      throw fail("tensor size does not match its dtype and shape", e.key, std::to_string(count) + " x " + std::to_string(es) + " bytes",
                 std::to_string(e.nbytes) + " bytes");
    if (e.offset % align != 0) throw fail("tensor offset is not 64-byte aligned", e.key, "a multiple of 64", std::to_string(e.offset));
    if (e.offset > l_.data_bytes || e.nbytes > l_.data_bytes - e.offset)
      throw fail("tensor lies outside the data", e.key, "end <= " + std::to_string(l_.data_bytes),
                 std::to_string(e.offset) + " + " + std::to_string(e.nbytes));
    if (!index_.emplace(e.key, entries_.size()).second) throw fail("tensor listed twice", e.key);
    entries_.push_back(std::move(e));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries_) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->nbytes)
      throw fail("tensors overlap", by_offset[i]->key, "offset >= " + std::to_string(by_offset[i - 1]->offset + by_offset[i - 1]->nbytes) +
                 " (end of '" + by_offset[i - 1]->key + "')", std::to_string(by_offset[i]->offset));
  for (const auto& a : r.arr(r.field(o, "aliases"))) {
    auto f = r.arr(a, 2);
    std::string key = r.str(f[0]), to = r.str(f[1]);
    if (index_.count(key)) throw fail("alias names a stored tensor", key);
    if (!index_.count(to)) throw fail("alias points at no stored tensor", key, "a stored tensor", to);
    if (!aliases_.emplace(key, to).second) throw fail("alias listed twice", key);
  }
  verified_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(l_.blocks));
}

NPUSIM_FUNC void check_embedded(const CompiledProgram& p, const NpubinWeights& w, const EmbedOptions& o) {
  for (const WeightNeed& n : weight_needs(p)) {
    std::string key = n.key;
    if (!w.contains(key) && n.graph) {
      for (const auto& [a, b] : o.ties)
        if (n.key.ends_with(a) && w.contains(n.key.substr(0, n.key.size() - a.size()) + b)) key = n.key.substr(0, n.key.size() - a.size()) + b;
      if (!w.contains(key) && weights::detail::is_inv_freq(n.key)) continue;
    }
    if (!w.contains(key))
      throw Error(ErrorCode::weights, "weight the program binds is missing from the embedded weights",
                  {.file = w.path(), .node = n.user, .tensor = n.key, .expected = "a tensor named '" + n.key + "'", .found = "none"});
    if (!n.graph) continue;
    auto [shape, dtype] = w.meta(key);
    if (shape != n.shape)
      throw Error(ErrorCode::shape, "embedded weight shape differs from the program's graph",
                  {.file = w.path(), .node = n.user, .tensor = key, .expected = to_string(n.shape), .found = to_string(shape)});
    if (dtype != n.dtype && !n.recipe_input)
      throw Error(ErrorCode::dtype, "embedded weight dtype differs from the program's graph",
                  {.file = w.path(), .node = n.user, .tensor = key, .expected = std::string(dtype_name(n.dtype)),
                   .found = std::string(dtype_name(dtype))});
  }
}

NPUSIM_FUNC std::unique_ptr<NpubinWeights> embedded_weights(const std::string& path, const CompiledProgram& p) {
  auto w = NpubinWeights::open(path);
  if (w) check_embedded(p, *w);
  return w;
}

NPUSIM_FUNC EmbeddedWeightsInfo embedded_info(const std::string& path) {
  auto w = NpubinWeights::open(path);
  return w ? w->info() : EmbeddedWeightsInfo{};
}

}  // namespace npusim::inline NPUSIM_ABI::program
