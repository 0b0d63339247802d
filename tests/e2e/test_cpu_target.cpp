// The CPU target on every fixture, at float32 and at the model's half type, with the issue's
// tolerances; and the same fixtures with one op type forced onto the reference fallback.
#include "../common/compile_util.hpp"
#include "../common/op_fixtures.hpp"
#include "../common/test_util.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/cpu.hpp"
#include "npusim/target/cpu/layout.hpp"
#include "npusim/target/cpu/parallel.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

program::CompiledProgram compile_cpu(const ir::Graph& g, DType dt, const std::string& force = {}) {
  program::CompileOptions o;
  o.compute = dt;
  o.evaluator = evaluator_for<CpuTarget>();
  o.verify = true;
  o.force = partition::ForceFallback::parse(force);
  return program::compile(g, describe_target<CpuTarget>(), o);
}

harness::CaseResult run_cpu(const runtime::ModelDir& c, DType dt, harness::CheckOptions co, const std::string& force = {}) {
  auto runner = runner_for<CpuTarget>::make(compile_cpu(c.graph, dt, force), c.weights.get());
  co.half_compute = is_half(dt);
  return harness::check_case(c, *runner, co);
}

DType half_of(const ir::Graph& g) {
  for (const auto& t : g.tensors)
    if (is_half(t.dtype)) return t.dtype;
  return DType::f16;
}

class CpuOps : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(CpuOps, Float32WithinOneInTenThousand) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/" + GetParam()));
  const bool half_model = harness::graph_is_half(c.graph);
  auto r = run_cpu(c, DType::f32, {.tolerance = half_model ? 1e-2 : 1e-4});
  for (const auto& o : r.outputs) EXPECT_TRUE(o.pass) << o.name << " rel_l2 " << o.metrics.rel_l2;
  EXPECT_TRUE(r.pass);
}

TEST_P(CpuOps, HalfTypeWithinHalfTolerance) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/" + GetParam()));
  if (!harness::graph_is_half(c.graph)) GTEST_SKIP() << "float32 model";
  auto r = run_cpu(c, half_of(c.graph), {.tolerance = 1e-2});
  EXPECT_TRUE(r.pass);
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuOps, ::testing::ValuesIn(test::op_fixtures()), [](const auto& info) { return info.param; });

// bf16 compute on the float32 convolution fixtures (AMX tiles where the CPU has them): storage
// rounding only, about 3e-3 relative.
TEST(CpuOps, ConvolutionCasesAtBf16) {
  for (const char* name : {"conv2d_1x1", "conv2d_3x3_bias", "conv2d_3x3_s2_nobias", "conv2d_7x7_s2_p3", "conv_bn_relu", "conv_dilated", "grouped_conv"}) {
    SCOPED_TRACE(name);
    runtime::ModelDir c = runtime::ModelDir::open(data(std::string("ops/") + name));
    auto r = run_cpu(c, DType::bf16, {.tolerance = 1e-2});
    for (const auto& o : r.outputs) EXPECT_TRUE(o.pass) << o.name << " rel_l2 " << o.metrics.rel_l2;
  }
}

// A linear whose bias is computed at run time (swin v2's qkv bias, a slice of it zeroed): the CPU
// runs every node itself, reading the bias before each product, at f32 and at both half types.
TEST(CpuOps, LinearWithAComputedBiasRunsOnTheCpu) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/zero_bias"));
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const program::CompiledProgram p = compile_cpu(c.graph, dt);
    ASSERT_EQ(p.partitions.size(), 1u);
    EXPECT_EQ(p.partitions[0].target, "cpu");
    auto r = run_cpu(c, dt, {.tolerance = dt == DType::f32 ? 1e-4 : 1e-2});
    for (const auto& o : r.outputs) EXPECT_TRUE(o.pass) << o.name << " rel_l2 " << o.metrics.rel_l2;
    EXPECT_TRUE(r.pass);
  }
}

TEST(CpuOps, ForcedFallbackGivesTheSameResults) {
  for (auto [c, force] : {std::pair{"ops/conv_bn_relu", "relu"}, {"ops/silu_gate_mlp", "linear"}, {"ops/multihead_attention", "sdpa"},
                          {"ops/rmsnorm_bf16", "mean"}, {"ops/where_mask", "gt"}}) {
    SCOPED_TRACE(std::string(c) + " forcing " + force);
    runtime::ModelDir k = runtime::ModelDir::open(data(c));
    auto r = run_cpu(k, DType::f32, {.tolerance = harness::graph_is_half(k.graph) ? 1e-2 : 1e-4}, force);
    EXPECT_TRUE(r.pass);
    EXPECT_GE(compile_cpu(k.graph, DType::f32, force).partitions.size(), 2u);
  }
}

