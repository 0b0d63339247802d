// Safetensors: a read-only (copy-on-write) memory map with zero-copy tensor views, after checking
// everything a hostile file could get wrong: header length, JSON, dtypes, shapes, and that every
// tensor's byte range lies inside the data section and matches its shape. Plus an atomic writer.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // relative to the start of the data section
};

class SafetensorsFile {
 public:
  static constexpr std::uint64_t max_header_bytes = 100u << 20;

  static SafetensorsFile open(const std::string& path);

  // The same checks on bytes already in memory (a download, a fuzzer's input); `name` stands for
  // the file in messages. The bytes are copied once into 64-byte aligned storage.
  static SafetensorsFile from_bytes(std::string_view bytes, const std::string& name = "<memory>");

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const SafetensorsEntry* find(std::string_view name) const;

  // Zero-copy view when the data is aligned for its type, else an aligned copy.
  Tensor tensor(std::string_view name) const;
  // A BOOL tensor's bytes must each be 0 or 1 (any other byte is not a bool value: reading it
  // would be undefined behaviour); checked here, where the bytes enter.
  Tensor tensor(const SafetensorsEntry& e) const;

 private:
  void parse();

  std::string path_;
  std::shared_ptr<void> map_;
  std::uint64_t size_ = 0, data_offset_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (in the given order) as a safetensors file, atomically.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/safetensors_inl.hpp"
#endif
