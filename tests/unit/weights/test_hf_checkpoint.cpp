#include <nlohmann/json.hpp>

#include <cmath>
#include <numbers>

#include "../../common/test_util.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/weights/open.hpp"

using namespace npusim;
using namespace npusim::weights;
using npusim::test::data;

namespace {

const char* const prefill = "models/qwen2_tiny_prefill";

struct HfDirOptions {
  int shards = 2;
  DType dtype = DType::bf16;  // stored dtype (the fixture's is bf16)
  nlohmann::json config = {{"model_type", "qwen2"}, {"hidden_size", 128},        {"num_attention_heads", 4},
                           {"num_key_value_heads", 2}, {"rope_theta", 1000000.0}, {"tie_word_embeddings", true}};
  std::vector<std::string> drop;                              // checkpoint names left out
  std::vector<std::pair<std::string, Tensor>> extra;          // more checkpoint tensors
};

// An HF-format directory made from the tiny Qwen2 fixture, whose keys are IR keys: the exporter's
// wrapper prefix `model.` taken off, no rotary buffers (HF checkpoints omit them), no lm_head (tied).
void make_hf_dir(const std::string& dir, const HfDirOptions& o = {}) {
  SafetensorsFile full = SafetensorsFile::open(data(std::string(prefill) + "/weights.safetensors"));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& e : full.entries()) {
    if (e.name.find("rotary_emb") != std::string::npos) continue;
    std::string name = e.name.substr(std::string("model.").size());
    if (std::find(o.drop.begin(), o.drop.end(), name) != o.drop.end()) continue;
    tensors.emplace_back(name, full.tensor(e).to(o.dtype));
  }
  for (const auto& x : o.extra) tensors.push_back(x);
  test::write_text(dir + "/config.json", o.config.dump(1));
  if (o.shards == 1) {
    write_safetensors(dir + "/model.safetensors", tensors);
    return;
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  const std::size_t per = (tensors.size() + o.shards - 1) / o.shards;
  for (int s = 0; s < o.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, o.shards);
    std::vector<std::pair<std::string, Tensor>> part;
    for (std::size_t i = s * per; i < tensors.size() && i < (s + 1) * per; ++i) {
      part.push_back(tensors[i]);
      index["weight_map"][tensors[i].first] = name;
    }
    write_safetensors(dir + "/" + name, part);
  }
  test::write_text(dir + "/model.safetensors.index.json", index.dump(1));
}

bool has_note(const std::vector<std::string>& notes, const std::string& fragment) {
  for (const auto& n : notes)
    if (n.find(fragment) != std::string::npos) return true;
  return false;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// transformers' llama3 rule, written out again in double precision.
std::vector<double> llama3_double(double theta, int dim, double factor, double low, double high, double old_len) {
  std::vector<double> out;
  for (int i = 0; i < dim / 2; ++i) {
    const double inv = 1.0 / std::pow(theta, 2.0 * i / dim), wavelen = 2 * std::numbers::pi / inv;
    if (wavelen < old_len / high) out.push_back(inv);
    else if (wavelen > old_len / low) out.push_back(inv / factor);
    else {
      const double s = (old_len / wavelen - low) / (high - low);
      out.push_back((1 - s) * inv / factor + s * inv);
    }
  }
  return out;
}

}  // namespace

