// Every PyTorch fixture through the reference target, at the tolerances.
#include "../common/op_fixtures.hpp"
#include "../common/test_util.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/target/reference/interpreter.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

harness::CaseResult run_reference(const runtime::ModelDir& c, bool round_half = false, harness::CheckOptions co = {}) {
  weights::BindOptions bo;
  bo.load_as = DType::f32;
  weights::BoundWeights w = c.bind(bo);
  ref::InterpreterRunner r(c.graph, w.tensors, {.round_half = round_half});
  return harness::check_case(c, r, co);
}

class OpFixture : public ::testing::TestWithParam<std::string> {};
class HalfOpFixture : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(OpFixture, ReferenceMatchesPyTorch) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/" + GetParam()));
  const bool half = harness::graph_is_half(c.graph);
  harness::CaseResult r = run_reference(c);
  ASSERT_FALSE(r.outputs.empty());
  for (const auto& o : r.outputs) {
    SCOPED_TRACE(o.name);
    if (o.exact) {
      EXPECT_EQ(o.metrics.max_abs, 0.0);
    } else {
      double tol = half ? 1e-2 : (harness::longest_reduction(c.graph) > 1024 ? 1e-4 : 1e-5);
      EXPECT_LE(o.metrics.rel_l2, tol);
    }
  }
  EXPECT_TRUE(r.pass);
}

// The same cases with values rounded where the IR stores f16/bf16 (the model's own precision).
TEST_P(HalfOpFixture, ReferenceWithHalfRoundingStaysWithinHalfTolerance) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/" + GetParam()));
  ASSERT_TRUE(harness::graph_is_half(c.graph));
  harness::CaseResult r = run_reference(c, true);
  ASSERT_FALSE(r.outputs.empty());
  for (const auto& o : r.outputs) EXPECT_LE(o.metrics.rel_l2, 1e-2) << o.name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpFixture, ::testing::ValuesIn(test::op_fixtures()), [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(HalfOps, HalfOpFixture, ::testing::ValuesIn(test::op_fixtures(true)), [](const auto& info) { return info.param; });

// The 61 of the shared fixtures and the 33 of issue 40 (tools/op_fixtures/ops40.py, moe40.py).
TEST(OpFixtures, AllNinetyFourArePresent) { EXPECT_EQ(test::op_fixtures().size(), 94u); }

class VisionFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionFixture, Top5IdenticalInOrderAndRelL2Within1e4) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/" + GetParam()));
  harness::CaseResult r = run_reference(c, false, {.tolerance = 1e-4});
  ASSERT_EQ(r.outputs.size(), 1u);
  const auto& o = r.outputs[0];
  EXPECT_LE(o.metrics.rel_l2, 1e-4);
  ASSERT_TRUE(o.classifier);
  EXPECT_EQ(o.top5, o.top5_ref);
  std::vector<std::int64_t> meta_top5 = c.meta()["top5"].get<std::vector<std::int64_t>>();
  EXPECT_EQ(o.top5, meta_top5);
  EXPECT_TRUE(r.pass);
}

INSTANTIATE_TEST_SUITE_P(ResNets, VisionFixture, ::testing::Values("resnet18", "resnet50"));

TEST(QwenTiny, PrefillLogitsAndEightGreedyDecodeTokens) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"));
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  llm::KvMapping map = llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json"));
  std::unordered_map<std::string, Tensor> cache;
  weights::BindOptions bo;
  bo.load_as = DType::f32;
  bo.cache = &cache;
  auto pw = weights::bind_weights(pc.graph, pc.weights.get(), bo);
  auto dw = weights::bind_weights(dc.graph, pc.weights.get(), bo);
  ref::InterpreterRunner prefill(pc.graph, pw.tensors), decode(dc.graph, dw.tensors);
  Tensor ids = pc.io->tensor("input_ids");
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
  Tensor tok = dc.io->tensor("decode_tokens");
  std::vector<std::int64_t> tokens(tok.span<std::int64_t>().begin(), tok.span<std::int64_t>().end());
  llm::LlmPrograms model(prefill, decode, map, pc.graph, dc.graph);
  harness::GenerateCheck r = harness::check_generation(model, prompt, pc.io->tensor("linear_14"), tokens, dc.io->tensor("decode_logits"));
  EXPECT_LE(r.prefill.rel_l2, 1e-4);
  EXPECT_EQ(r.prefill_top1, tokens[0]);
  ASSERT_EQ(r.steps.size(), 8u);
  for (const auto& s : r.steps) {
    EXPECT_LE(s.metrics.rel_l2, 1e-4) << "position " << s.position;
    EXPECT_EQ(s.token, s.token_ref) << "position " << s.position;
  }
  EXPECT_EQ(r.token_matches, 8);

  // Free-running greedy generation reproduces all nine fixture tokens.
  llm::Generation g = llm::generate_greedy(model, prompt, 9);
  EXPECT_EQ(g.tokens, tokens);
}

TEST(QwenTiny, SafetensorsAndSynthWeightsGiveIdenticalLogits) {
  runtime::ModelDir a = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"), "safetensors");
  runtime::ModelDir b = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"), "synth");
  auto ra = run_reference(a), rb = run_reference(b);
  ASSERT_EQ(ra.outputs.size(), 1u);
  EXPECT_EQ(ra.outputs[0].metrics.max_abs, rb.outputs[0].metrics.max_abs);
  EXPECT_EQ(ra.outputs[0].metrics.rel_l2, rb.outputs[0].metrics.rel_l2);
}

// models/qwen2.5_1.5b_decode_c32k's kv_mapping.json names no prefill outputs and no prefill length:
// they come from the prefill graph (logits, then K and V per layer), and agree with what the
// 2048-entry mapping names.
TEST(KvMapping, DecodeOnlyMappingIsCompletedFromThePrefillGraph) {
  const ir::Graph prefill = ir::read_ir_file(data("models/qwen2.5_1.5b_prefill/ir.json"));
  llm::KvMapping c32k = llm::KvMapping::read(data("models/qwen2.5_1.5b_decode_c32k/kv_mapping.json"));
  const llm::KvMapping c2k = llm::KvMapping::read(data("models/qwen2.5_1.5b_decode/kv_mapping.json"));
  EXPECT_EQ(c32k.prefill_seq_len, 0);
  EXPECT_TRUE(c32k.layers.at(0).prefill_key_output.empty());
  c32k.complete(prefill);
  EXPECT_EQ(c32k.prefill_seq_len, 128);
  EXPECT_EQ(c32k.max_cache_len, 32768);
  ASSERT_EQ(c32k.layers.size(), c2k.layers.size());
  for (std::size_t l = 0; l < c2k.layers.size(); ++l) {
    EXPECT_EQ(c32k.layers[l].prefill_key_output, c2k.layers[l].prefill_key_output) << "layer " << l;
    EXPECT_EQ(c32k.layers[l].prefill_value_output, c2k.layers[l].prefill_value_output) << "layer " << l;
  }
  // A prefill graph of another shape is refused, naming what was expected.
  const ir::Graph tiny = ir::read_ir_file(data("models/qwen2_tiny_prefill/ir.json"));
  llm::KvMapping again = llm::KvMapping::read(data("models/qwen2.5_1.5b_decode_c32k/kv_mapping.json"));
  NPUSIM_EXPECT_ERROR(again.complete(tiny), "the KV mapping names no prefill outputs", "expected 57 outputs", "found 5");
}
