// A Hugging Face model directory as a weights source: config.json plus model.safetensors, or the
// shards listed by model.safetensors.index.json (each shard memory-mapped, tensors zero-copy views).
// The IR names weights by the exported module's state_dict, which often wraps the HF model (an
// attribute `model` turns `model.layers.0...` into `model.model.layers.0...`), so IR keys are
// mapped onto checkpoint names by one rule chosen for the whole graph (bind_to): exact name, else
// one wrapper prefix taken off the IR key (or put on it), the prefix that matches the most keys.
// Rotary inv_freq buffers are computed from config.json (rope.hpp); lm_head comes from
// embed_tokens through BindOptions::ties when the config ties them or the checkpoint lacks it.
// Checkpoint dtypes are converted to the IR's (casts()), with a note per dtype pair; inv_freq is
// float32 like transformers' and is rounded to the IR's dtype too, as the exported model's was.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "npusim/config.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/weights/rope.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

class HfCheckpointSource final : public WeightSource {
 public:
  static constexpr const char* config_name = "config.json";
  static constexpr const char* single_name = "model.safetensors";
  static constexpr const char* index_name = "model.safetensors.index.json";

  explicit HfCheckpointSource(const std::string& dir);

  // Chooses the naming rule for `g` (exact names, then the one prefix matching the most IR keys),
  // checks the rotary buffers' length against config.json, and throws one error naming every weight
  // a node reads that has no value. Call it with the model's whole graph before binding (partition
  // graphs of it, and the decode graph of the same export, use the same rule).
  void bind_to(const ir::Graph& g);

  const std::string& path() const override { return dir_; }
  bool contains(const std::string& key) const override { return detail::is_inv_freq(key) || resolve(key).has_value(); }
  std::pair<Shape, DType> meta(const std::string& key) const override;
  Tensor load(const std::string& key) const override;
  std::string canonical(const std::string& key) const override;
  bool casts() const override { return true; }
  std::string naming_rule() const override;
  std::vector<std::string> notes() const override { return notes_; }

  // The checkpoint name an IR key reads, by the rule bind_to chose (exact names before it).
  std::optional<std::string> resolve(const std::string& key) const;
  const ir::json& config() const { return *config_; }
  RopeParams rope() const;
  const std::vector<SafetensorsFile>& files() const { return files_; }
  std::size_t size() const { return names_.size(); }

 private:
  struct Located {
    std::size_t file;
    std::size_t entry;  // index in files_[file].entries()
  };

  void open_single(const std::string& path);

  // weight_map: tensor name -> shard file name. Each shard is a plain file name in this directory;
  // every tensor lives in exactly one shard, the one the index names.
  void open_index(const std::string& path);

  [[noreturn]] void refuse_without_safetensors(const std::string& dir) const;

  // Among "" and every dotted prefix P with IR key = P + name (strip) or name = P + IR key (add),
  // the one that lets the most IR keys resolve (exact names count for every choice); ties go to the
  // shorter prefix, then to strip, so the choice does not depend on map order.
  void choose_prefix(const std::vector<std::string>& keys);

  const SafetensorsEntry& entry(const std::string& key) const;

  void check_rotary(const std::string& key, const Shape& ir_shape);

  std::string dir_;
  std::shared_ptr<const ir::json> config_;
  bool tie_ = false;  // config.json tie_word_embeddings
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Located> names_;  // checkpoint name -> where it is stored
  std::string prefix_;                    // the wrapper prefix bind_to chose ("" = exact names only)
  bool strip_ = true;                     // IR key = prefix + name (else name = prefix + IR key)
  std::size_t matched_ = 0;
  std::set<std::string> hidden_;  // stored tensors transformers would not load (a tied lm_head)
  std::vector<std::string> notes_;
};

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/hf_checkpoint_inl.hpp"
#endif
