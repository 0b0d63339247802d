// The .npubin encoding shared by the program reader/writer (npubin_inl.hpp) and the weights
// section (npubin_weights_inl.hpp): msgpack packing helpers, the checked msgpack Reader, byte
// order helpers, and the frame and weights-head parsers. Internal: only impl files include it.
#pragma once

#include <msgpack.hpp>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "npusim/core/error.hpp"
#include "npusim/core/hash.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/program/npubin_layout.hpp"
#include "npusim/weights/synth.hpp"

namespace npusim::inline NPUSIM_ABI::program {

namespace npubin_detail {

using Packer = msgpack::packer<msgpack::sbuffer>;

inline void put(Packer& pk, std::string_view s) { pk.pack_str(static_cast<std::uint32_t>(s.size())), pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size())); }
inline void put(Packer& pk, std::int64_t v) { pk.pack_int64(v); }
inline void put_shape(Packer& pk, const Shape& s) {
  pk.pack_array(static_cast<std::uint32_t>(s.size()));
  for (auto d : s) pk.pack_int64(d);
}
template <class T>
void put_ids(Packer& pk, const std::vector<T>& v) {
  pk.pack_array(static_cast<std::uint32_t>(v.size()));
  for (auto x : v) pk.pack_int64(static_cast<std::int64_t>(x));
}
inline void put_attr(Packer& pk, const ir::AttrValue& a) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) pk.pack_nil();
        else if constexpr (std::is_same_v<T, bool>) x ? pk.pack_true() : pk.pack_false();
        else if constexpr (std::is_same_v<T, std::int64_t>) pk.pack_int64(x);
        else if constexpr (std::is_same_v<T, double>) pk.pack_double(x);
        else if constexpr (std::is_same_v<T, std::string>) put(pk, x);
        else {
          pk.pack_array(static_cast<std::uint32_t>(x.size()));
          for (const auto& e : x) put_attr(pk, e);
        }
      },
      a.v);
}
inline void put_attrs(Packer& pk, const ir::AttrMap& m) {
  pk.pack_map(static_cast<std::uint32_t>(m.items.size()));
  for (const auto& [k, v] : m.items) put(pk, k), put_attr(pk, v);
}
inline void put_graph(Packer& pk, const ir::Graph& g) {
  pk.pack_map(8);
  put(pk, "model_name"), put(pk, g.model_name);
  put(pk, "tensors");
  pk.pack_array(static_cast<std::uint32_t>(g.tensors.size()));
  for (const auto& t : g.tensors) {
    pk.pack_array(7);
    put(pk, t.name), put_shape(pk, t.shape), put(pk, dtype_name(t.dtype)), pk.pack_int64(static_cast<std::int64_t>(t.kind));
    pk.pack_int64(t.producer), pk.pack_int64(t.producer_output), put(pk, t.weight_key);
  }
  put(pk, "inputs"), put_ids(pk, g.inputs);
  put(pk, "outputs"), put_ids(pk, g.outputs);
  put(pk, "weights"), put_ids(pk, g.weights);
  put(pk, "nodes");
  pk.pack_array(static_cast<std::uint32_t>(g.nodes.size()));
  for (const auto& n : g.nodes) {
    pk.pack_array(5);
    put(pk, n.name), put(pk, n.op_type), put_ids(pk, n.inputs), put_ids(pk, n.outputs), put_attrs(pk, n.attrs);
  }
  put(pk, "constants");
  pk.pack_map(static_cast<std::uint32_t>(g.constants.size()));
  for (const auto& [k, t] : g.constants) {
    put(pk, k);
    pk.pack_array(3);
    put(pk, dtype_name(t.dtype())), put_shape(pk, t.shape());
    pk.pack_bin(static_cast<std::uint32_t>(t.nbytes()));
    pk.pack_bin_body(static_cast<const char*>(t.raw()), static_cast<std::uint32_t>(t.nbytes()));
  }
  put(pk, "pytorch_version"), put(pk, g.pytorch_version);
}
inline void put_kernel(Packer& pk, const Kernel& k) {
  pk.pack_array(5);
  put(pk, k.kind), put_ids(pk, k.nodes), put_ids(pk, k.inputs), put_ids(pk, k.outputs), put_attrs(pk, k.params);
}
inline void put_plan(Packer& pk, const plan::BufferPlan& b) {
  pk.pack_array(5);
  pk.pack_array(static_cast<std::uint32_t>(b.tensors.size()));
  for (const auto& t : b.tensors) {
    pk.pack_array(7);
    pk.pack_int64(static_cast<std::int64_t>(t.place)), put(pk, dtype_name(t.storage)), pk.pack_int64(t.bytes), pk.pack_int64(t.offset);
    pk.pack_int64(t.root), pk.pack_int64(t.first), pk.pack_int64(t.last);
  }
  pk.pack_int64(b.arena_bytes), pk.pack_int64(b.naive_bytes), pk.pack_int64(b.lower_bound_bytes), pk.pack_int64(b.in_place);
}
inline void put_io(Packer& pk, const std::vector<IoSpec>& v) {
  pk.pack_array(static_cast<std::uint32_t>(v.size()));
  for (const auto& io : v) pk.pack_array(3), put(pk, io.name), put_shape(pk, io.shape), put(pk, dtype_name(io.dtype));
}