TEST(HfCheckpoint, ShardedDirectoryBindsEveryWeightBitExactly) {
  test::TempDir d;
  make_hf_dir(d.path().string());
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  std::unique_ptr<WeightSource> src = open_weights(d.path().string(), &g);
  auto* hf = dynamic_cast<HfCheckpointSource*>(src.get());
  ASSERT_NE(hf, nullptr);
  EXPECT_EQ(hf->files().size(), 2u);
  EXPECT_EQ(*hf->resolve("model.model.layers.1.mlp.up_proj.weight"), "model.layers.1.mlp.up_proj.weight");
  EXPECT_TRUE(has_note(hf->notes(), "IR key = 'model.' + checkpoint name"));
  EXPECT_TRUE(has_note(hf->notes(), "rotary: inv_freq from config.json"));

  SafetensorsFile full = SafetensorsFile::open(data(std::string(prefill) + "/weights.safetensors"));
  for (std::optional<DType> load_as : {std::optional<DType>(), std::optional<DType>(DType::f32)}) {
    SCOPED_TRACE(load_as ? "stored and loaded as f32" : "IR dtypes");
    BindOptions opt;
    opt.load_as = load_as;
    if (load_as) opt.storage = [](ir::TensorId) { return DType::f32; };  // a target that stores float32
    BoundWeights w = bind_weights(g, src.get(), opt);
    std::size_t checked = 0;
    for (ir::TensorId id : g.weights) {
      const std::string& key = g.tensor(id).weight_key;
      if (!w.tensors.count(id)) continue;
      // The fixture has no lm_head (tied): its value is embed_tokens'. Its inv_freq is HF's, in bf16
      // (the IR's dtype), and stays those bf16 values when loaded as f32.
      const std::string want = key == "model.lm_head.weight" ? "model.model.embed_tokens.weight" : key;
      EXPECT_TRUE(same_bytes(w.tensors.at(id), full.tensor(want).to(load_as.value_or(g.tensor(id).dtype)))) << key;
      ++checked;
    }
    // The export reads the tied pair through lm_head's placeholder: embed_tokens (and the unused
    // original_inv_freq) are listed but not bound.
    EXPECT_EQ(checked + w.unused.size(), g.weights.size());
    EXPECT_EQ(checked, 27u);
    EXPECT_TRUE(has_note(w.notes, "tied: model.lm_head.weight uses model.model.embed_tokens.weight"));
  }
  // Zero copy: two loads of one weight are views of the same mapped bytes.
  EXPECT_EQ(src->load("model.model.norm.weight").raw(), src->load("model.model.norm.weight").raw());
}

TEST(HfCheckpoint, SingleFileFloat32CheckpointIsCastWithANote) {
  test::TempDir d;
  HfDirOptions o;
  o.shards = 1, o.dtype = DType::f32;
  make_hf_dir(d.path().string(), o);
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  auto src = open_weights(d.path().string(), &g);
  BoundWeights w = bind_weights(g, src.get());
  EXPECT_TRUE(has_note(w.notes, "weights float32 -> bfloat16")) << (w.notes.empty() ? "" : w.notes.back());
  SafetensorsFile full = SafetensorsFile::open(data(std::string(prefill) + "/weights.safetensors"));
  const ir::TensorId q = *g.find("p_model_model_layers_0_self_attn_q_proj_weight");
  EXPECT_TRUE(same_bytes(w.tensors.at(q), full.tensor("model.model.layers.0.self_attn.q_proj.weight")));
}

TEST(HfCheckpoint, CaseOpenTakesAModelDirectory) {
  test::TempDir d;
  make_hf_dir(d.path().string());
  runtime::ModelDir c = runtime::ModelDir::open(data(prefill), d.path().string());
  ASSERT_NE(dynamic_cast<HfCheckpointSource*>(c.weights.get()), nullptr);
  BoundWeights w = c.bind();
  EXPECT_EQ(w.tensors.size() + w.unused.size(), c.graph.weights.size());
  EXPECT_NE(dynamic_cast<SafetensorsSource*>(runtime::ModelDir::open(data(prefill)).weights.get()), nullptr);
  EXPECT_NE(dynamic_cast<SynthSource*>(runtime::ModelDir::open(data(prefill), "synth").weights.get()), nullptr);
}

