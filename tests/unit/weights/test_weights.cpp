#include <nlohmann/json.hpp>

#include "../../common/test_util.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/weights/binding.hpp"

using namespace npusim;
using namespace npusim::weights;
using npusim::test::data;

TEST(Synth, MatchesTheRuleCheckValues) {
  const std::uint64_t h = fnv1a64("layer.weight");
  EXPECT_EQ(synth_unit(h, 0), -0.9796444177627563f);
  EXPECT_EQ(synth_unit(h, 1), -0.7881124019622803f);
  EXPECT_EQ(synth_unit(h, 2), -0.08257567882537842f);
}

// The tiny Qwen2 case ships both a weights file and its synth manifest: regenerating every
// tensor must reproduce the file bit for bit (bf16 rounding included).
TEST(Synth, RegeneratesFixtureWeightsBitExactly) {
  for (const char* c : {"models/qwen2_tiny_prefill", "ops/conv_bn_relu", "ops/conv_bn_relu_fp16", "ops/silu_gate_mlp", "ops/layer_norm"}) {
    SCOPED_TRACE(c);
    SafetensorsFile f = SafetensorsFile::open(data(std::string(c) + "/weights.safetensors"));
    SynthManifest m = SynthManifest::read(data(std::string(c) + "/synth.json"));
    std::size_t compared = 0;
    for (const auto& e : f.entries()) {
      if (!m.contains(e.name)) continue;
      Tensor want = f.tensor(e);
      Tensor got = m.generate(e.name);
      ASSERT_EQ(got.dtype(), want.dtype()) << e.name;
      ASSERT_EQ(got.shape(), want.shape()) << e.name;
      ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << e.name;
      ++compared;
    }
    EXPECT_GT(compared, 0u);
  }
}

TEST(Synth, AliasesShareOneBufferWhenBound) {
  ir::Graph g = ir::read_ir_file(data("models/qwen2_tiny_decode/ir.json"));
  SynthSource src = SynthSource::read(data("models/qwen2_tiny_decode/synth.json"));
  BoundWeights w = bind_weights(g, &src);
  auto lm = *g.find("p_model_lm_head_weight");
  ASSERT_TRUE(w.tensors.count(lm));
  EXPECT_EQ(w.tensors[lm].shape(), (Shape{1024, 128}));
  // embed_tokens is listed in the IR but no node reads it: not loaded.
  EXPECT_NE(std::find(w.unused.begin(), w.unused.end(), "model.model.embed_tokens.weight"), w.unused.end());
}

TEST(Synth, ManifestErrors) {
  NPUSIM_EXPECT_ERROR(SynthManifest::parse(R"({"rule": "other"})", "s.json"), "unknown synthetic-weight rule", "s.json");
  NPUSIM_EXPECT_ERROR(SynthManifest::parse(R"({"rule": "npusim-synth-v1", "aliases": {"a": "b", "b": "a"}})", "s.json"), "alias cycle");
  NPUSIM_EXPECT_ERROR(SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": {"w": {"offset": 0, "scale": 1, "shape": [2], "dtype": "complex64"}}})", "s.json"),
                      "unsupported dtype 'complex64'");
}

TEST(Safetensors, RoundTripsAndViewsWithoutCopying) {
  test::TempDir d;
  std::vector<float> a{1, 2, 3, 4, 5, 6};
  std::vector<std::int64_t> b{7, 8};
  write_safetensors(d.file("t.safetensors"), {{"a", Tensor::from_values<float>({2, 3}, a)}, {"b", Tensor::from_values<std::int64_t>({2}, b)}},
                    {{"format", "pt"}});
  SafetensorsFile f = SafetensorsFile::open(d.file("t.safetensors"));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  Tensor ta = f.tensor("a");
  EXPECT_EQ(ta.shape(), (Shape{2, 3}));
  EXPECT_EQ(ta.data<float>()[5], 6.0f);
  EXPECT_EQ(f.tensor("b").data<std::int64_t>()[1], 8);
  ta.data<float>()[0] = 42;  // copy-on-write mapping: allowed, the file is unchanged
  EXPECT_EQ(SafetensorsFile::open(d.file("t.safetensors")).tensor("a").data<float>()[0], 1.0f);
}

namespace {
std::string header_file(const std::string& header, std::size_t data_bytes) {
  std::string s;
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return s + header + std::string(data_bytes, '\0');
}
}  // namespace

TEST(SafetensorsErrors, TruncatedFile) {
  test::TempDir d;
  std::string good = test::read_text(data("ops/linear_nobias/weights.safetensors"));
  test::write_text(d.file("cut.safetensors"), good.substr(0, good.size() - 100));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("cut.safetensors")), "outside the file", "cut.safetensors", "weight");
  test::write_text(d.file("tiny.safetensors"), "abc");
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("tiny.safetensors")), "too short");
}

