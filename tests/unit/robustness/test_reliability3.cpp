// Reliability 3 (issue 39), classes 4, 5 and 8 in the library: numbers checked in the range the
// quantity can have and in the type they are used in (rotary frequencies in float32), weights of
// the wrong kind of dtype refused as inputs are, forced fallbacks that name nothing, and messages
// that name the field, file and what is wrong (tokenizer.json fields of the wrong type, a claimed
// vocabulary far beyond its entries, a wrong-shaped embedding behind a tied lm_head).
// docs/robustness.md, "Reliability 3".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "../../common/test_util.hpp"
#include "npusim/core/range.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/partition/support.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/text/tokenizer.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/weights/rope.hpp"
#include "npusim/weights/safetensors.hpp"

using namespace npusim;

namespace {

ir::json config(ir::json rope) {
  return {{"hidden_size", 128}, {"num_attention_heads", 4}, {"rope_parameters", std::move(rope)}};
}

TEST(Reliability3, NumberRangeSaysWhatIsWrong) {
  constexpr NumberRange r{1, 10000, false, false, "MHz"};
  EXPECT_EQ(r.describe(), "a number in [1, 10000] MHz");
  EXPECT_EQ(r.why(-1), "must be positive");
  EXPECT_EQ(r.why(0.5), "is too small (below the plausible range)");
  EXPECT_EQ(r.why(1e30), "is too large (above the plausible range)");
  EXPECT_EQ(r.why(NAN), "is not a finite number");
  EXPECT_FALSE(r.contains(INFINITY));
  constexpr NumberRange i{1, 64, false, true, ""};
  EXPECT_FALSE(i.contains(16.5));
  EXPECT_EQ(i.why(16.5), "must be a whole number");
  NPUSIM_EXPECT_ERROR(check_range(16.5, i, "head_dim", {.file = "c.json"}), "c.json", "head_dim must be a whole number", "an integer in [1, 64]", "found 16.5");
}

TEST(Reliability3, RopeFiguresOutsideTheirRangeAreRefusedByName) {
  // Each of these was accepted and gave NaN logits, or a silent identity rotation.
  const std::pair<ir::json, const char*> cases[] = {
      {{{"rope_type", "default"}, {"rope_theta", 1e-45}}, "rope_theta is too small"},
      {{{"rope_type", "default"}, {"rope_theta", 1e-300}}, "rope_theta is too small"},
      {{{"rope_type", "default"}, {"rope_theta", 1e308}}, "rope_theta is too large"},
      {{{"rope_type", "default"}, {"rope_theta", -5}}, "rope_theta must be positive"},
      {{{"rope_type", "linear"}, {"rope_theta", 1e4}, {"factor", 1e300}}, "factor is too large"},
      {{{"rope_type", "linear"}, {"rope_theta", 1e4}, {"factor", 1e-300}}, "factor is too small"},
      {{{"rope_type", "linear"}, {"rope_theta", 1e4}, {"factor", 0}}, "factor must be positive"},
      {{{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8}, {"low_freq_factor", 1}, {"high_freq_factor", 4}, {"original_max_position_embeddings", 0}},
       "original_max_position_embeddings must be positive"},
      {{{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8}, {"low_freq_factor", 1}, {"high_freq_factor", 4}, {"original_max_position_embeddings", -8192}},
       "original_max_position_embeddings must be positive"},
      {{{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8}, {"low_freq_factor", 1}, {"high_freq_factor", 4}, {"original_max_position_embeddings", 8192.5}},
       "original_max_position_embeddings must be a whole number"},
      {{{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", -8}, {"low_freq_factor", 1}, {"high_freq_factor", 4}, {"original_max_position_embeddings", 8192}},
       "factor must be positive"},
      {{{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8}, {"low_freq_factor", -1}, {"high_freq_factor", 4}, {"original_max_position_embeddings", 8192}},
       "low_freq_factor must be positive"},
  };
  for (const auto& [rope, msg] : cases) {
    SCOPED_TRACE(rope.dump());
    NPUSIM_EXPECT_ERROR(weights::rope_params(config(rope), "cfg.json"), "cfg.json", msg, "expected a");
  }
  ir::json c = config({{"rope_type", "default"}, {"rope_theta", 1e4}});
  c["head_dim"] = 16.5;
  NPUSIM_EXPECT_ERROR(weights::rope_params(c, "cfg.json"), "head_dim must be a whole number", "found 16.5");
  c.erase("head_dim");
  c["num_attention_heads"] = 0;
  NPUSIM_EXPECT_ERROR(weights::rope_params(c, "cfg.json"), "num_attention_heads must be positive");
  c["num_attention_heads"] = 4, c["partial_rotary_factor"] = 1.5;
  NPUSIM_EXPECT_ERROR(weights::rope_params(c, "cfg.json"), "partial_rotary_factor is too large");
  // Wide but real figures still pass: rope_theta 1e30 at head_dim 128, a llama3 scaling.
  EXPECT_NO_THROW(weights::rope_params(config({{"rope_type", "default"}, {"rope_theta", 1e30}}), "cfg.json"));
  EXPECT_NO_THROW(weights::rope_params(config({{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8}, {"low_freq_factor", 1},
                                               {"high_freq_factor", 4}, {"original_max_position_embeddings", 8192}}), "cfg.json"));
}

TEST(Reliability3, RotaryFrequenciesAreCheckedInFloat32) {
  // Past the double-range check (as a caller building RopeParams itself could be): the float32
  // frequencies must be finite and positive.
  weights::RopeParams p;
  p.dim = 32;
  for (double theta : {1e-45, 1e-300, 1e308}) {
    p.theta = theta;
    SCOPED_TRACE(theta);
    NPUSIM_EXPECT_ERROR(weights::rope_inv_freq(p), "not a positive finite float32", "inv_freq[");
  }
  p.theta = 1e4, p.type = "linear", p.factor = 1e300;
  NPUSIM_EXPECT_ERROR(weights::rope_inv_freq(p), "not a positive finite float32");
  p.factor = 2;
  const Tensor ok = weights::rope_inv_freq(p);
  for (float v : ok.span<float>()) EXPECT_TRUE(std::isfinite(v) && v > 0);
}

TEST(Reliability3, WeightsOfAnotherKindOfDtypeAreRefusedAsInputsAre) {
  test::TempDir d;
  ir::Graph g = ir::read_ir_file(test::data("ops/linear_nobias/ir.json"));
  for (DType dt : {DType::i32, DType::i64, DType::boolean, DType::u8}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    weights::write_safetensors(d.file("w.safetensors"), {{"weight", Tensor::zeros(dt, {200, 96})}});
    weights::SafetensorsSource src(d.file("w.safetensors"));
    weights::BindOptions o;
    o.allow_cast = true;  // even where casting is allowed: a float weight takes floats only
    const std::string found = "found " + std::string(dtype_name(dt));
    NPUSIM_EXPECT_ERROR(weights::bind_weights(g, &src, o), "w.safetensors", "tensor 'weight'", "wrong kind of dtype", "expected float32", found.c_str());
  }
  // Another float type is a cast, where allowed; else the message names what to do.
  weights::write_safetensors(d.file("h.safetensors"), {{"weight", Tensor::zeros(DType::f16, {200, 96})}});
  weights::SafetensorsSource h(d.file("h.safetensors"));
  NPUSIM_EXPECT_ERROR(weights::bind_weights(g, &h), "weight dtype differs from the IR", "Hugging Face model directory");
}

TEST(Reliability3, ForcedFallbacksMustNameOpsAndNodes) {
  for (const char* spec : {"node:nope,,", ",relu", "relu, ,add", "node:"})
    NPUSIM_EXPECT_ERROR(partition::ForceFallback::parse(spec, "NPUSIM_FORCE_FALLBACK"), "NPUSIM_FORCE_FALLBACK: ", spec);
  NPUSIM_EXPECT_ERROR(partition::ForceFallback::parse("max_pool2d,frobnicate"), "--force-fallback: 'frobnicate' names no op", "npusim ops");
  const auto f = partition::ForceFallback::parse(" max_pool2d , aten.relu.default,node:linear ");
  EXPECT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.nodes.count("linear"), 1u);
  EXPECT_TRUE(partition::ForceFallback::parse("").empty());
  ir::Graph g = ir::read_ir_file(test::data("ops/relu/ir.json"));
  NPUSIM_EXPECT_ERROR(partition::ForceFallback::parse("node:nope").check_nodes(g), "relu/ir.json", "--force-fallback names a node the model does not have",
                      "found node:nope");
}

TEST(Reliability3, ThreadCountFromTheEnvironmentMustBeANumber) {
  const char* old = std::getenv("NPUSIM_THREADS");
  const std::string saved = old ? old : "";
  for (const char* bad : {"abc", "4x", "", "-2", "0", "99999", "1e3", " 4"}) {
    ::setenv("NPUSIM_THREADS", bad, 1);
    SCOPED_TRACE(bad);
    NPUSIM_EXPECT_ERROR(cpu::threads_from_env(), "NPUSIM_THREADS must be a number of worker threads", "an integer in [1, 4096]");
  }
  ::setenv("NPUSIM_THREADS", "3", 1);
  EXPECT_EQ(cpu::threads_from_env(), 3);
  if (old) ::setenv("NPUSIM_THREADS", saved.c_str(), 1);
  else ::unsetenv("NPUSIM_THREADS");
}

// A minimal byte-level BPE tokenizer.json, for one field at a time to break.
ir::json tokenizer() {
  return {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", ir::json::array()}}},
          {"added_tokens", {{{"id", 2}, {"content", "<eos>"}, {"special", true}}}}};
}

TEST(Reliability3, TokenizerFieldsOfTheWrongTypeAreParseErrorsNamingTheField) {
  // Each was nlohmann's type_error: "npusim internal error".
  const std::pair<std::function<void(ir::json&)>, const char*> cases[] = {
      {[](ir::json& j) { j["added_tokens"][0]["special"] = "yes"; }, "added token '<eos>'.special must be true or false"},
      {[](ir::json& j) { j["added_tokens"][0]["lstrip"] = 1; }, ".lstrip must be true or false"},
      {[](ir::json& j) { j["added_tokens"][0]["rstrip"] = "no"; }, ".rstrip must be true or false"},
      {[](ir::json& j) { j["added_tokens"][0]["normalized"] = ir::json::array(); }, ".normalized must be true or false"},
      {[](ir::json& j) { j["added_tokens"][0]["single_word"] = 0; }, ".single_word must be true or false"},
      {[](ir::json& j) { j["model"]["byte_fallback"] = 3; }, "model.byte_fallback must be true or false"},
      {[](ir::json& j) { j["model"]["fuse_unk"] = "x"; }, "model.fuse_unk must be true or false"},
      {[](ir::json& j) { j["model"]["ignore_merges"] = 2.5; }, "model.ignore_merges must be true or false"},
      {[](ir::json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", "no"}}; }, "ByteLevel pre_tokenizer.add_prefix_space"},
      {[](ir::json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"use_regex", 1}}; }, "ByteLevel pre_tokenizer.use_regex"},
      {[](ir::json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", 3}}; }, "Split pre_tokenizer.behavior must be a string"},
      {[](ir::json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"invert", "x"}}; }, "Split pre_tokenizer.invert"},
      // Ids: negative, or far beyond the entries (a tiny file claiming 2^31 ids was "out of memory").
      {[](ir::json& j) { j["added_tokens"][0]["id"] = -3; }, "added token '<eos>': id out of range"},
      {[](ir::json& j) { j["model"]["vocab"]["b"] = 2147483000; }, "vocabulary id out of range (the vocabulary has 2 entries"},
  };
  for (const auto& [edit, msg] : cases) {
    ir::json j = tokenizer();
    edit(j);
    SCOPED_TRACE(j.dump());
    NPUSIM_EXPECT_ERROR(text::Tokenizer::from_json_string(j.dump(), "tok.json"), "npusim parse error: tok.json: ", msg);
  }
  EXPECT_NO_THROW(text::Tokenizer::from_json_string(tokenizer().dump(), "tok.json"));
}

TEST(Reliability3, TiedLmHeadOverAWrongShapedEmbeddingNamesTheEmbedding) {
  test::TempDir d;
  weights::write_safetensors(d.file("w.safetensors"), {{"model.embed_tokens.weight", Tensor::zeros(DType::f32, {9, 4})}});
  weights::SafetensorsSource src(d.file("w.safetensors"));
  NPUSIM_EXPECT_ERROR(weights::detail::refuse_tie_of_wrong_shape("lm_head.weight", {10, 4}, src, weights::BindOptions{}.ties, "linear"),
                      "tensor 'model.embed_tokens.weight'", "'lm_head.weight' is absent and tied", "expected [10, 4], found [9, 4]");
  EXPECT_NO_THROW(weights::detail::refuse_tie_of_wrong_shape("lm_head.weight", {9, 4}, src, weights::BindOptions{}.ties, "linear"));
}

}  // namespace
