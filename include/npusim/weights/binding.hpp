// Binding weights to a graph: each weight placeholder used by a node -> state_dict key -> a value
// from a WeightSource (safetensors, synth manifest) or the IR's own constants. Checks shape and
// dtype against the IR, resolves tied weights to one buffer, and recomputes the rotary inv_freq
// buffer from rope_theta when a checkpoint lacks it. Everything it decides is reported in notes;
// every missing key is named in one error, so a naming problem shows in full at the first try.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/weights/safetensors.hpp"
#include "npusim/weights/synth.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const std::string& path() const = 0;
  virtual bool contains(const std::string& key) const = 0;
  virtual std::pair<Shape, DType> meta(const std::string& key) const = 0;
  virtual Tensor load(const std::string& key) const = 0;
  // Keys with the same canonical name share one buffer (synth aliases).
  virtual std::string canonical(const std::string& key) const { return key; }
  // Computed by npusim (a recipe) rather than read: any float dtype is acceptable.
  virtual bool derived(const std::string&) const { return false; }
  // Stored dtypes are the checkpoint's own, not the export's (a bf16 Hugging Face checkpoint for a
  // float32 IR): bind_weights converts them to the IR's dtype with a note instead of refusing.
  virtual bool casts() const { return false; }
  // How IR keys are looked up, for the missing-weights error ("" when by exact name only).
  virtual std::string naming_rule() const { return {}; }
  // What opening the source decided (name mapping, computed buffers, unused tensors), for users.
  virtual std::vector<std::string> notes() const { return {}; }
  // The key is stored packed in this block format ("q8_0", "q4_0"; docs/quantization.md): meta()
  // gives the weight's own shape and dtype, load() its rows of blocks, u8 [N, row_bytes(K)].
  virtual std::string block_format(const std::string&) const { return {}; }
};

class SafetensorsSource final : public WeightSource {
 public:
  explicit SafetensorsSource(const std::string& path) : file_(SafetensorsFile::open(path)) {}
  explicit SafetensorsSource(SafetensorsFile file) : file_(std::move(file)) {}
  const std::string& path() const override { return file_.path(); }
  bool contains(const std::string& key) const override { return file_.find(key) != nullptr; }
  std::pair<Shape, DType> meta(const std::string& key) const override;
  Tensor load(const std::string& key) const override { return file_.tensor(key); }
  const SafetensorsFile& file() const { return file_; }

 private:
  SafetensorsFile file_;
};

class SynthSource final : public WeightSource {
 public:
  explicit SynthSource(SynthManifest m) : m_(std::move(m)) {}
  static SynthSource read(const std::string& path) { return SynthSource(SynthManifest::read(path)); }
  const std::string& path() const override { return m_.source; }
  bool contains(const std::string& key) const override { return m_.contains(key); }
  std::pair<Shape, DType> meta(const std::string& key) const override { return m_.meta(key); }
  Tensor load(const std::string& key) const override { return m_.generate(key); }
  std::string canonical(const std::string& key) const override { return m_.resolve(key); }
  const SynthManifest& manifest() const { return m_; }

 private:
  SynthManifest m_;
};

struct BindOptions {
  bool allow_cast = false;  // cast a weight whose stored dtype differs from the IR's (else an error)
  // Tied-weight rules, tried only when a key is missing: a key ending in .first may take the
  // value of the same prefix + .second (HF checkpoints store embed_tokens, not lm_head).
  std::vector<std::pair<std::string, std::string>> ties{{"lm_head.weight", "model.embed_tokens.weight"},
                                                         {"lm_head.weight", "embed_tokens.weight"},
                                                         {"lm_head.weight", "transformer.wte.weight"}};
  std::optional<double> rope_theta;  // recompute a missing rotary inv_freq buffer
  // Convert float weights to this dtype once loaded (after rounding to the IR's dtype), e.g. f32
  // for the reference target.
  std::optional<DType> load_as;
  // The dtype the target stores each weight in (a compiled program's plan); by default the IR's.
  // Values are rounded to it (derived weights are computed in float32 and rounded once).
  std::function<DType(ir::TensorId)> storage;
  // Shared between bind_weights calls (a prefill and a decode graph of one model): values by
  // source key, so each weight is loaded and converted once.
  std::unordered_map<std::string, Tensor>* cache = nullptr;
  Progress progress;
};

struct BoundWeights {
  // By weight placeholder id. A weight the source holds packed (WeightSource::block_format) is
  // bound as its rows of blocks, u8 [N, row_bytes(K)], as stored (quant::is_packed): only a
  // linear of that weight_format reads it.
  std::unordered_map<ir::TensorId, Tensor> tensors;
  std::vector<std::string> notes;                    // ties, casts, recomputed buffers
  std::vector<std::string> unused;                   // IR weights no node reads (not loaded)
  std::uint64_t bytes = 0;                           // distinct bytes bound
};

namespace detail {
std::string describe_users(const ir::Graph& g, ir::TensorId id);
inline bool is_inv_freq(const std::string& key) { return key.ends_with("rotary_emb.inv_freq") || key.ends_with("rotary_emb.original_inv_freq"); }

// HF default rope: inv_freq[i] = 1 / theta^(2i / D), in float32.
Tensor rope_inv_freq(double theta, std::int64_t half);

// The tie rule (BindOptions::ties) for a key the source lacks: the key whose value it takes.
std::optional<std::string> find_tie(const std::string& key, const Shape& shape, const WeightSource& src,
                                    const std::vector<std::pair<std::string, std::string>>& ties);
// A key the source lacks whose tie partner is there with another shape: that partner's error
// (a wrong-shaped embedding), thrown here, rather than the key reported as missing.
void refuse_tie_of_wrong_shape(const std::string& key, const Shape& shape, const WeightSource& src,
                               const std::vector<std::pair<std::string, std::string>>& ties, const std::string& node);

// One error naming every missing key (the first 20 and a count), with the source's naming rule.
Error missing_weights(const std::vector<std::string>& keys, const std::string& file, const std::string& node,
                      const std::string& rule);
}  // namespace detail

BoundWeights bind_weights(const ir::Graph& g, const WeightSource* src, const BindOptions& opt = {});

}  // namespace npusim::inline NPUSIM_ABI::weights

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/weights/impl/binding_inl.hpp"
#endif
