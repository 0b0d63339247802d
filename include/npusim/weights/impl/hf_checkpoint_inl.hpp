// Definitions for npusim/weights/hf_checkpoint.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/hf_checkpoint.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC RopeParams HfCheckpointSource::rope() const { return rope_params(*config_, (std::filesystem::path(dir_) / config_name).string()); }

NPUSIM_FUNC void HfCheckpointSource::refuse_without_safetensors(const std::string& dir) const {
  const std::filesystem::path d(dir);
  for (const char* bin : {"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "tf_model.h5", "flax_model.msgpack"})
    if (std::filesystem::exists(d / bin))
      throw Error(ErrorCode::unsupported, std::string("the checkpoint is ") + bin + ": npusim reads safetensors only "
                  "(convert it, e.g. with transformers: model.save_pretrained(dir, safe_serialization=True))",
                  {.file = dir_, .expected = std::string(single_name) + " or " + index_name, .found = bin});
  throw Error(ErrorCode::io, "no weights in the model directory", {.file = dir_, .expected = std::string(single_name) + " or " + index_name,
              .found = "none"});
}

NPUSIM_FUNC HfCheckpointSource::HfCheckpointSource(const std::string& dir) : dir_(dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw Error(ErrorCode::io, "not a directory (a Hugging Face model directory is expected)", {.file = dir});
  const fs::path cfg = d / config_name;
  if (!fs::is_regular_file(cfg))
    throw Error(ErrorCode::io, "no config.json: not a Hugging Face model directory", {.file = dir, .expected = "config.json", .found = "none"});
  auto config = std::make_shared<ir::json>(ir::parse_json(read_file(cfg.string(), std::uint64_t{16} << 20), cfg.string()));
  config_ = config;
  if (!config->is_object()) throw Error(ErrorCode::parse, "config.json must be a JSON object", {.file = cfg.string()});
  if (auto t = config->find("tie_word_embeddings"); t != config->end() && t->is_boolean()) tie_ = t->get<bool>();
  if (fs::is_regular_file(d / single_name)) open_single((d / single_name).string());
  else if (fs::is_regular_file(d / index_name)) open_index((d / index_name).string());
  else refuse_without_safetensors(d.string());
}

NPUSIM_FUNC void HfCheckpointSource::bind_to(const ir::Graph& g) {
  std::vector<bool> used(g.tensors.size(), false);
  for (const ir::Node& n : g.nodes)
    for (auto t : n.inputs) used[static_cast<std::size_t>(t)] = true;
  std::vector<std::string> keys;
  for (ir::TensorId id : g.weights) {
    const std::string& k = g.tensor(id).weight_key;
    if (!g.constants.count(k) && !detail::is_inv_freq(k)) keys.push_back(k);
  }
  choose_prefix(keys);
  hidden_.clear();
  notes_.clear();
  notes_.push_back("names: " + naming_rule() + " (" + std::to_string(matched_) + " of " + std::to_string(keys.size()) + " IR keys)");

  // tie_word_embeddings: transformers ignores a stored lm_head and uses embed_tokens.
  const BindOptions defaults;
  if (tie_)
    for (const std::string& k : keys)
      if (auto name = resolve(k))
        for (const auto& [a, b] : defaults.ties)
          if (k.ends_with(a) && resolve(k.substr(0, k.size() - a.size()) + b)) {
            hidden_.insert(*name);
            notes_.push_back("tie_word_embeddings: checkpoint tensor " + *name + " ignored, " + k + " takes the embedding");
            break;
          }

  std::vector<std::string> missing;
  std::string first_user;
  std::set<std::string> reached;
  for (ir::TensorId id : g.weights) {
    const ir::TensorInfo& w = g.tensor(id);
    const std::string& k = w.weight_key;
    if (g.constants.count(k)) continue;
    if (detail::is_inv_freq(k)) {
      if (used[static_cast<std::size_t>(id)]) check_rotary(k, w.shape);
      continue;
    }
    if (auto name = resolve(k)) {
      reached.insert(*name);
    } else if (auto tie = detail::find_tie(k, w.shape, *this, defaults.ties)) {
      if (auto name = resolve(*tie)) reached.insert(*name);
    } else if (used[static_cast<std::size_t>(id)]) {
      detail::refuse_tie_of_wrong_shape(k, w.shape, *this, defaults.ties, detail::describe_users(g, id));
      if (missing.empty()) first_user = detail::describe_users(g, id);
      missing.push_back(k);
    }
  }
  if (!missing.empty()) throw detail::missing_weights(missing, dir_, first_user, naming_rule());

  std::vector<std::string> unused;
  for (const auto& [name, loc] : names_)
    if (!reached.count(name)) unused.push_back(name);
  if (!unused.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unused.size() && i < 10; ++i) list += (i ? ", " : "") + unused[i];
    if (unused.size() > 10) list += ", ...";
    notes_.push_back("unused: " + std::to_string(unused.size()) + " checkpoint tensor(s) no IR weight takes: " + list);
  }
}

NPUSIM_FUNC std::pair<Shape, DType> HfCheckpointSource::meta(const std::string& key) const {
  if (detail::is_inv_freq(key)) return {Shape{rope().count()}, DType::f32};
  const SafetensorsEntry& e = entry(key);
  return {e.shape, e.dtype};
}

NPUSIM_FUNC Tensor HfCheckpointSource::load(const std::string& key) const {
  if (detail::is_inv_freq(key)) return rope_inv_freq(rope());
  auto name = resolve(key);
  if (!name) throw Error(ErrorCode::weights, "no checkpoint tensor for this IR key; names tried: " + naming_rule(), {.file = dir_, .tensor = key});
  const Located& at = names_.at(*name);
  return files_[at.file].tensor(files_[at.file].entries()[at.entry]);
}

NPUSIM_FUNC std::string HfCheckpointSource::canonical(const std::string& key) const {
  auto name = detail::is_inv_freq(key) ? std::nullopt : resolve(key);
  return name ? *name : key;
}

NPUSIM_FUNC std::string HfCheckpointSource::naming_rule() const {
  std::string r = "exact name";
  if (!prefix_.empty())
    r += strip_ ? ", else IR key = '" + prefix_ + "' + checkpoint name" : ", else checkpoint name = '" + prefix_ + "' + IR key";
  return r + "; lm_head from embed_tokens when tied; rotary inv_freq from config.json";
}

NPUSIM_FUNC std::optional<std::string> HfCheckpointSource::resolve(const std::string& key) const {
  auto have = [&](const std::string& n) { return names_.count(n) && !hidden_.count(n); };
  if (have(key)) return key;
  if (!prefix_.empty()) {
    if (strip_ && key.starts_with(prefix_) && have(key.substr(prefix_.size()))) return key.substr(prefix_.size());
    if (!strip_ && have(prefix_ + key)) return prefix_ + key;
  }
  return std::nullopt;
}

NPUSIM_FUNC void HfCheckpointSource::open_single(const std::string& path) {
  files_.push_back(SafetensorsFile::open(path));
  for (std::size_t i = 0; i < files_[0].entries().size(); ++i) names_[files_[0].entries()[i].name] = {0, i};
}

NPUSIM_FUNC void HfCheckpointSource::open_index(const std::string& path) {
  namespace fs = std::filesystem;
  ir::json idx = ir::parse_json_unique_keys(read_file(path, std::uint64_t{256} << 20), path);
  if (!idx.is_object() || !idx.contains("weight_map") || !idx["weight_map"].is_object())
    throw Error(ErrorCode::parse, "index has no \"weight_map\" object", {.file = path, .expected = "{\"weight_map\": {name: shard file}}"});
  std::map<std::string, std::size_t> shard_ids;
  std::map<std::string, std::size_t> listed;  // name -> shard index
  for (const auto& [name, v] : idx["weight_map"].items()) {
    const std::string shard = ir::get_string(v, "weight_map entry", path);
    const fs::path sp(shard);
    if (shard.empty() || sp.is_absolute() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos ||
        shard == "." || shard == "..")
      throw Error(ErrorCode::parse, "shard must be a file name in the model directory (no directories, no '..')",
                  {.file = path, .tensor = name, .expected = "a name like model-00001-of-00002.safetensors", .found = shard});
    auto [it, fresh] = shard_ids.emplace(shard, files_.size());
    if (fresh) {
      const fs::path full = fs::path(dir_) / shard;
      if (const std::string kind = path_kind(full.string()); kind != "a regular file")
        throw Error(ErrorCode::io, kind == "none" ? "shard named by the index is missing" : "shard named by the index is not a file",
                    {.file = full.string(), .tensor = name, .expected = "a safetensors file", .found = kind});
      files_.push_back(SafetensorsFile::open(full.string()));
    }
    listed[name] = it->second;
  }
  if (files_.empty()) throw Error(ErrorCode::parse, "index lists no tensors", {.file = path});
  for (std::size_t f = 0; f < files_.size(); ++f)
    for (std::size_t i = 0; i < files_[f].entries().size(); ++i) {
      const SafetensorsEntry& e = files_[f].entries()[i];
      auto [it, fresh] = names_.emplace(e.name, Located{f, i});
      if (!fresh)
        throw Error(ErrorCode::weights, "tensor is stored in two shards", {.file = path, .tensor = e.name,
                    .expected = "one shard", .found = files_[it->second.file].path() + " and " + files_[f].path()});
      auto l = listed.find(e.name);
      if (l == listed.end())
        throw Error(ErrorCode::weights, "shard holds a tensor the index does not list", {.file = path, .tensor = e.name,
                    .expected = "an entry in weight_map", .found = "in " + files_[f].path()});
      if (l->second != f)
        throw Error(ErrorCode::weights, "index names another shard than the one holding the tensor", {.file = path, .tensor = e.name,
                    .expected = files_[l->second].path(), .found = files_[f].path()});
    }
  for (const auto& [name, f] : listed)
    if (!names_.count(name))
      throw Error(ErrorCode::weights, "index lists a tensor its shard does not hold", {.file = path, .tensor = name,
                  .expected = "in " + files_[f].path(), .found = "none"});
}

NPUSIM_FUNC void HfCheckpointSource::choose_prefix(const std::vector<std::string>& keys) {
  prefix_.clear(), strip_ = true;
  std::size_t exact = 0;
  std::map<std::pair<std::string, bool>, std::size_t> gain;  // (prefix, strip) -> keys it adds
  std::set<std::string> key_set(keys.begin(), keys.end());
  for (const std::string& k : keys) {
    if (names_.count(k)) {
      ++exact;
      continue;
    }
    for (std::size_t i = k.find('.'); i != std::string::npos; i = k.find('.', i + 1))
      if (names_.count(k.substr(i + 1))) ++gain[{k.substr(0, i + 1), true}];
  }
  for (const auto& [n, loc] : names_)
    for (std::size_t i = n.find('.'); i != std::string::npos; i = n.find('.', i + 1))
      if (std::string rest = n.substr(i + 1); key_set.count(rest) && !names_.count(rest)) ++gain[{n.substr(0, i + 1), false}];
  std::size_t best = 0;
  for (const auto& [pk, count] : gain) {
    const bool better = count > best || (count == best && count > 0 &&
                                         (pk.first.size() < prefix_.size() || (pk.first.size() == prefix_.size() && pk.second && !strip_)));
    if (better) best = count, prefix_ = pk.first, strip_ = pk.second;
  }
  matched_ = exact + best;
}

NPUSIM_FUNC const SafetensorsEntry& HfCheckpointSource::entry(const std::string& key) const {
  auto name = resolve(key);
  if (!name) throw Error(ErrorCode::weights, "no checkpoint tensor for this IR key; names tried: " + naming_rule(), {.file = dir_, .tensor = key});
  const Located& at = names_.at(*name);
  return files_[at.file].entries()[at.entry];
}

NPUSIM_FUNC void HfCheckpointSource::check_rotary(const std::string& key, const Shape& ir_shape) {
  const RopeParams p = rope();
  if (ir_shape != Shape{p.count()})
    throw Error(ErrorCode::shape, "rotary inv_freq length from config.json differs from the IR (head_dim x partial_rotary_factor / 2)",
                {.file = (std::filesystem::path(dir_) / config_name).string(), .tensor = key, .expected = to_string(ir_shape),
                 .found = to_string(Shape{p.count()}) + " (rotary dim " + std::to_string(p.dim) + ")"});
  if (std::find(notes_.begin(), notes_.end(), "rotary: inv_freq from config.json: " + p.describe()) == notes_.end())
    notes_.push_back("rotary: inv_freq from config.json: " + p.describe());
}

}  // namespace npusim::inline NPUSIM_ABI::weights