class CpuResNet : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuResNet, Float32MatchesPyTorch) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/" + GetParam()));
  auto r = run_cpu(c, DType::f32, {.tolerance = 1e-4});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].top5, r.outputs[0].top5_ref);
  EXPECT_TRUE(r.pass) << r.outputs[0].metrics.rel_l2;
}

TEST_P(CpuResNet, F16Top1AndTop5Set) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/" + GetParam()));
  const double tol = GetParam() == "resnet18" ? 0.01 : 0.05;
  auto r = run_cpu(c, DType::f16, {.tolerance = tol, .top5_in_order = false});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].top5[0], r.outputs[0].top5_ref[0]);
  EXPECT_TRUE(r.pass) << r.outputs[0].metrics.rel_l2;
  // One op type on the fallback: the same answer.
  auto f = run_cpu(c, DType::f16, {.tolerance = tol, .top5_in_order = false}, "max_pool2d");
  EXPECT_TRUE(f.pass);
}

// At f32 the activations between the convolutions stay channel-blocked (cpu/layout.hpp): every
// convolution writes a blocked tensor, and what enters or leaves a partition is NCHW. With the
// residual adds on the fallback the partition boundaries fall between blocked chains, and the
// answer is the same.
TEST_P(CpuResNet, Float32ActivationsStayBlockedBetweenConvolutions) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/" + GetParam()));
  for (const char* force : {"", "add"}) {
    SCOPED_TRACE(std::string("forcing '") + force + "'");
    const program::CompiledProgram p = compile_cpu(c.graph, DType::f32, force);
    std::size_t convs = 0, blocked_outputs = 0, boundary = 0, stems = 0;
    for (const auto& part : p.partitions) {
      if (part.target != "cpu") continue;
      const std::vector<bool> blocked = cpu::blocked_tensors(part.graph, part.kernels, part.plan);
      for (const Kernel& k : part.kernels)
        if (k.kind == fusion::ConvBnRelu::name || k.kind == fusion::ConvAddRelu::name || k.kind == fusion::ConvMaxPool::name || k.kind == ops::Conv2d::id)
          ++convs, blocked_outputs += blocked[static_cast<std::size_t>(k.outputs[0])], stems += k.kind == fusion::ConvMaxPool::name;
      for (auto ts : {part.graph.inputs, part.graph.outputs})
        for (ir::TensorId t : ts) boundary += blocked[static_cast<std::size_t>(t)];
    }
    EXPECT_GT(convs, 0u);
    EXPECT_EQ(stems, 1u);  // the stem with its max pool: conv_max_pool
#if defined(NPUSIM_CPU_AVX512)
    // The convolutions whose output a fallback part reads (the residual branches) stay NCHW.
    if (*force) {
      EXPECT_GT(blocked_outputs, 0u);
      EXPECT_LT(blocked_outputs, convs);
    } else {
      EXPECT_EQ(blocked_outputs, convs);
    }
#endif
    EXPECT_EQ(boundary, 0u);
  }
  auto r = run_cpu(c, DType::f32, {.tolerance = 1e-4}, "add");
  EXPECT_EQ(r.outputs[0].top5, r.outputs[0].top5_ref);
  EXPECT_TRUE(r.pass) << r.outputs[0].metrics.rel_l2;
}

INSTANTIATE_TEST_SUITE_P(Models, CpuResNet, ::testing::Values("resnet18", "resnet50"));

namespace {
harness::GenerateCheck qwen_tiny(DType dt, const std::string& force = {}) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"));
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  std::unordered_map<std::string, Tensor> cache;
  weights::BindOptions bo;
  bo.cache = &cache;
  auto prefill = runner_for<CpuTarget>::make(compile_cpu(pc.graph, dt, force), pc.weights.get(), bo);
  auto decode = runner_for<CpuTarget>::make(compile_cpu(dc.graph, dt, force), pc.weights.get(), bo);
  llm::LlmPrograms m(*prefill, *decode, llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json")), pc.graph, dc.graph);
  Tensor ids = pc.io->tensor("input_ids"), tok = dc.io->tensor("decode_tokens");
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end()),
      tokens(tok.span<std::int64_t>().begin(), tok.span<std::int64_t>().end());
  return harness::check_generation(m, prompt, pc.io->tensor("linear_14"), tokens, dc.io->tensor("decode_logits"));
}
}  // namespace

