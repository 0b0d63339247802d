// The npusim-synth-v1 rule: every weight regenerated bit-exactly from its state_dict key, so a
// 3 GB model needs no weights file. x_i = float32(splitmix64(fnv1a64(key) + i) >> 40) * 2^-23 - 1,
// value = offset + scale * x_i in float32 (two roundings, as the PyTorch generator does), then
// rounded to the tensor's dtype. synth.json also lists aliases (tied weights) and literals.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/progress.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

constexpr std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

constexpr std::uint64_t splitmix64(std::uint64_t s) {
  s += 0x9e3779b97f4a7c15ull;
  std::uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// x_i in [-1, 1).
inline float synth_unit(std::uint64_t key_hash, std::uint64_t i) {
  return static_cast<float>(splitmix64(key_hash + i) >> 40) * 0x1p-23f - 1.0f;
}

// offset + scale * x in float32 with two roundings; going through double for the product keeps
// the compiler from contracting it into an FMA (which would round once and change the bits).
inline float synth_value(float offset, float scale, float x) {
  const float p = static_cast<float>(static_cast<double>(scale) * static_cast<double>(x));
  return static_cast<float>(static_cast<double>(offset) + static_cast<double>(p));
}

struct SynthTensor {
  double offset = 0, scale = 0;
  Shape shape;
  DType dtype = DType::f32;
};
struct SynthLiteral {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<double> values;
};

struct SynthManifest {
  std::string source;
  std::string rule;
  std::map<std::string, SynthTensor> tensors;
  std::map<std::string, std::string> aliases;
  std::map<std::string, SynthLiteral> literals;

  static SynthManifest parse(std::string_view text, const std::string& source);

  static SynthManifest read(const std::string& path) { return parse(read_file(path, std::uint64_t{1} << 30), path); }

  // Follows aliases to the key that holds the values.
  std::string resolve(const std::string& key) const;

  bool contains(const std::string& key) const;
  std::pair<Shape, DType> meta(const std::string& key) const;

  // Generates the tensor for `key` in its manifest dtype (values rounded to that dtype). Large
  // tensors are generated in parallel chunks and report progress.
  Tensor generate(const std::string& key, const Progress& progress = {}) const;
};

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/synth_inl.hpp"
#endif
