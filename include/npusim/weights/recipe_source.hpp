// A WeightSource that also serves derived weights: a key produced by a recipe (a folded
// BatchNorm, a padded conv weight) is computed from the base source on first use and cached.
#pragma once

#include <map>
#include <mutex>

#include "npusim/weights/binding.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

class RecipeSource final : public WeightSource {
 public:
  RecipeSource(const WeightSource* base, std::vector<Recipe> recipes) : base_(base), recipes_(std::move(recipes)) {
    for (std::size_t i = 0; i < recipes_.size(); ++i)
      for (std::size_t k = 0; k < recipes_[i].outputs.size(); ++k) producer_[recipes_[i].outputs[k]] = {i, k};
  }
  const std::string& path() const override {
    static const std::string none = "(no weights)";
    return base_ ? base_->path() : none;
  }
  bool contains(const std::string& key) const override { return producer_.count(key) || (base_ && base_->contains(key)); }
  std::pair<Shape, DType> meta(const std::string& key) const override {
    if (producer_.count(key)) {
      Tensor t = load(key);
      return {t.shape(), t.dtype()};
    }
    if (!base_) throw Error(ErrorCode::weights, "no weights source", {.tensor = key});
    return base_->meta(key);
  }
  Tensor load(const std::string& key) const override {
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
  std::string canonical(const std::string& key) const override { return producer_.count(key) || !base_ ? key : base_->canonical(key); }
  bool derived(const std::string& key) const override { return producer_.count(key) > 0; }
  bool casts() const override { return base_ && base_->casts(); }
  std::string naming_rule() const override { return base_ ? base_->naming_rule() : std::string(); }
  std::vector<std::string> notes() const override { return base_ ? base_->notes() : std::vector<std::string>{}; }

 private:
  const WeightSource* base_;
  std::vector<Recipe> recipes_;
  std::map<std::string, std::pair<std::size_t, std::size_t>> producer_;
  mutable std::map<std::string, Tensor> cache_;
  mutable std::recursive_mutex mu_;
};

}  // namespace npusim::inline NPUSIM_ABI::weights