// ---- reading -------------------------------------------------------------------------------------

// UTF-8 as JSON requires it (RFC 3629: no overlong forms, surrogates or code points past
// U+10FFFF). Every name npusim holds came from JSON, so a string that is not is damage, and would
// make `inspect --json` or a profile trace fail later.
inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1fu;
    else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0fu;
    else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07u;
    else return false;
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    static constexpr std::uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::parse, "malformed .npubin: " + what + " (in the program payload, from byte " + std::to_string(header_bytes) + ")", {.file = file});
  }
  // An optional field: null when absent.
  const msgpack::object* find(const msgpack::object& o, std::string_view key) const {
    if (o.type != msgpack::type::MAP) fail("expected a map around \"" + std::string(key) + "\"");
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      if (kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) return &kv.val;
    }
    return nullptr;
  }
  const msgpack::object& field(const msgpack::object& o, std::string_view key) const {
    if (const msgpack::object* v = find(o, key)) return *v;
    fail("missing field \"" + std::string(key) + "\"");
  }
  std::string str(const msgpack::object& o) const {
    if (o.type != msgpack::type::STR) fail("expected a string");
    std::string_view v(o.via.str.ptr, o.via.str.size);
    if (!valid_utf8(v)) fail("string is not valid UTF-8");
    return std::string(v);
  }
  std::int64_t i64(const msgpack::object& o) const {
    if (o.type == msgpack::type::POSITIVE_INTEGER) {
      if (o.via.u64 > static_cast<std::uint64_t>(INT64_MAX)) fail("integer out of range");
      return static_cast<std::int64_t>(o.via.u64);
    }
    if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
    fail("expected an integer");
  }
  bool boolean(const msgpack::object& o) const {
    if (o.type != msgpack::type::BOOLEAN) fail("expected a bool");
    return o.via.boolean;
  }
  std::span<const msgpack::object> arr(const msgpack::object& o, std::size_t expect = SIZE_MAX) const {
    if (o.type != msgpack::type::ARRAY) fail("expected an array");
    if (expect != SIZE_MAX && o.via.array.size != expect) fail("array of the wrong length");
    return {o.via.array.ptr, o.via.array.size};
  }
  DType dtype(const msgpack::object& o) const {
    auto d = parse_dtype(str(o));
    if (!d) fail("unknown dtype");
    return *d;
  }
  Shape shape(const msgpack::object& o) const {
    Shape s;
    for (const auto& d : arr(o)) {
      s.push_back(i64(d));
      if (s.back() < 0) fail("negative dimension");
    }
    try {
      checked_numel(s);
    } catch (const Error& e) {
      fail("shape: " + e.message());
    }
    return s;
  }
  void sized(const Shape& s, DType d) const {
    try {
      checked_nbytes(s, d);
    } catch (const Error& e) {
      fail("shape: " + e.message());
    }
  }
  template <class T>
  std::vector<T> ids(const msgpack::object& o, std::int64_t bound) const {
    std::vector<T> v;
    for (const auto& e : arr(o)) {
      std::int64_t x = i64(e);
      if (x < 0 || x >= bound) fail("index out of range");
      v.push_back(static_cast<T>(x));
    }
    return v;
  }
  ir::AttrValue attr(const msgpack::object& o, int depth = 0) const {
    if (depth > 32) fail("attribute nested too deeply");
    switch (o.type) {
      case msgpack::type::NIL: return ir::AttrValue(nullptr);
      case msgpack::type::BOOLEAN: return ir::AttrValue(o.via.boolean);
      case msgpack::type::POSITIVE_INTEGER:
      case msgpack::type::NEGATIVE_INTEGER: return ir::AttrValue(i64(o));
      case msgpack::type::FLOAT64:
      case msgpack::type::FLOAT32: return ir::AttrValue(o.via.f64);
      case msgpack::type::STR: return ir::AttrValue(str(o));
      case msgpack::type::ARRAY: {
        ir::AttrList l;
        for (const auto& e : arr(o)) l.push_back(attr(e, depth + 1));
        return ir::AttrValue(std::move(l));
      }
      default: fail("unsupported attribute value");
    }
  }
  ir::AttrMap attrs(const msgpack::object& o) const {
    if (o.type != msgpack::type::MAP) fail("expected an attribute map");
    ir::AttrMap m;
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) m.items.emplace_back(str(o.via.map.ptr[i].key), attr(o.via.map.ptr[i].val));
    return m;
  }
  ir::Graph graph(const msgpack::object& o) const {
    ir::Graph g;
    g.source = file;
    g.model_name = str(field(o, "model_name"));
    g.pytorch_version = str(field(o, "pytorch_version"));
    for (const auto& t : arr(field(o, "tensors"))) {
      auto f = arr(t, 7);
      ir::TensorInfo info;
      info.name = str(f[0]), info.shape = shape(f[1]), info.dtype = dtype(f[2]);
      sized(info.shape, info.dtype);
      std::int64_t kind = i64(f[3]);
      if (kind < 0 || kind > 3) fail("bad tensor kind");
      info.kind = static_cast<ir::TensorKind>(kind);
      info.producer = static_cast<std::int32_t>(i64(f[4])), info.producer_output = static_cast<std::int32_t>(i64(f[5]));
      info.weight_key = str(f[6]);
      g.tensors.push_back(std::move(info));
    }
    const auto T = static_cast<std::int64_t>(g.tensors.size());
    g.inputs = ids<ir::TensorId>(field(o, "inputs"), T);
    g.outputs = ids<ir::TensorId>(field(o, "outputs"), T);
    g.weights = ids<ir::TensorId>(field(o, "weights"), T);
    for (const auto& n : arr(field(o, "nodes"))) {
      auto f = arr(n, 5);
      g.nodes.push_back({str(f[0]), str(f[1]), ids<ir::TensorId>(f[2], T), ids<ir::TensorId>(f[3], T), attrs(f[4])});
    }
    const auto N = static_cast<std::int64_t>(g.nodes.size());
    for (const auto& t : g.tensors)
      if (t.producer < -1 || t.producer >= N) fail("producer index out of range");
    const msgpack::object& cs = field(o, "constants");
    if (cs.type != msgpack::type::MAP) fail("constants must be a map");
    for (std::uint32_t i = 0; i < cs.via.map.size; ++i) {
      auto f = arr(cs.via.map.ptr[i].val, 3);
      DType d = dtype(f[0]);
      Shape s = shape(f[1]);
      if (f[2].type != msgpack::type::BIN) fail("constant data must be binary");
      // Compare sizes before allocating: the bytes are there, the shape is only a claim.
      const std::uint64_t bin = f[2].via.bin.size, es = dtype_size(d);
      if (bin % es != 0 || bin / es != static_cast<std::uint64_t>(numel(s))) fail("constant data size does not match its shape");
      Tensor t = Tensor::empty(d, s);
      std::memcpy(t.raw(), f[2].via.bin.ptr, t.nbytes());
      g.constants[str(cs.via.map.ptr[i].key)] = t;
    }
    g.reindex();
    return g;
  }
  Kernel kernel(const msgpack::object& o, std::int64_t nodes, std::int64_t tensors) const {
    auto f = arr(o, 5);
    Kernel k{str(f[0]), ids<std::int32_t>(f[1], nodes), ids<ir::TensorId>(f[2], tensors), ids<ir::TensorId>(f[3], tensors), attrs(f[4])};
    if (k.nodes.empty()) fail("kernel without nodes");
    return k;
  }
  plan::BufferPlan buffer_plan(const msgpack::object& o, std::int64_t tensors) const {
    auto f = arr(o, 5);
    plan::BufferPlan b;
    for (const auto& t : arr(f[0])) {
      auto e = arr(t, 7);
      plan::TensorPlan p;
      std::int64_t place = i64(e[0]);
      if (place < 0 || place > 4) fail("bad placement");
      p.place = static_cast<plan::Place>(place);
      p.storage = dtype(e[1]), p.bytes = i64(e[2]), p.offset = i64(e[3]);
      p.root = static_cast<ir::TensorId>(i64(e[4])), p.first = static_cast<std::int32_t>(i64(e[5])), p.last = static_cast<std::int32_t>(i64(e[6]));
      if (p.root < -1 || p.root >= tensors || p.bytes < 0 || p.offset < 0) fail("buffer plan entry out of range");
      b.tensors.push_back(p);
    }
    if (static_cast<std::int64_t>(b.tensors.size()) != tensors) fail("buffer plan does not cover every tensor");
    b.arena_bytes = i64(f[1]), b.naive_bytes = i64(f[2]), b.lower_bound_bytes = i64(f[3]), b.in_place = static_cast<int>(i64(f[4]));
    return b;  // sizes and placements: validate()
  }
  std::vector<IoSpec> io(const msgpack::object& o) const {
    std::vector<IoSpec> v;
    for (const auto& e : arr(o)) {
      auto f = arr(e, 3);
      v.push_back({str(f[0]), shape(f[1]), dtype(f[2])});
      sized(v.back().shape, v.back().dtype);
    }
    return v;
  }
};

