// Definitions for npusim/weights/binding.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <cmath>
#include <unordered_set>

#include "npusim/weights/binding.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/weights/rope.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC std::pair<Shape, DType> SafetensorsSource::meta(const std::string& key) const {
  const SafetensorsEntry* e = file_.find(key);
  if (!e) throw Error(ErrorCode::weights, "not in the file", {.file = path(), .tensor = key});
  return {e->shape, e->dtype};
}

}  // namespace npusim::inline NPUSIM_ABI::weights

namespace npusim::inline NPUSIM_ABI::weights {
namespace detail {

NPUSIM_FUNC std::string describe_users(const ir::Graph& g, ir::TensorId id) {
  for (const ir::Node& n : g.nodes)
    for (auto t : n.inputs)
      if (t == id) return n.name;
  return {};
}

NPUSIM_FUNC Tensor rope_inv_freq(double theta, std::int64_t half) {
  RopeParams p;
  p.theta = check_range(theta, rope_ranges::theta, "rope_theta"), p.dim = 2 * half;
  return weights::rope_inv_freq(p);
}

NPUSIM_FUNC void refuse_tie_of_wrong_shape(const std::string& key, const Shape& shape, const WeightSource& src,
                                           const std::vector<std::pair<std::string, std::string>>& ties, const std::string& node) {
  for (const auto& [a, b] : ties) {
    if (!key.ends_with(a)) continue;
    const std::string cand = key.substr(0, key.size() - a.size()) + b;
    if (!src.contains(cand)) continue;
    const Shape found = src.meta(cand).first;
    if (found != shape)
      throw Error(ErrorCode::shape, "'" + key + "' is absent and tied to this tensor, whose shape differs from the IR's (a wrong-shaped embedding?)",
                  {.file = src.path(), .node = node, .tensor = cand, .expected = to_string(shape), .found = to_string(found)});
  }
}

NPUSIM_FUNC std::optional<std::string> find_tie(const std::string& key, const Shape& shape, const WeightSource& src,
                                                const std::vector<std::pair<std::string, std::string>>& ties) {
  for (const auto& [a, b] : ties) {
    if (!key.ends_with(a)) continue;
    std::string cand = key.substr(0, key.size() - a.size()) + b;
    if (src.contains(cand) && src.meta(cand).first == shape) return cand;
  }
  return std::nullopt;
}

NPUSIM_FUNC Error missing_weights(const std::vector<std::string>& keys, const std::string& file, const std::string& node,
                                  const std::string& rule) {
  bool rotary = false;
  for (const auto& k : keys) rotary = rotary || is_inv_freq(k);
  const std::string hint = rotary ? " (a rotary buffer checkpoints omit: give rope_theta to recompute it)" : "";
  const std::string tried = rule.empty() ? "" : "; names tried: " + rule;
  if (keys.size() == 1)
    return Error(ErrorCode::weights, "weight missing from the weights source" + hint + tried,
                 {.file = file, .node = node, .tensor = keys[0], .expected = "a tensor named '" + keys[0] + "'", .found = "none"});
  constexpr std::size_t shown = 20;
  std::string list;
  for (std::size_t i = 0; i < keys.size() && i < shown; ++i) list += (i ? ", " : "") + keys[i];
  if (keys.size() > shown) list += ", ... (" + std::to_string(keys.size() - shown) + " more)";
  return Error(ErrorCode::weights, std::to_string(keys.size()) + " weights missing from the weights source" + hint + tried + ": " + list,
               {.file = file, .expected = "a tensor for each IR weight key", .found = std::to_string(keys.size()) + " without one"});
}

}  // namespace detail
}  // namespace npusim::inline NPUSIM_ABI::weights

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC BoundWeights bind_weights(const ir::Graph& g, const WeightSource* src, const BindOptions& opt) {
  BoundWeights out;
  std::vector<bool> used(g.tensors.size(), false);
  for (const ir::Node& n : g.nodes)
    for (auto t : n.inputs) used[static_cast<std::size_t>(t)] = true;
  for (auto t : g.outputs) used[static_cast<std::size_t>(t)] = true;  // a weight returned as it is

  // Plan: which key feeds which placeholder.
  struct Item {
    ir::TensorId id;
    std::string key, from;  // IR key, key actually read
    bool constant;
    bool recompute = false;  // a rotary inv_freq computed from rope_theta (not read)
  };
  std::vector<Item> plan;
  std::vector<std::string> missing;
  std::string first_missing_user;
  for (ir::TensorId id : g.weights) {
    const ir::TensorInfo& w = g.tensor(id);
    if (!used[static_cast<std::size_t>(id)]) {
      out.unused.push_back(w.weight_key);
      continue;
    }
    Item it{id, w.weight_key, w.weight_key, false};
    if (g.constants.count(w.weight_key)) {
      it.constant = true;
    } else if (!src || !src->contains(w.weight_key)) {
      if (auto tie = src ? detail::find_tie(w.weight_key, w.shape, *src, opt.ties) : std::nullopt) {
        it.from = *tie;
        out.notes.push_back("tied: " + w.weight_key + " uses " + *tie);
      } else if (detail::is_inv_freq(w.weight_key) && opt.rope_theta) {
        it.from.clear(), it.recompute = true;  // recomputed below
      } else {
        if (src) detail::refuse_tie_of_wrong_shape(w.weight_key, w.shape, *src, opt.ties, detail::describe_users(g, id));
        if (missing.empty()) first_missing_user = detail::describe_users(g, id);
        missing.push_back(w.weight_key);
        continue;
      }
    }
    plan.push_back(std::move(it));
  }
  if (!missing.empty())
    throw detail::missing_weights(missing, src ? src->path() : g.source, first_missing_user, src ? src->naming_rule() : "");

  // Shapes must agree with the IR; dtypes too, unless casting is allowed (notes by dtype pair).
  std::uint64_t total = 0;
  std::map<std::pair<DType, DType>, std::vector<std::string>> casts;
  for (const Item& it : plan) {
    const ir::TensorId id = it.id;
    const ir::TensorInfo& w = g.tensor(id);
    if (!it.constant && !it.recompute) {
      auto [shape, dtype] = src->meta(it.from);
      if (shape != w.shape)
        throw Error(ErrorCode::shape, "weight shape differs from the IR", {.file = src->path(), .node = detail::describe_users(g, id),
                    .tensor = it.from, .expected = to_string(w.shape), .found = to_string(shape)});
      if (dtype != w.dtype && !src->derived(it.from)) {
        if (!same_dtype_kind(dtype, w.dtype))
          throw Error(ErrorCode::dtype, "weight has the wrong kind of dtype (the input rule: a float weight takes float tensors, an integer weight "
                                        "integer ones, a bool weight bool; no silent conversion)",
                      {.file = src->path(), .node = detail::describe_users(g, id), .tensor = it.from,
                       .expected = std::string(dtype_name(w.dtype)), .found = std::string(dtype_name(dtype))});
        if (!opt.allow_cast && !src->casts())
          throw Error(ErrorCode::dtype, "weight dtype differs from the IR (only a Hugging Face model directory's checkpoint is converted; "
                                        "store this file's weights in the IR's dtype)",
                      {.file = src->path(), .node = detail::describe_users(g, id), .tensor = it.from,
                       .expected = std::string(dtype_name(w.dtype)), .found = std::string(dtype_name(dtype))});
        casts[{dtype, w.dtype}].push_back(it.from);
      }
      total += static_cast<std::uint64_t>(numel(w.shape)) * dtype_size(w.dtype);
    }
  }
  for (const auto& [dt, keys] : casts) {
    const std::string how = std::string(dtype_name(dt.first)) + " -> " + std::string(dtype_name(dt.second));
    out.notes.push_back(keys.size() == 1 ? "cast: " + keys[0] + " " + how
                                         : "cast: " + std::to_string(keys.size()) + " weights " + how + " (" + keys[0] + ", ...)");
  }

  // Refuse before loading anything when the distinct tensors cannot fit (a file claiming a 1 TB
  // tensor, or many large ones), naming the largest.
  {
    std::unordered_set<std::string> seen;
    std::uint64_t sum = 0, largest = 0;
    const Item* big = nullptr;
    for (const Item& it : plan) {
      if (it.constant || !seen.insert(it.recompute ? it.key : src->canonical(it.from)).second) continue;
      const ir::TensorInfo& w = g.tensor(it.id);
      const DType d = opt.load_as && is_floating(w.dtype) ? *opt.load_as : w.dtype;
      const auto n = static_cast<std::uint64_t>(numel(w.shape)), es = std::max(dtype_size(d), dtype_size(w.dtype));
      const std::uint64_t b = n > UINT64_MAX / es ? UINT64_MAX : n * es;
      sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
      if (b >= largest) largest = b, big = &it;
    }
    try {
      check_allocation(sum, [&] { return "binding " + std::to_string(seen.size()) + " weight tensor(s) (the largest of shape " + to_string(g.tensor(big->id).shape) + ")"; });
    } catch (Error& e) {
      throw e.with_file(src ? src->path() : g.source).with_tensor(big->key);
    }
  }

  // Load, sharing buffers between keys that resolve to the same source tensor.
  std::unordered_map<std::string, Tensor> own_cache;
  std::unordered_map<std::string, Tensor>& loaded = opt.cache ? *opt.cache : own_cache;
  // Values take the IR's dtype (the model's semantics), then the target's storage dtype; derived
  // weights (recipes) skip the first rounding.
  auto finish = [&](Tensor t, ir::TensorId id, bool derived) {
    const DType ir_dtype = g.tensor(id).dtype;
    if (!derived) t = t.to(ir_dtype);
    t = t.to(opt.storage ? opt.storage(id) : ir_dtype);
    if (opt.load_as && is_floating(ir_dtype)) t = t.to(*opt.load_as);
    return t;
  };
  std::uint64_t done = 0;
  for (const Item& it : plan) {
    const ir::TensorInfo& w = g.tensor(it.id);
    Tensor t;
    if (it.constant) {
      t = g.constants.at(it.key);
      if (t.shape() != w.shape)
        throw Error(ErrorCode::shape, "IR constant shape differs from its weight entry", {.file = g.source, .tensor = it.key,
                    .expected = to_string(w.shape), .found = to_string(t.shape())});
      t = finish(t, it.id, false);
    } else if (it.recompute) {
      if (w.shape.size() != 1)
        throw Error(ErrorCode::shape, "a rotary inv_freq weight is 1-D", {.file = g.source, .tensor = it.key, .expected = "[head_dim / 2]", .found = to_string(w.shape)});
      try {
        t = finish(detail::rope_inv_freq(*opt.rope_theta, w.shape.at(0)), it.id, false);
      } catch (Error& e) {
        throw e.with_file(g.source).with_tensor(it.key);
      }
      out.notes.push_back("recomputed: " + it.key + " from rope_theta = " + std::to_string(*opt.rope_theta));
    } else {
      std::string canon = src->canonical(it.from);
      auto found = loaded.find(canon);
      if (found == loaded.end()) {
        const std::string packed = src->block_format(it.from);
        if (packed.empty()) {
          found = loaded.emplace(canon, finish(src->load(it.from), it.id, src->derived(it.from))).first;
        } else {
          Tensor rows = src->load(it.from);
          const auto f = quant::parse_block_format(packed);
          if (!f || !quant::holds_rows(*f, rows, w.shape))
            throw Error(ErrorCode::shape, "packed weight does not hold the rows of blocks of its tensor",
                        {.file = src->path(), .node = detail::describe_users(g, it.id), .tensor = it.from,
                         .expected = packed + " rows of " + to_string(w.shape), .found = std::string(dtype_name(rows.dtype())) + " " + to_string(rows.shape())});
          found = loaded.emplace(canon + "#" + packed, std::move(rows)).first;
        }
        out.bytes += found->second.nbytes();
      }
      t = found->second;
      done += static_cast<std::uint64_t>(numel(w.shape)) * dtype_size(w.dtype);
      if (opt.progress) opt.progress("loading weights", done, total);
    }
    out.tensors[it.id] = t;
  }
  if (opt.progress) opt.progress("loading weights", total, total);
  return out;
}

}  // namespace npusim::inline NPUSIM_ABI::weights
