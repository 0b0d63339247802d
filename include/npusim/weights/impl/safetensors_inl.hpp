// Definitions for npusim/weights/safetensors.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <limits>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/safetensors.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  MappedFile m = map_file(path);
  f.size_ = m.size;
  f.map_ = std::move(m.data);
  f.parse();
  return f;
}

NPUSIM_FUNC SafetensorsFile SafetensorsFile::from_bytes(std::string_view bytes, const std::string& name) {
  SafetensorsFile f;
  f.path_ = name;
  f.size_ = bytes.size();
  if (!bytes.empty()) {
    void* p = ::operator new(bytes.size(), std::align_val_t(Tensor::alignment));
    std::memcpy(p, bytes.data(), bytes.size());
    f.map_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(Tensor::alignment)); });
  }
  f.parse();
  return f;
}

NPUSIM_FUNC const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

NPUSIM_FUNC Tensor SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) throw Error(ErrorCode::weights, "tensor not found", {.file = path_, .tensor = std::string(name)});
  return tensor(*e);
}

NPUSIM_FUNC Tensor SafetensorsFile::tensor(const SafetensorsEntry& e) const {
  auto* p = static_cast<std::byte*>(map_.get()) + data_offset_ + e.begin;
  if (e.dtype == DType::boolean) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(p);
    for (std::uint64_t i = 0; i < e.end - e.begin; ++i)
      if (b[i] > 1)
        throw Error(ErrorCode::parse, "BOOL tensor holds a byte that is not 0 or 1",
                    {.file = path_, .tensor = e.name, .offset = data_offset_ + e.begin + i, .expected = "0 or 1", .found = std::to_string(b[i])});
  }
  if (reinterpret_cast<std::uintptr_t>(p) % dtype_size(e.dtype) == 0) return Tensor::wrap(e.dtype, e.shape, p, map_);
  Tensor t = Tensor::empty(e.dtype, e.shape);
  std::memcpy(t.raw(), p, e.end - e.begin);
  return t;
}

NPUSIM_FUNC void SafetensorsFile::parse() {
  auto fail = [&](std::string msg, std::uint64_t off, std::string expected = {}, std::string found = {}) {
    return Error(ErrorCode::parse, std::move(msg), {.file = path_, .offset = off, .expected = std::move(expected), .found = std::move(found)});
  };
  if (size_ < 8) throw fail("file too short for a safetensors header", 0, ">= 8 bytes", std::to_string(size_) + " bytes");
  const auto* base = static_cast<const unsigned char*>(map_.get());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base[i];
  if (n > max_header_bytes) throw Error(ErrorCode::resource, "safetensors header length is implausible", {.file = path_, .offset = 0,
                                        .expected = "<= " + std::to_string(max_header_bytes), .found = std::to_string(n)});
  if (n > size_ - 8) throw fail("header length points past the end of the file (truncated file?)", 0,
                                "<= " + std::to_string(size_ - 8), std::to_string(n));
  data_offset_ = 8 + n;
  const std::uint64_t data_size = size_ - data_offset_;
  std::string_view text(reinterpret_cast<const char*>(base + 8), n);
  ir::json h = ir::parse_json(text, path_);
  if (!h.is_object()) throw fail("safetensors header must be a JSON object", 8);
  for (auto& [name, v] : h.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ must be an object", 8);
      for (auto& [k, mv] : v.items())
        if (mv.is_string()) metadata_[k] = mv.get<std::string>();
      continue;
    }
    const std::string what = "safetensors entry '" + name + "'";
    try {
      SafetensorsEntry e;
      e.name = name;
      std::string ds = ir::get_string(ir::require_field(v, "dtype", what, path_), what + " dtype", path_);
      auto dt = parse_dtype(ds);
      if (!dt) throw Error(ErrorCode::dtype, "unsupported safetensors dtype '" + ds + "'", {.expected = "F32, F16, BF16, F64, I64, I32, I16, I8, U8 or BOOL"});
      e.dtype = *dt;
      const ir::json& js = ir::require_field(v, "shape", what, path_);
      if (!js.is_array()) throw Error(ErrorCode::parse, "shape must be a list");
      for (const auto& d : js) {
        std::int64_t x = ir::get_int64(d, what + " shape", path_);
        if (x < 0) throw Error(ErrorCode::shape, "negative dimension", {.found = std::to_string(x)});
        e.shape.push_back(x);
      }
      const ir::json& off = ir::require_field(v, "data_offsets", what, path_);
      if (!off.is_array() || off.size() != 2) throw Error(ErrorCode::parse, "data_offsets must be [begin, end]");
      std::int64_t b = ir::get_int64(off[0], what + " data_offsets", path_), en = ir::get_int64(off[1], what + " data_offsets", path_);
      if (b < 0 || en < b) throw Error(ErrorCode::parse, "data_offsets are not an increasing pair", {.found = std::to_string(b) + ", " + std::to_string(en)});
      e.begin = static_cast<std::uint64_t>(b), e.end = static_cast<std::uint64_t>(en);
      if (e.end > data_size)
        throw Error(ErrorCode::parse, "data_offsets point outside the file (truncated or corrupt file)",
                    {.offset = data_offset_ + e.end, .expected = "end <= " + std::to_string(data_size), .found = std::to_string(e.end)});
      // The claimed size, never a wrapped count (2^62 float32 elements are not "0 bytes").
      const auto count = static_cast<std::uint64_t>(checked_numel(e.shape)), es = static_cast<std::uint64_t>(dtype_size(e.dtype));
      const bool wraps = count > std::numeric_limits<std::uint64_t>::max() / es;
      if (wraps || count * es != e.end - e.begin)
        throw Error(ErrorCode::shape, "byte range does not match dtype and shape",
                    {.expected = wraps ? std::string("more than 2^64 bytes") : std::to_string(count * es) + " bytes",
                     .found = std::to_string(e.end - e.begin) + " bytes"});
      checked_nbytes(e.shape, e.dtype);  // within the 64 TiB cap (only a file that large could get here)
      index_[name] = entries_.size();
      entries_.push_back(std::move(e));
    } catch (Error& err) {
      throw err.with_tensor(name).with_file(path_);
    }
  }
  // Each tensor its own bytes: ranges that overlap (or alias one another) are refused, as
  // the safetensors library does. Empty tensors take no bytes and may sit anywhere.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].end > entries_[i].begin) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return entries_[a].begin < entries_[b].begin; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const SafetensorsEntry &prev = entries_[order[k - 1]], &e = entries_[order[k]];
    if (e.begin < prev.end)
      throw Error(ErrorCode::parse, "tensors overlap: their data_offsets share bytes (corrupt or forged file)",
                  {.file = path_, .tensor = e.name, .offset = data_offset_ + e.begin,
                   .expected = "begin >= " + std::to_string(prev.end) + " (the end of '" + prev.name + "')", .found = std::to_string(e.begin)});
  }
}

NPUSIM_FUNC void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                   const std::map<std::string, std::string>& metadata) {
  ir::json h = ir::json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    h[name] = {{"dtype", std::string(dtype_safetensors_name(t.dtype()))}, {"shape", t.shape()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
  }
  std::string header = h.dump();
  while ((8 + header.size()) % 8) header.push_back(' ');
  std::string bytes;
  bytes.reserve(8 + header.size() + at);
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  bytes += header;
  for (const auto& [name, t] : tensors) bytes.append(static_cast<const char*>(t.raw()), t.nbytes());
  write_file_atomic(path, bytes);
}

}  // namespace npusim::inline NPUSIM_ABI::weights