TEST(CpuQwenTiny, Float32EightOfEightTokens) {
  auto r = qwen_tiny(DType::f32);
  EXPECT_LE(r.prefill.rel_l2, 1e-4);
  EXPECT_EQ(r.token_matches, 8);
}

TEST(CpuQwenTiny, Bf16WithinTheIssueTolerances) {
  for (const char* force : {"", "embedding", "index_copy"}) {
    SCOPED_TRACE(std::string("forced: ") + force);
    auto r = qwen_tiny(DType::bf16, force);
    EXPECT_EQ(r.prefill_top1, r.prefill_top1_ref);
    EXPECT_GE(r.prefill.cosine, 0.9995);
    EXPECT_LE(r.prefill.rel_l2, 0.035);
    for (const auto& s : r.steps) {
      EXPECT_GE(s.metrics.cosine, 0.9995) << s.position;
      EXPECT_LE(s.metrics.rel_l2, 0.04) << s.position;
    }
    EXPECT_EQ(r.token_matches, 8);
  }
}

// A weight read through a zero-copy view (ViT's class token at batch 1: expand to its own shape,
// then cat). The executor released the weights no kernel took the address of, and the view's
// kernel took the view's, not the weight's: cat read freed memory (found by the npubin fuzzer
// under ASan, seed 13). The output must hold the weight's values in its first row.
TEST(CpuTarget, WeightReadThroughAZeroCopyViewStaysAlive) {
  const std::string ir = R"({"model_name": "class_token_b1", "graph_inputs": [{"name": "xs", "shape": [1, 5, 16], "dtype": "float32"}],
    "graph_outputs": [{"name": "cat", "shape": [1, 6, 16], "dtype": "float32"}],
    "weights": [{"name": "cls", "shape": [1, 1, 16], "dtype": "float32"}], "weight_name_mapping": {"p_cls": "cls"},
    "nodes": [
      {"name": "expand", "op_type": "aten.expand.default", "inputs": [{"name": "p_cls", "shape": [1, 1, 16], "dtype": "float32"}],
       "outputs": [{"name": "expand", "shape": [1, 1, 16], "dtype": "float32"}], "attrs": {"size": [1, -1, -1]}},
      {"name": "cat", "op_type": "aten.cat.default",
       "inputs": [{"name": "expand", "shape": [1, 1, 16], "dtype": "float32", "producer_node": "expand"},
                  {"name": "xs", "shape": [1, 5, 16], "dtype": "float32", "producer_node": "xs"}],
       "outputs": [{"name": "cat", "shape": [1, 6, 16], "dtype": "float32"}], "attrs": {"dim": 1}}]})";
  const ir::Graph g = ir::read_ir_string(ir, "class_token_b1.json");
  weights::SynthSource src(weights::SynthManifest::parse(
      R"({"rule": "npusim-synth-v1", "tensors": {"cls": {"offset": 0.5, "scale": 0.25, "shape": [1, 1, 16], "dtype": "float32"}}})", "synth.json"));
  program::CompiledProgram p = compile_cpu(g, DType::f32);
  const auto& part = p.partitions.at(0);
  const bool view_of_weight = std::any_of(part.kernels.begin(), part.kernels.end(), [&](const auto& k) { return k.kind == "view"; });
  EXPECT_TRUE(view_of_weight) << "the expand is expected to compile to a zero-copy view of the weight";
  auto runner = runner_for<CpuTarget>::make(p, &src);
  Tensor xs = Tensor::empty(DType::f32, {1, 5, 16});
  for (std::int64_t i = 0; i < xs.numel(); ++i) xs.data<float>()[i] = static_cast<float>(i);
  const Tensor cls = src.load("cls");
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out = runner->run(std::vector<Tensor>{xs});
    ASSERT_EQ(out.size(), 1u);
    const float* o = out[0].data<float>();
    for (int i = 0; i < 16; ++i) ASSERT_EQ(o[i], cls.data<float>()[i]) << "class token element " << i;
    for (int i = 0; i < 80; ++i) ASSERT_EQ(o[16 + i], static_cast<float>(i)) << "input element " << i;
  }
}
