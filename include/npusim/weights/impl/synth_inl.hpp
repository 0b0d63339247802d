// Definitions for npusim/weights/synth.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/synth.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC SynthManifest SynthManifest::parse(std::string_view text, const std::string& source) {
  using ir::json;
  json j = ir::parse_json(text, source);
  SynthManifest m;
  m.source = source;
  if (!j.is_object()) throw Error(ErrorCode::parse, "synth manifest must be a JSON object", {.file = source});
  m.rule = ir::get_string(ir::require_field(j, "rule", "synth manifest", source), "rule", source);
  if (m.rule != "npusim-synth-v1")
    throw Error(ErrorCode::unsupported, "unknown synthetic-weight rule", {.file = source, .expected = "npusim-synth-v1", .found = m.rule});
  auto shape_of = [&](const json& v, const std::string& what) {
    const json& s = ir::require_field(v, "shape", what, source);
    if (!s.is_array()) throw Error(ErrorCode::parse, what + " shape must be a list", {.file = source});
    Shape sh;
    for (const json& d : s) {
      auto x = ir::get_int64(d, what + " shape", source);
      if (x < 0) throw Error(ErrorCode::shape, what + " has a negative dimension", {.file = source});
      sh.push_back(x);
    }
    try {
      checked_numel(sh);
    } catch (Error& e) {
      throw e.with_file(source).with_tensor(what);
    }
    return sh;
  };
  auto dtype_of = [&](const json& v, const std::string& what) {
    return parse_dtype_or_throw(ir::get_string(ir::require_field(v, "dtype", what, source), what + " dtype", source), what);
  };
  if (auto it = j.find("tensors"); it != j.end()) {
    if (!it->is_object()) throw Error(ErrorCode::parse, "\"tensors\" must be an object", {.file = source});
    for (auto& [k, v] : it->items()) {
      const std::string what = "tensor '" + k + "'";
      SynthTensor t;
      t.offset = ir::get_number(ir::require_field(v, "offset", what, source), what + " offset", source);
      t.scale = ir::get_number(ir::require_field(v, "scale", what, source), what + " scale", source);
      t.shape = shape_of(v, what);
      t.dtype = dtype_of(v, what);
      m.tensors.emplace(k, std::move(t));
    }
  }
  if (auto it = j.find("aliases"); it != j.end()) {
    if (!it->is_object()) throw Error(ErrorCode::parse, "\"aliases\" must be an object", {.file = source});
    for (auto& [k, v] : it->items()) m.aliases.emplace(k, ir::get_string(v, "alias '" + k + "'", source));
  }
  if (auto it = j.find("literals"); it != j.end()) {
    if (!it->is_object()) throw Error(ErrorCode::parse, "\"literals\" must be an object", {.file = source});
    for (auto& [k, v] : it->items()) {
      const std::string what = "literal '" + k + "'";
      SynthLiteral l;
      l.shape = shape_of(v, what);
      l.dtype = dtype_of(v, what);
      const json& vals = ir::require_field(v, "values", what, source);
      if (!vals.is_array()) throw Error(ErrorCode::parse, what + " values must be a list", {.file = source});
      for (const json& x : vals) l.values.push_back(ir::get_number(x, what + " value", source));
      if (static_cast<std::int64_t>(l.values.size()) != numel(l.shape))
        throw Error(ErrorCode::shape, what + ": value count does not match the shape",
                    {.file = source, .expected = std::to_string(numel(l.shape)), .found = std::to_string(l.values.size())});
      m.literals.emplace(k, std::move(l));
    }
  }
  // Aliases must end at a real entry, without cycles.
  for (const auto& [k, v] : m.aliases) m.resolve(k);
  return m;
}

NPUSIM_FUNC std::string SynthManifest::resolve(const std::string& key) const {
  std::string k = key;
  for (std::size_t hops = 0; hops <= aliases.size(); ++hops) {
    auto it = aliases.find(k);
    if (it == aliases.end()) return k;
    k = it->second;
  }
  throw Error(ErrorCode::weights, "alias cycle in synth manifest", {.file = source, .tensor = key});
}

NPUSIM_FUNC bool SynthManifest::contains(const std::string& key) const {
  std::string k = resolve(key);
  return tensors.count(k) || literals.count(k);
}

NPUSIM_FUNC std::pair<Shape, DType> SynthManifest::meta(const std::string& key) const {
  std::string k = resolve(key);
  if (auto it = tensors.find(k); it != tensors.end()) return {it->second.shape, it->second.dtype};
  if (auto it = literals.find(k); it != literals.end()) return {it->second.shape, it->second.dtype};
  throw Error(ErrorCode::weights, "not in the synth manifest", {.file = source, .tensor = key});
}

NPUSIM_FUNC Tensor SynthManifest::generate(const std::string& key, const Progress& progress) const {
  std::string k = resolve(key);
  if (auto it = literals.find(k); it != literals.end()) {
    const SynthLiteral& l = it->second;
    Tensor f = Tensor::from_values<double>(l.shape, std::span<const double>(l.values));
    return f.to(DType::f32).to(l.dtype);
  }
  auto it = tensors.find(k);
  if (it == tensors.end()) throw Error(ErrorCode::weights, "not in the synth manifest", {.file = source, .tensor = key});
  const SynthTensor& s = it->second;
  Tensor t = Tensor::empty(s.dtype, s.shape);
  const std::int64_t n = t.numel();
  if (!is_floating(s.dtype)) {
    std::memset(t.raw(), 0, t.nbytes());
    return t;
  }
  const std::uint64_t h = fnv1a64(k);
  const float off = static_cast<float>(s.offset), sc = static_cast<float>(s.scale);
  constexpr std::int64_t chunk = std::int64_t{1} << 20;
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  std::int64_t done = 0;
  visit_dtype(s.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) {
      T* p = t.data<T>();
#pragma omp parallel for schedule(dynamic)
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t b = c * chunk, e = std::min(n, b + chunk);
        for (std::int64_t i = b; i < e; ++i)
          p[i] = static_cast<T>(synth_value(off, sc, synth_unit(h, static_cast<std::uint64_t>(i))));
        if (progress) {
#pragma omp critical(npusim_synth_progress)
          {
            done += e - b;
            progress("synthesising " + key, static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(n));
          }
        }
      }
    }
  });
  return t;
}

}  // namespace npusim::inline NPUSIM_ABI::weights
