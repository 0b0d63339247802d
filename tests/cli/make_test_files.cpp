// Makes the files the command-line tests of users' own models read, from the bundled fixtures:
//   OUT/hf_qwen2_tiny/   the tiny Qwen2 as a Hugging Face model directory: config.json, two
//                        safetensors shards under HF's names (no `model.` wrapper prefix, no
//                        lm_head: tied to embed_tokens, no rotary inv_freq: from rope_theta) and
//                        model.safetensors.index.json; tokenizer.json and tokenizer_config.json
//                        of tests/data/text_gen
//   OUT/resnet18_bare/   ResNet-18 as a user's export without reference values: ir.json and
//                        synth.json only
//   OUT/image.png        a 96 x 80 RGB picture (a colour gradient with a disc)
//   OUT/relu_nan.npy     expected outputs of ops/relu that are all NaN (a check that must fail)
//   OUT/huge_ir.json     a relu over a [2^62, 1] float32 tensor: 2^64 bytes (compile must refuse it)
//   OUT/unknown_ops.json a chain with two op types npusim has no definition for (one on two nodes)
//   OUT/tiny_decode_*/   copies of qwen2_tiny_decode whose kv_mapping.json is broken one way each
//   OUT/hf_*/            variants of hf_qwen2_tiny (issue 39): float32 shards (the IR is bf16),
//                        an int32 norm weight, an infinite norm weight (NaN logits), rotary
//                        figures out of range, a wrong-shaped embedding, a directory as config.json
//   OUT/npu_*.json       the ideal NPU description with one absurd figure each
//   usage: make_test_files DATA_DIR OUT_DIR
#include <stb/stb_image_write.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <tuple>
#include <filesystem>

#include "npusim/core/file.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/safetensors.hpp"

namespace fs = std::filesystem;
using namespace npusim;

