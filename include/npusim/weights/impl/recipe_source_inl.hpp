// Definitions for npusim/weights/recipe_source.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/weights/recipe_source.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC RecipeSource::RecipeSource(const WeightSource* base, std::vector<Recipe> recipes) : base_(base), recipes_(std::move(recipes)) {
  for (std::size_t i = 0; i < recipes_.size(); ++i)
    for (std::size_t k = 0; k < recipes_[i].outputs.size(); ++k) producer_[recipes_[i].outputs[k]] = {i, k};
}

NPUSIM_FUNC const std::string& RecipeSource::path() const {
  static const std::string none = "(no weights)";
  return base_ ? base_->path() : none;
}

NPUSIM_FUNC std::pair<Shape, DType> RecipeSource::meta(const std::string& key) const {
  if (producer_.count(key)) {
    Tensor t = load(key);
    return {t.shape(), t.dtype()};
  }
  if (!base_) throw Error(ErrorCode::weights, "no weights source", {.tensor = key});
  return base_->meta(key);
}

NPUSIM_FUNC Tensor RecipeSource::load(const std::string& key) const {
  auto it = producer_.find(key);
  if (it == producer_.end()) {
    if (!base_) throw Error(ErrorCode::weights, "no weights source", {.tensor = key});
    return base_->load(key);
  }
  std::lock_guard lock(mu_);
  if (auto c = cache_.find(key); c != cache_.end()) return c->second;
  const Recipe& r = recipes_[it->second.first];
  auto get = [&](const std::string& k) -> Tensor {
    if (producer_.count(k)) return load(k);  // a recipe of a derived weight (pad after bn_fold)
    if (!base_ || !base_->contains(k))
      throw Error(ErrorCode::weights, "weight needed by a " + r.kind + " recipe is missing", {.file = path(), .tensor = k});
    return base_->load(k);
  };
  std::vector<Tensor> outs = apply_recipe(r, get);
  for (std::size_t k = 0; k < r.outputs.size(); ++k) cache_[r.outputs[k]] = outs.at(k);
  return cache_.at(key);
}

}  // namespace npusim::inline NPUSIM_ABI::weights
