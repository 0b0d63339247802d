// Weights inside a .npubin (format version 2), so that the file runs on its own. After the
// program (npubin.hpp), at the next 64-byte boundary:
//   head   64 bytes: magic "NPUWGT\r\n", index length, data length, checksum block size, XXH64 of
//          the index, XXH64 of the checksum table, 0, XXH64 of the head's first 56 bytes (u64 LE)
//   index  msgpack {format: "npubin-weights", tensors: [[key, dtype, shape, offset, nbytes]...]
//          in offset order, aliases: [[key, stored key]...]}; a weight read only by q8_0/q4_0
//          linears is stored as its rows of blocks: [key, "u8", [N, row_bytes], offset, nbytes,
//          {format, shape: [N, K], dtype}] (a sixth element older readers refuse)
//   data   at the next 64-byte boundary; every tensor at a 64-byte multiple from its start
//   table  XXH64 of each block (block size bytes, the last one shorter) of the data
// The values are the weights source's BEFORE recipes (a folded BatchNorm is folded again at load,
// as with external weights), so binding embedded weights runs the same code on the same values;
// packed weights are the blocks the target would pack at load, checked (every scale finite) when
// loaded.
// NpubinWeights maps the file and serves zero-copy tensors; each checksum block is verified the
// first time a tensor touching it is loaded (all of them by verify()), so every byte handed out
// has been checked, and a model whose weights are not all used pays only for those it reads.
#pragma once

#include <atomic>
#include <map>
#include <memory>

#include "npusim/config.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::inline NPUSIM_ABI::program {

// A key the program reads from its weights source: a weight of a partition graph (with the IR's
// shape and dtype), or an input of a recipe that computes one (folded BatchNorm parameters).
struct WeightNeed {
  std::string key;
  bool graph = false;         // a partition graph's weight: shape/dtype are the IR's
  bool recipe_input = false;  // read by a recipe (its dtype is whatever the source holds)
  Shape shape;
  DType dtype = DType::f32;
  std::string user;  // a node (or recipe) that reads it, for messages
  // Every reader, in every partition, is a linear of this weight_format ("q8_0", "q4_0"): the file
  // may store the weight as its blocks, packed from its values in `storage` (the partition's
  // storage dtype, what the target would pack from at load). "" when anything else reads it.
  std::string block_format;
  DType storage = DType::f32;
};

// Every key a program binds from its weights source, in first-use order: used, non-constant
// weights of every partition (as weights::bind_weights plans them), with keys that recipes
// produce replaced by the recipes' inputs.
std::vector<WeightNeed> weight_needs(const CompiledProgram& p);

struct EmbedOptions {
  bool allow_cast = false;  // store a weight whose source dtype differs from the IR's in the IR's dtype
  // Tied weights, as binding resolves them: a key the source lacks is embedded as the tied key.
  std::vector<std::pair<std::string, std::string>> ties = weights::BindOptions{}.ties;
  std::uint64_t block_bytes = std::uint64_t{1} << 20;  // checksum block
  Progress progress;
};

// Writes the program and, from `embed` (when given), every weight it binds, streaming to a
// temporary file renamed into place. Without `embed` this is save(p, path).
EmbeddedWeightsInfo save(const CompiledProgram& p, const std::string& path, const weights::WeightSource* embed, const EmbedOptions& o = {});

// The weights section of a .npubin as a WeightSource: a private memory map of the file, each
// index range checked against the section (64-byte aligned, inside the data, no overlaps), tensors
// handed out zero-copy once their checksum blocks verify.
class NpubinWeights final : public weights::WeightSource {
 public:
  struct Entry {
    std::string key;
    DType dtype = DType::f32;
    Shape shape;
    std::uint64_t offset = 0, nbytes = 0;  // relative to the data start
    // A packed weight (dtype u8, shape [N, row_bytes(K)]): its format and the tensor it stands for.
    std::string format;
    Shape logical_shape;
    DType logical_dtype = DType::f32;
  };

  // Null when the file has no weights section; an error when it is damaged.
  static std::unique_ptr<NpubinWeights> open(const std::string& path);
  // The same checks on bytes in memory (a fuzzer's input); `name` stands for the file in
  // messages. The bytes are copied once into 64-byte aligned storage.
  static std::unique_ptr<NpubinWeights> from_bytes(std::string_view bytes, const std::string& name = "<memory>");

  const std::string& path() const override { return path_; }
  bool contains(const std::string& key) const override { return find(key) != nullptr; }
  std::pair<Shape, DType> meta(const std::string& key) const override;
  Tensor load(const std::string& key) const override;
  std::string canonical(const std::string& key) const override;
  std::string block_format(const std::string& key) const override;

  const std::vector<Entry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& aliases() const { return aliases_; }
  // Checks every block now (loading checks only the blocks of the tensors it serves).
  void verify() const { verify_range(0, l_.data_bytes, {}); }
  EmbeddedWeightsInfo info() const;

 private:
  NpubinWeights() = default;

  const Entry* find(const std::string& key) const;
  const Entry& entry(const std::string& key) const;

  // False when the file has no weights section.
  bool parse(std::uint64_t size);

  void verify_range(std::uint64_t offset, std::uint64_t n, const std::string& key) const;

  void parse_index(std::string_view all);

  std::string path_;
  std::shared_ptr<void> map_;
  npubin_detail::Layout l_;
  std::vector<Entry> entries_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> aliases_;
  std::unique_ptr<std::atomic<bool>[]> verified_;  // per checksum block
};

// Checks that embedded weights are the program's: every key it binds is there (or resolvable as
// binding would: a tie, a rotary buffer recomputed from rope_theta), with the IR's shape and dtype.
void check_embedded(const CompiledProgram& p, const NpubinWeights& w, const EmbedOptions& o = {});

// The file's embedded weights, checked against its program `p`; null when it has none.
std::unique_ptr<NpubinWeights> embedded_weights(const std::string& path, const CompiledProgram& p);
// The same, reading the program from the file.
inline std::unique_ptr<NpubinWeights> embedded_weights(const std::string& path) { return embedded_weights(path, load(path)); }

// What the file's weights section holds (present = false when it has none).
EmbeddedWeightsInfo embedded_info(const std::string& path);

}  // namespace npusim::inline NPUSIM_ABI::program

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/program/impl/npubin_weights_inl.hpp"
#endif
