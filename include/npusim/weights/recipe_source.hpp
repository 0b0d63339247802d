// A WeightSource that also serves derived weights: a key produced by a recipe (a folded
// BatchNorm, a padded conv weight) is computed from the base source on first use and cached.
#pragma once

#include <map>
#include <mutex>

#include "npusim/config.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

class RecipeSource final : public WeightSource {
 public:
  RecipeSource(const WeightSource* base, std::vector<Recipe> recipes);
  const std::string& path() const override;
  bool contains(const std::string& key) const override { return producer_.count(key) || (base_ && base_->contains(key)); }
  std::pair<Shape, DType> meta(const std::string& key) const override;
  Tensor load(const std::string& key) const override;
  std::string canonical(const std::string& key) const override { return producer_.count(key) || !base_ ? key : base_->canonical(key); }
  bool derived(const std::string& key) const override { return producer_.count(key) > 0; }
  bool casts() const override { return base_ && base_->casts(); }
  std::string naming_rule() const override { return base_ ? base_->naming_rule() : std::string(); }
  std::vector<std::string> notes() const override { return base_ ? base_->notes() : std::vector<std::string>{}; }
  std::string block_format(const std::string& key) const override {
    return producer_.count(key) || !base_ ? std::string() : base_->block_format(key);
  }

 private:
  const WeightSource* base_;
  std::vector<Recipe> recipes_;
  std::map<std::string, std::pair<std::size_t, std::size_t>> producer_;
  mutable std::map<std::string, Tensor> cache_;
  mutable std::recursive_mutex mu_;
};

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/recipe_source_inl.hpp"
#endif