TEST(HfCheckpoint, DefaultRopeMatchesTheFormulaAndTheFixture) {
  nlohmann::json cfg = {{"hidden_size", 128}, {"num_attention_heads", 4}, {"rope_theta", 1e6}};
  RopeParams p = rope_params(cfg, "config.json");
  EXPECT_EQ(p.dim, 32);
  Tensor inv = rope_inv_freq(p);
  ASSERT_EQ(inv.shape(), Shape{16});
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(inv.data<float>()[i], 1.0 / std::pow(1e6, 2.0 * i / 32), 2e-7 * std::pow(1e6, -2.0 * i / 32)) << i;
  // The fixture's buffer (synth.json literal, HF's own values in bf16).
  SynthManifest m = SynthManifest::read(data(std::string(prefill) + "/synth.json"));
  EXPECT_TRUE(same_bytes(inv.to(DType::bf16), m.generate("model.model.rotary_emb.inv_freq")));
  // head_dim and partial_rotary_factor from the config; rope_theta defaults to 10000.
  p = rope_params({{"hidden_size", 128}, {"num_attention_heads", 4}, {"head_dim", 64}, {"partial_rotary_factor", 0.5}}, "c.json");
  EXPECT_EQ(p.dim, 32);
  EXPECT_EQ(p.theta, 10000.0);
}

TEST(HfCheckpoint, LinearAndLlama3ScalingMatchTheFormulaInDouble) {
  nlohmann::json lin = {{"hidden_size", 4096}, {"num_attention_heads", 32}, {"rope_theta", 10000.0},
                        {"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}};
  Tensor l = rope_inv_freq(rope_params(lin, "c.json"));
  ASSERT_EQ(l.shape(), Shape{64});
  for (int i = 0; i < 64; ++i) {
    const double want = 1.0 / std::pow(1e4, 2.0 * i / 128) / 4;
    EXPECT_NEAR(l.data<float>()[i], want, 1e-6 * want) << i;
  }
  // Llama 3.1's values, in both config layouts (transformers v4 rope_scaling, v5 rope_parameters).
  const nlohmann::json scaling = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 8192}};
  nlohmann::json v4 = {{"hidden_size", 4096}, {"num_attention_heads", 32}, {"rope_theta", 500000.0}, {"rope_scaling", scaling}};
  nlohmann::json params = scaling;
  params["rope_theta"] = 500000.0;
  nlohmann::json v5 = {{"hidden_size", 4096}, {"num_attention_heads", 32}, {"rope_parameters", params}};
  const std::vector<double> want = llama3_double(500000.0, 128, 8, 1, 4, 8192);
  int bands[3] = {0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    const double wl = 2 * std::numbers::pi * std::pow(500000.0, 2.0 * i / 128);
    ++bands[wl < 2048 ? 0 : wl > 8192 ? 2 : 1];
  }
  for (int b : bands) EXPECT_GT(b, 0);  // every branch of the rule is exercised
  for (const nlohmann::json& cfg : {v4, v5}) {
    Tensor t = rope_inv_freq(rope_params(cfg, "c.json"));
    ASSERT_EQ(t.shape(), Shape{64});
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(t.data<float>()[i], want[i], 1e-6 * want[i]) << i;
  }
}

TEST(HfCheckpoint, Llama3ScalingReachesTheBoundBuffer) {
  test::TempDir d;
  HfDirOptions o;
  o.config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 8192}};
  make_hf_dir(d.path().string(), o);
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  auto src = open_weights(d.path().string(), &g);
  BoundWeights w = bind_weights(g, src.get());
  Tensor inv = w.tensors.at(*g.find("b_model_model_rotary_emb_inv_freq")).to(DType::f32);
  const std::vector<double> want = llama3_double(1e6, 32, 8, 1, 4, 8192);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(inv.data<float>()[i], want[i], want[i] / 128) << i;  // bf16 buffer
  EXPECT_LT(inv.data<float>()[15], 1.0 / std::pow(1e6, 30.0 / 32) / 4);  // the low-frequency end is divided by 8
}