TEST(SafetensorsErrors, OffsetsOutsideTheFile) {
  test::TempDir d;
  test::write_text(d.file("o.safetensors"), header_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16000]}})", 16));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("o.safetensors")), "tensor 'w'", "outside the file", "end <= 16");
}

TEST(SafetensorsErrors, HeaderLengthPastEndAndBadJson) {
  test::TempDir d;
  std::string s = header_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  s[0] = static_cast<char>(0x7f);  // header length 127 + ... > file
  test::write_text(d.file("h.safetensors"), s);
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("h.safetensors")), "header length points past the end");
  test::write_text(d.file("j.safetensors"), header_file(R"({"w":{"dtype":)", 4));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("j.safetensors")), "invalid JSON", "j.safetensors");
}

TEST(SafetensorsErrors, SizeMismatchAndUnknownDtype) {
  test::TempDir d;
  test::write_text(d.file("m.safetensors"), header_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("m.safetensors")), "tensor 'w'", "does not match dtype and shape", "12 bytes");
  test::write_text(d.file("u.safetensors"), header_file(R"({"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("u.safetensors")), "unsupported safetensors dtype 'C64'");
  test::write_text(d.file("t.safetensors"), header_file(R"({"w":{"dtype":"F32","shape":[1099511627776, 1024],"data_offsets":[0,8]}})", 8));
  NPUSIM_EXPECT_ERROR(SafetensorsFile::open(d.file("t.safetensors")), "does not match dtype and shape");
}

TEST(BindingErrors, MissingWeight) {
  test::TempDir d;
  ir::Graph g = ir::read_ir_file(data("ops/linear_nobias/ir.json"));
  write_safetensors(d.file("w.safetensors"), {{"other", Tensor::zeros(DType::f32, {1})}});
  SafetensorsSource src(d.file("w.safetensors"));
  NPUSIM_EXPECT_ERROR(bind_weights(g, &src), "weight missing", "tensor 'weight'", "node 'linear'", "w.safetensors");
}

TEST(BindingErrors, ShapeAndDtypeMismatchWithTheIr) {
  test::TempDir d;
  ir::Graph g = ir::read_ir_file(data("ops/linear_nobias/ir.json"));
  write_safetensors(d.file("s.safetensors"), {{"weight", Tensor::zeros(DType::f32, {200, 95})}});
  SafetensorsSource s(d.file("s.safetensors"));
  NPUSIM_EXPECT_ERROR(bind_weights(g, &s), "shape differs from the IR", "[200, 96]", "[200, 95]", "node 'linear'");
  write_safetensors(d.file("t.safetensors"), {{"weight", Tensor::zeros(DType::f16, {200, 96})}});
  SafetensorsSource t(d.file("t.safetensors"));
  NPUSIM_EXPECT_ERROR(bind_weights(g, &t), "dtype differs from the IR", "expected float32, found float16");
  BindOptions cast;
  cast.allow_cast = true;
  BoundWeights w = bind_weights(g, &t, cast);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("cast: weight float16 -> float32"), std::string::npos);
}

TEST(Binding, TiedEmbeddingsAndRecomputedRotaryBuffer) {
  // An HF-style checkpoint: no lm_head (tied to embed_tokens), no rotary inv_freq.
  test::TempDir d;
  ir::Graph g = ir::read_ir_file(data("models/qwen2_tiny_decode/ir.json"));
  SafetensorsFile full = SafetensorsFile::open(data("models/qwen2_tiny_prefill/weights.safetensors"));
  std::vector<std::pair<std::string, Tensor>> keep;
  for (const auto& e : full.entries())
    if (e.name.find("rotary_emb") == std::string::npos) keep.emplace_back(e.name, full.tensor(e));
  write_safetensors(d.file("hf.safetensors"), keep);
  SafetensorsSource src(d.file("hf.safetensors"));
  NPUSIM_EXPECT_ERROR(bind_weights(g, &src), "rotary buffer", "rope_theta", "model.model.rotary_emb.inv_freq");
  BindOptions o;
  o.rope_theta = 1e6;
  BoundWeights w = bind_weights(g, &src, o);
  Tensor inv = w.tensors.at(*g.find("b_model_model_rotary_emb_inv_freq"));
  Tensor want = full.tensor("model.model.rotary_emb.inv_freq");
  ASSERT_EQ(inv.dtype(), DType::bf16);
  EXPECT_EQ(std::memcmp(inv.raw(), want.raw(), want.nbytes()), 0);  // same bf16 values as HF's
  bool tied = false;
  for (const auto& n : w.notes) tied = tied || n.find("tied: model.lm_head.weight uses model.model.embed_tokens.weight") != std::string::npos;
  EXPECT_TRUE(tied);
}