int main(int argc, char** argv) try {
  if (argc != 3) return std::fprintf(stderr, "usage: make_test_files DATA_DIR OUT_DIR\n"), 2;
  const fs::path data = argv[1], out = argv[2];
  fs::create_directories(out);

  // The Hugging Face directory.
  const fs::path prefill = data / "models/qwen2_tiny_prefill", hf = out / "hf_qwen2_tiny";
  fs::remove_all(hf);
  fs::create_directories(hf);
  auto w = weights::SafetensorsFile::open((prefill / "weights.safetensors").string());
  std::vector<std::pair<std::string, Tensor>> shards[2];
  ir::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", ir::json::object()}};
  std::uint64_t total = 0;
  std::size_t i = 0;
  for (const auto& e : w.entries()) {
    if (e.name.find("rotary_emb") != std::string::npos) continue;
    std::string name = e.name.starts_with("model.") ? e.name.substr(6) : e.name;
    const int s = i++ % 2;
    shards[s].emplace_back(name, w.tensor(e));
    index["weight_map"][name] = s == 0 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    total += e.end - e.begin;
  }
  index["metadata"]["total_size"] = total;
  weights::write_safetensors((hf / "model-00001-of-00002.safetensors").string(), shards[0], {{"format", "pt"}});
  weights::write_safetensors((hf / "model-00002-of-00002.safetensors").string(), shards[1], {{"format", "pt"}});
  write_file_atomic((hf / "model.safetensors.index.json").string(), index.dump(2));
  ir::json meta = ir::parse_json(read_file((prefill / "meta.json").string()), "meta.json");
  ir::json config = meta.at("config");
  config["architectures"] = {"Qwen2ForCausalLM"};
  config["model_type"] = "qwen2";
  config["eos_token_id"] = {2, 0};  // the text_gen tokenizer's <|im_end|>, <|endoftext|>
  write_file_atomic((hf / "config.json").string(), config.dump(2));
  // Its tokenizer (no generation_config.json: the stop ids come from config.json).
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(data / "text_gen" / f, hf / f);

  // A user's export of ResNet-18: the IR and its weights, no io.safetensors.
  const fs::path bare = out / "resnet18_bare";
  fs::remove_all(bare);
  fs::create_directories(bare);
  for (const char* f : {"ir.json", "synth.json"}) fs::copy_file(data / "models/resnet18" / f, bare / f);

  // The picture.
  const int W = 96, H = 80;
  std::vector<unsigned char> px(static_cast<std::size_t>(W * H * 3));
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      unsigned char* p = &px[static_cast<std::size_t>((y * W + x) * 3)];
      const bool disc = std::hypot(x - 50.0, y - 38.0) < 22.0;
      p[0] = static_cast<unsigned char>(disc ? 230 : x * 255 / (W - 1));
      p[1] = static_cast<unsigned char>(disc ? 40 : y * 255 / (H - 1));
      p[2] = static_cast<unsigned char>(disc ? 60 : 128);
    }
  if (!stbi_write_png((out / "image.png").c_str(), W, H, 3, px.data(), W * 3)) return std::fprintf(stderr, "cannot write image.png\n"), 1;
  // Hostile files (docs/robustness.md, issue 26).
  Tensor nan = Tensor::empty(DType::f32, {3, 70});
  for (std::int64_t i = 0; i < nan.numel(); ++i) nan.data<float>()[i] = NAN;
  write_npy((out / "relu_nan.npy").string(), nan);
  const std::string huge = R"({"name": "T", "shape": [4611686018427387904, 1], "dtype": "float32"})";
  auto t = [&](const char* name) { return std::string(huge).replace(huge.find('T'), 1, name); };
  write_file_atomic((out / "huge_ir.json").string(), R"({"graph_inputs": [)" + t("x") + R"(], "graph_outputs": [)" + t("relu") +
                                                         R"(], "weights": [], "nodes": [{"name": "relu", "op_type": "aten.relu.default", "inputs": [)" +
                                                         t("x") + R"(], "outputs": [)" + t("relu") + "]}]}");
  // Two op types npusim has no definition for, one of them on two nodes (issue 27: one error lists them all).
  const std::string small = R"({"name": "T", "shape": [3, 70], "dtype": "float32"})";
  auto s = [&](const std::string& name) { return std::string(small).replace(small.find('T'), 1, name); };
  auto node = [&](const std::string& name, const std::string& op, const std::string& in) {
    return R"({"name": ")" + name + R"(", "op_type": ")" + op + R"(", "inputs": [)" + s(in) + R"(], "outputs": [)" + s(name) + "]}";
  };
  write_file_atomic((out / "unknown_ops.json").string(), R"({"graph_inputs": [)" + s("x") + R"(], "graph_outputs": [)" + s("d") +
                                                             R"(], "weights": [], "nodes": [)" + node("a", "aten.frob.default", "x") + ", " +
                                                             node("b", "aten.relu.default", "a") + ", " + node("c", "aten.frob.default", "b") + ", " +
                                                             node("d", "aten.twiddle.default", "c") + "]}");
  const std::string mapping = read_file((data / "models/qwen2_tiny_decode/kv_mapping.json").string());
  for (auto [name, from, to] : {std::tuple{"cache_1e12", "\"max_cache_len\": 64", "\"max_cache_len\": 1000000000000"},
                                std::tuple{"prefill_0", "\"prefill_seq_len\": 16", "\"prefill_seq_len\": 0"},
                                std::tuple{"num_layers_3", "\"num_layers\": 2", "\"num_layers\": 3"},
                                std::tuple{"layer_twice", "\"kv_2\"", "\"kv_0\""}}) {
    const fs::path d = out / (std::string("tiny_decode_") + name);
    fs::remove_all(d);
    fs::create_directories(d);
    for (const char* f : {"ir.json", "meta.json"})
      if (fs::exists(data / "models/qwen2_tiny_decode" / f)) fs::copy_file(data / "models/qwen2_tiny_decode" / f, d / f);
    std::string m = mapping;
    m.replace(m.find(from), std::string_view(from).size(), to);
    write_file_atomic((d / "kv_mapping.json").string(), m);
  }
  // Issue 39: hostile variants of the Hugging Face directory, one change each.
  auto variant = [&](const std::string& name, const std::function<Tensor(const std::string&, Tensor)>& edit, const std::function<void(ir::json&)>& cfg) {
    const fs::path v = out / ("hf_" + name);
    fs::remove_all(v);
    fs::create_directories(v);
    for (const auto& e : fs::directory_iterator(hf))
      if (e.path().extension() != ".safetensors") fs::copy_file(e.path(), v / e.path().filename());
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
      auto f = weights::SafetensorsFile::open((hf / shard).string());
      std::vector<std::pair<std::string, Tensor>> ts;
      for (const auto& e : f.entries()) ts.emplace_back(e.name, edit ? edit(e.name, f.tensor(e)) : f.tensor(e));
      weights::write_safetensors((v / shard).string(), ts, {{"format", "pt"}});
    }
    if (cfg) {
      ir::json c = ir::parse_json(read_file((v / "config.json").string()), "config.json");
      cfg(c);
      write_file_atomic((v / "config.json").string(), c.dump(2));
    }
  };
  variant("f32", [](const std::string&, Tensor t) { return t.to(DType::f32); }, {});
  variant("int_norm", [](const std::string& n, Tensor t) { return n == "model.norm.weight" ? t.to(DType::i32) : t; }, {});
  variant("inf_norm", [](const std::string& n, Tensor t) {
    if (n != "model.norm.weight") return t;
    Tensor f = t.to(DType::f32);
    for (auto& x : f.span<float>()) x = INFINITY;
    return f.to(t.dtype());
  }, {});
  variant("short_embedding", [](const std::string& n, Tensor t) {
    if (n != "model.embed_tokens.weight") return t;
    Tensor f = Tensor::empty(t.dtype(), {t.shape()[0] - 1, t.shape()[1]});
    std::memcpy(f.raw(), t.raw(), f.nbytes());
    return f;
  }, {});
  auto rope = [](ir::json p) { return [p](ir::json& c) { c.erase("rope_theta"), c.erase("rope_scaling"), c["rope_parameters"] = p; }; };
  variant("rope_theta_1e-45", {}, rope({{"rope_type", "default"}, {"rope_theta", 1e-45}}));
  variant("rope_theta_1e308", {}, rope({{"rope_type", "default"}, {"rope_theta", 1e308}}));
  variant("rope_linear_1e300", {}, rope({{"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 1e300}}));
  variant("rope_llama3_zero_length", {}, rope({{"rope_type", "llama3"}, {"rope_theta", 1e6}, {"factor", 8}, {"low_freq_factor", 1},
                                               {"high_freq_factor", 4}, {"original_max_position_embeddings", 0}}));
  variant("head_dim_16_5", {}, [](ir::json& c) { c["head_dim"] = 16.5; });
  {
    const fs::path v = out / "hf_config_is_dir";
    fs::remove_all(v);
    fs::create_directories(v / "config.json");
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"})
      fs::copy_file(hf / shard, v / shard);
  }
  // The ideal NPU description with one absurd (finite) figure each.
  const std::string ideal = read_file((data / "../../data/npu/ideal.json").string());
  for (auto [name, from, to] : {std::tuple{"clock_1e30", "\"clock_mhz\": 1000", "\"clock_mhz\": 1e30"},
                                std::tuple{"bandwidth_1e-300", "\"bandwidth_gb_per_s\": 256", "\"bandwidth_gb_per_s\": 1e-300"},
                                std::tuple{"latency_1e300", "\"latency_ns\": 0", "\"latency_ns\": 1e300"}}) {
    std::string t = ideal;
    if (t.find(from) == std::string::npos) return std::fprintf(stderr, "ideal.json lacks %s\n", from), 1;
    t.replace(t.find(from), std::string_view(from).size(), to);
    write_file_atomic((out / (std::string("npu_") + name + ".json")).string(), t);
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