TEST(HfCheckpointErrors, UnsupportedRopeTypeIsNamed) {
  nlohmann::json yarn = {{"hidden_size", 128}, {"num_attention_heads", 4}, {"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}}};
  NPUSIM_EXPECT_ERROR(rope_params(yarn, "c.json"), "rope type 'yarn' is not supported", "c.json");
  nlohmann::json dynamic = {{"hidden_size", 128}, {"num_attention_heads", 4}, {"rope_parameters", {{"rope_type", "dynamic"}, {"rope_theta", 1e4}}}};
  NPUSIM_EXPECT_ERROR(rope_params(dynamic, "c.json"), "rope type 'dynamic' is not supported");
  nlohmann::json partial = {{"hidden_size", 128}, {"num_attention_heads", 4}, {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}};
  NPUSIM_EXPECT_ERROR(rope_params(partial, "c.json"), "no \"low_freq_factor\"");
  // A head_dim that disagrees with the IR's inv_freq length.
  test::TempDir d;
  HfDirOptions o;
  o.config["head_dim"] = 64;
  make_hf_dir(d.path().string(), o);
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  NPUSIM_EXPECT_ERROR(open_weights(d.path().string(), &g), "rotary inv_freq length from config.json differs from the IR", "[16]", "[32]");
}

TEST(HfCheckpointErrors, EveryMissingWeightInOneError) {
  test::TempDir d;
  HfDirOptions o;
  o.drop = {"model.layers.1.mlp.gate_proj.weight", "model.layers.1.mlp.up_proj.weight", "model.layers.1.mlp.down_proj.weight", "model.norm.weight"};
  make_hf_dir(d.path().string(), o);
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  NPUSIM_EXPECT_ERROR(open_weights(d.path().string(), &g), "4 weights missing", "model.model.layers.1.mlp.gate_proj.weight",
                      "model.model.layers.1.mlp.up_proj.weight", "model.model.layers.1.mlp.down_proj.weight", "model.model.norm.weight",
                      "IR key = 'model.' + checkpoint name");
  // bind_weights collects them too, for any source; a long list is cut after 20 names.
  std::vector<std::pair<std::string, Tensor>> few{{"model.model.norm.weight", Tensor::zeros(DType::bf16, {128})}};
  write_safetensors(d.file("few.safetensors"), few);
  SafetensorsSource s(d.file("few.safetensors"));
  NPUSIM_EXPECT_ERROR(bind_weights(g, &s), "26 weights missing", "model.model.rotary_emb.inv_freq", "model.lm_head.weight", "(6 more)", "few.safetensors");
}

TEST(HfCheckpoint, UnusedCheckpointTensorsAreNotedAndATiedLmHeadIsIgnored) {
  test::TempDir d;
  HfDirOptions o;
  o.shards = 1;
  o.extra = {{"lm_head.weight", Tensor::zeros(DType::bf16, {1024, 128})}, {"model.layers.0.self_attn.rotary_emb.inv_freq", Tensor::zeros(DType::f32, {16})}};
  make_hf_dir(d.path().string(), o);
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  auto src = open_weights(d.path().string(), &g);
  EXPECT_TRUE(has_note(src->notes(), "tie_word_embeddings: checkpoint tensor lm_head.weight ignored"));
  EXPECT_TRUE(has_note(src->notes(), "unused: 2 checkpoint tensor(s)"));
  BoundWeights w = bind_weights(g, src.get());
  SafetensorsFile full = SafetensorsFile::open(data(std::string(prefill) + "/weights.safetensors"));
  EXPECT_TRUE(same_bytes(w.tensors.at(*g.find("p_model_lm_head_weight")), full.tensor("model.model.embed_tokens.weight")));
  // Untied: the stored lm_head is the one used.
  o.config["tie_word_embeddings"] = false;
  test::TempDir u;
  make_hf_dir(u.path().string(), o);
  auto untied = open_weights(u.path().string(), &g);
  Tensor lm = bind_weights(g, untied.get()).tensors.at(*g.find("p_model_lm_head_weight"));
  EXPECT_EQ(lm.to(DType::f32).data<float>()[5], 0.0f);
}

TEST(HfCheckpoint, ACheckpointWithAPrefixTheIrLacks) {
  // IR keys `model.model...`, checkpoint names `outer.model.model...`: name = prefix + IR key.
  test::TempDir d;
  SafetensorsFile full = SafetensorsFile::open(data(std::string(prefill) + "/weights.safetensors"));
  std::vector<std::pair<std::string, Tensor>> t;
  for (const auto& e : full.entries()) t.emplace_back("outer." + e.name, full.tensor(e));
  write_safetensors(d.file("model.safetensors"), t);
  test::write_text(d.file("config.json"), R"({"hidden_size": 128, "num_attention_heads": 4, "rope_theta": 1e6})");
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  auto src = open_weights(d.path().string(), &g);
  EXPECT_EQ(src->naming_rule().find("checkpoint name = 'outer.' + IR key") != std::string::npos, true) << src->naming_rule();
  EXPECT_NO_THROW(bind_weights(g, src.get()));
}

TEST(HfCheckpointErrors, BadIndex) {
  ir::Graph g = ir::read_ir_file(data(std::string(prefill) + "/ir.json"));
  auto edit_index = [](const test::TempDir& d, const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json idx = nlohmann::json::parse(test::read_text(d.file("model.safetensors.index.json")));
    f(idx);
    test::write_text(d.file("model.safetensors.index.json"), idx.dump());
  };
  {  // a shard the index names is not there
    test::TempDir d;
    make_hf_dir(d.path().string());
    std::filesystem::remove(d.file("model-00002-of-00002.safetensors"));
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "shard named by the index is missing", "model-00002-of-00002.safetensors");
  }
  {  // a path out of the directory
    test::TempDir d;
    make_hf_dir(d.path().string());
    edit_index(d, [](nlohmann::json& i) { i["weight_map"]["model.norm.weight"] = "../model-00002-of-00002.safetensors"; });
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "file name in the model directory", "tensor 'model.norm.weight'", "../");
  }
  {  // one name twice in the index, for two shards
    test::TempDir d;
    make_hf_dir(d.path().string());
    std::string text = test::read_text(d.file("model.safetensors.index.json"));
    const std::string entry = "\"weight_map\": {";
    ASSERT_NE(text.find(entry), std::string::npos);
    text.insert(text.find(entry) + entry.size(), "\"model.norm.weight\": \"model-00001-of-00002.safetensors\",");
    test::write_text(d.file("model.safetensors.index.json"), text);
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "key 'model.norm.weight' appears twice");
  }
  {  // one tensor stored in two shards
    test::TempDir d;
    make_hf_dir(d.path().string());
    SafetensorsFile s2 = SafetensorsFile::open(d.file("model-00002-of-00002.safetensors"));
    std::vector<std::pair<std::string, Tensor>> t{{"model.embed_tokens.weight", Tensor::zeros(DType::bf16, {1024, 128})}};
    for (const auto& e : s2.entries()) t.emplace_back(e.name, s2.tensor(e));
    write_safetensors(d.file("model-00002-of-00002.safetensors"), t);
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "stored in two shards", "model.embed_tokens.weight");
  }
  {  // the index names the wrong shard, or a tensor no shard holds
    test::TempDir d;
    make_hf_dir(d.path().string());
    edit_index(d, [](nlohmann::json& i) { i["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"; });
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "index names another shard", "model.norm.weight");
    edit_index(d, [](nlohmann::json& i) {
      i["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors";
      i["weight_map"]["model.extra.weight"] = "model-00002-of-00002.safetensors";
    });
    NPUSIM_EXPECT_ERROR(HfCheckpointSource(d.path().string()), "index lists a tensor its shard does not hold", "model.extra.weight");
  }
}

TEST(HfCheckpointErrors, DirectoriesWithoutSafetensors) {
  test::TempDir d;
  test::write_text(d.file("config.json"), R"({"hidden_size": 128})");
  NPUSIM_EXPECT_ERROR(open_weights(d.path().string()), "no weights in the model directory", "model.safetensors.index.json");
  test::write_text(d.file("pytorch_model.bin"), "pickle");
  NPUSIM_EXPECT_ERROR(open_weights(d.path().string()), "pytorch_model.bin", "safetensors only", "safe_serialization=True");
  test::TempDir e;
  NPUSIM_EXPECT_ERROR(open_weights(e.path().string()), "must be a Hugging Face model directory", "config.json");
  NPUSIM_EXPECT_ERROR(open_weights(e.file("absent.safetensors")), "no such weights file or directory");
}