inline std::uint64_t fnv1a(std::string_view s) { return weights::fnv1a64(s); }

inline void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline std::uint64_t get_u64(const char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

inline std::uint64_t align_up(std::uint64_t x) { return (x + align - 1) / align * align; }

inline Error frame_error(const std::string& file, ErrorCode c, const std::string& msg, std::string expected = {}, std::string found = {},
                         std::optional<std::uint64_t> offset = {}) {
  return Error(c, msg, {.file = file, .offset = offset, .expected = std::move(expected), .found = std::move(found)});
}

// Magic, version and program length from the first header_bytes of a file of `file_size` bytes.
inline Layout parse_frame(std::string_view first, std::uint64_t file_size, const std::string& file) {
  if (first.size() < header_bytes || file_size < header_bytes + 8 || first.substr(0, sizeof npubin_magic) != std::string_view(npubin_magic, sizeof npubin_magic))
    throw frame_error(file, ErrorCode::parse, "not an .npubin file (bad magic or too short)");
  Layout l;
  l.version = static_cast<std::uint32_t>(get_u64(first.data() + 8, 4));
  if (l.version < npubin_oldest_version || l.version > npubin_format_version)
    throw frame_error(file, ErrorCode::unsupported, "unsupported .npubin format version (recompile the model with this npusim)",
                      std::to_string(npubin_oldest_version) + " or " + std::to_string(npubin_format_version), std::to_string(l.version));
  l.payload_bytes = get_u64(first.data() + 12, 8);
  const bool fits = l.payload_bytes <= file_size - header_bytes - 8;
  l.program_end = fits ? header_bytes + l.payload_bytes + 8 : 0;
  // Version 1 ends with the program; version 2 may go on with a weights section.
  if (!fits || (l.version == 1 && l.program_end != file_size))
    throw frame_error(file, ErrorCode::parse, "truncated or padded .npubin file",
                      std::to_string(l.payload_bytes) + " + " + std::to_string(header_bytes + 8) + " bytes", std::to_string(file_size) + " bytes");
  l.has_weights = l.program_end != file_size;
  if (l.has_weights) l.section = align_up(l.program_end);
  return l;
}

// The weights section's head: `bytes` holds the file from l.program_end to l.section + head_bytes
// (zero padding, then the head). Every length is checked against the file before use.
inline void parse_weights_head(Layout& l, std::string_view bytes, std::uint64_t file_size, const std::string& file) {
  auto fail = [&](const std::string& msg, std::string expected = {}, std::string found = {}, std::optional<std::uint64_t> at = {}) {
    return frame_error(file, ErrorCode::parse, "malformed .npubin weights section: " + msg, std::move(expected), std::move(found), at);
  };
  if (file_size < l.section + head_bytes || bytes.size() < l.section + head_bytes - l.program_end)
    throw fail("truncated (the file ends inside its head)", ">= " + std::to_string(l.section + head_bytes) + " bytes",
               std::to_string(file_size) + " bytes");
  for (std::uint64_t i = 0; i < l.section - l.program_end; ++i)
    if (bytes[i] != 0) throw fail("padding before the section is not zero", "0", std::to_string(static_cast<unsigned char>(bytes[i])), l.program_end + i);
  const char* h = bytes.data() + (l.section - l.program_end);
  if (std::string_view(h, 8) != std::string_view(weights_magic, 8)) throw fail("bad magic", "NPUWGT", "other bytes", l.section);
  const std::uint64_t sum = get_u64(h + 56, 8);
  if (sum != xxh64(h, 56)) throw fail("head checksum mismatch (corrupted file)", {}, {}, l.section);
  l.index_bytes = get_u64(h + 8, 8), l.data_bytes = get_u64(h + 16, 8), l.block_bytes = get_u64(h + 24, 8);
  l.index_hash = get_u64(h + 32, 8), l.table_hash = get_u64(h + 40, 8);
  if (get_u64(h + 48, 8) != 0) throw fail("reserved head field is not zero", "0", std::to_string(get_u64(h + 48, 8)), l.section + 48);
  if (l.block_bytes < min_block_bytes || l.block_bytes > max_block_bytes || (l.block_bytes & (l.block_bytes - 1)))
    throw fail("bad checksum block size", "a power of two in [4096, 2^30]", std::to_string(l.block_bytes), l.section + 24);
  // Sizes in order, each against what is left of the file (no overflow: all are <= file_size).
  l.index = l.section + head_bytes;
  std::uint64_t left = file_size - l.index;
  auto truncated = [&](const std::string& what, std::uint64_t need) {
    return fail("truncated (" + what + " runs past the end of the file)", ">= " + std::to_string(l.index + need) + " bytes",
                std::to_string(file_size) + " bytes");
  };
  if (l.index_bytes > left) throw truncated("the index", l.index_bytes);
  l.data = align_up(l.index + l.index_bytes);
  if (l.data > file_size || l.data_bytes > file_size - l.data) throw truncated("the data", l.data - l.index + l.data_bytes);
  l.blocks = (l.data_bytes + l.block_bytes - 1) / l.block_bytes;
  l.table = l.data + l.data_bytes;
  l.end = l.table + 8 * l.blocks;
  if (l.end > file_size) throw truncated("the checksum table", l.end - l.index);
  if (l.end != file_size)
    throw fail("the file goes on past the section's end (padded or concatenated file)", std::to_string(l.end) + " bytes",
               std::to_string(file_size) + " bytes");
}

}  // namespace npubin_detail

}  // namespace npusim::inline NPUSIM_ABI::program
