// The OpenCL target on whatever OpenCL device the machine has (PoCL in CI): every fixture against
// PyTorch's outputs at f32 and at a half type, LLM prefill + decode with the KV cache carried on the
// device, mixed plans with the reference, device selection, the program cache, build errors, and
// the profiler's trace.
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <random>

#include "../common/compile_util.hpp"
#include "../common/int8_graphs.hpp"
#include "../common/op_fixtures.hpp"
#include "../common/test_util.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/opencl.hpp"
#include "npusim/target/opencl/device.hpp"
#include "npusim/target/opencl/mma.hpp"
#include "npusim/target/opencl/persistent.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

program::CompiledProgram compile_opencl(const ir::Graph& g, DType compute, const std::string& force = {}, const std::string& weights_format = {}) {
  program::CompileOptions o;
  o.compute = compute;
  o.weight_quant.format = weights_format;
  o.evaluator = evaluator_for<OpenCLTarget>();
  o.force = partition::ForceFallback::parse(force);
  return program::compile(g, describe_target<OpenCLTarget>(), o);
}

harness::CaseResult run_case(const std::string& dir, DType compute, std::optional<double> tol = {}, const std::string& force = {},
                             std::size_t* parts = nullptr) {
  runtime::ModelDir c = runtime::ModelDir::open(data(dir));
  auto p = compile_opencl(c.graph, compute, force);
  if (parts) *parts = p.partitions.size();
  auto r = runner_for<OpenCLTarget>::make(p, c.weights.get());
  harness::CheckOptions co;
  co.half_compute = is_half(compute);
  co.top5_in_order = !co.half_compute;
  co.tolerance = tol;
  return harness::check_case(c, *r, co);
}

std::string describe(const harness::CaseResult& r) {
  std::string s;
  for (const auto& o : r.outputs) s += o.name + ": rel_l2 " + std::to_string(o.metrics.rel_l2) + (o.pass ? " ok; " : " FAIL; ");
  return s;
}

// "ops/NAME" for each fixture (run_case takes paths under tests/data).
std::vector<std::string> op_cases() {
  std::vector<std::string> r;
  for (const std::string& n : test::op_fixtures()) r.push_back("ops/" + n);
  return r;
}

class OpenCLOpCase : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(OpenCLOpCase, MatchesPyTorchInFloat32) {
  auto r = run_case(GetParam(), DType::f32);
  EXPECT_TRUE(r.pass) << describe(r);
}

TEST_P(OpenCLOpCase, MatchesPyTorchInFloat16) {
  auto r = run_case(GetParam(), DType::f16);
  EXPECT_TRUE(r.pass) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OpenCLOpCase, ::testing::ValuesIn(op_cases()), [](const auto& info) {
  std::string n = info.param.substr(4);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(OpenCLModels, ResNetsAtFloat32AndFloat16) {
  for (const char* m : {"models/resnet18", "models/resnet50"}) {
    SCOPED_TRACE(m);
    auto r32 = run_case(m, DType::f32);
    EXPECT_TRUE(r32.pass) << describe(r32);
    EXPECT_TRUE(r32.outputs.at(0).top5_ok);
    auto r16 = run_case(m, DType::f16, std::string(m) == "models/resnet18" ? 0.01 : 0.05);
    EXPECT_TRUE(r16.pass) << describe(r16);
    EXPECT_TRUE(r16.outputs.at(0).top5_ok);
  }
}

namespace {
// Hides a runner's ability to carry state, so the KV cache travels through the host.
struct NoCarry final : Runner {
  Runner& r;
  explicit NoCarry(Runner& x) : r(x) {}
  const ir::Graph& graph() const override { return r.graph(); }
  std::vector<Tensor> run(std::span<const Tensor> in) override { return r.run(in); }
  std::string describe() const override { return r.describe(); }
};

// notes: when given, each OpenCL executor's execution_note(), prefill's first.
harness::GenerateCheck check_tiny(DType compute, bool carry, const std::string& force = {}, const ExecutorOptions& o = {},
                                  std::vector<std::string>* notes = nullptr, const std::string& weights_format = {}) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill")), dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  auto map = llm::KvMapping::read(data("models/qwen2_tiny_decode") + "/kv_mapping.json");
  auto pp = compile_opencl(pc.graph, compute, force, weights_format), dp = compile_opencl(dc.graph, compute, force, weights_format);
  std::vector<const PartitionExecutor*> executors;
  auto factories = [&] {
    ExecutorFactories f = runtime::factories_for<OpenCLTarget>(o);
    ExecutorFactory inner = f.at("opencl");
    f["opencl"] = [inner, &executors](const PartitionContext& c) {
      auto e = inner(c);
      executors.push_back(e.get());
      return e;
    };
    return f;
  };
  auto pr = std::make_unique<runtime::ProgramRunner>(pp, pc.weights.get(), factories());
  auto dr = std::make_unique<runtime::ProgramRunner>(dp, pc.weights.get(), factories());
  if (notes)
    for (const auto* e : executors) notes->push_back(e->execution_note());
  NoCarry plain(*dr);
  llm::LlmPrograms m(*pr, carry ? *dr : static_cast<Runner&>(plain), map, pc.graph, dc.graph);
  Tensor ids = pc.io->tensor(m.prefill_roles.input_ids);
  std::vector<std::int64_t> prompt(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
  Tensor tok = dc.io->tensor("decode_tokens");
  std::vector<std::int64_t> toks(tok.span<std::int64_t>().begin(), tok.span<std::int64_t>().end());
  return harness::check_generation(m, prompt, pc.io->tensor(pc.graph.tensor(pc.graph.outputs.at(0)).name), toks, dc.io->tensor("decode_logits"));
}
}  // namespace

TEST(OpenCLModels, QwenTinyPrefillAndDecodeAtFloat32AndBfloat16) {
  for (DType d : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(d));
    auto r = check_tiny(d, true);
    const bool half = is_half(d);
    EXPECT_EQ(r.prefill_top1, r.prefill_top1_ref);
    EXPECT_LE(r.prefill.rel_l2, half ? 0.035 : 1e-3);
    EXPECT_GE(r.prefill.cosine, half ? 0.9995 : 0.99999);
    EXPECT_EQ(r.token_matches, 8);
    for (const auto& s : r.steps) {
      EXPECT_LE(s.metrics.rel_l2, half ? 0.04 : 1e-3) << "step at " << s.position;
      EXPECT_GE(s.metrics.cosine, 0.9995) << "step at " << s.position;
    }
  }
}

// Decode attention (attention_dec, the splits merged by each row's last split): one query row per
// head against a long cache, grouped heads, a mask that opens the cache up to a position, K/V rows
// past it NaN (never read), in bf16 and f16, against the reference target. The cases cover one
// split and many, a position inside the first split, a cache that is no multiple of the splits,
// and teams of 4, 8 and 16 items per key.
TEST(OpenCLAttention, DecodeSplitsMatchTheReference) {
  struct C {
    std::int64_t hq, hkv, S, D, pos;
    DType dt;
  };
  for (const C& c : {C{12, 2, 2048, 128, 1029, DType::bf16}, C{12, 2, 2048, 128, 5, DType::bf16}, C{4, 4, 300, 64, 299, DType::f16},
                     C{8, 2, 64, 32, 40, DType::bf16}}) {
    SCOPED_TRACE("S " + std::to_string(c.S) + " D " + std::to_string(c.D) + " pos " + std::to_string(c.pos) + " " + std::string(dtype_name(c.dt)));
    test::OneNode n;
    const Shape qs{1, c.hq, 1, c.D}, ks{1, c.hkv, c.S, c.D}, ms{1, 1, 1, c.S};
    const auto q = n.input("q", qs, c.dt), k = n.input("k", ks, c.dt), v = n.input("v", ks, c.dt), m = n.input("mask", ms, c.dt);
    ir::AttrMap a;
    a.set("enable_gqa", ir::AttrValue(true));
    n.node("aten.scaled_dot_product_attention.default", {q, k, v, m}, qs, a, c.dt);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    // Rows past the position: 0 for the reference (which multiplies them by a weight of 0), NaN here.
    auto fill = [&](const Shape& s, bool cache, float past) {
      std::mt19937 r(static_cast<unsigned>(s.size() + s[1] + cache));
      Tensor t = Tensor::empty(DType::f32, s);
      float* p = t.data<float>();
      for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = cache && (i / c.D) % c.S > c.pos ? past : nd(r);
      return t.to(c.dt);
    };
    Tensor mask = Tensor::empty(DType::f32, ms);
    for (std::int64_t j = 0; j < c.S; ++j) mask.data<float>()[j] = j <= c.pos ? 0.0f : -std::numeric_limits<float>::infinity();
    std::vector<Tensor> ins{fill(qs, false, 0), fill(ks, true, 0), fill(ks, true, 0), mask.to(c.dt)};
    auto run = [&]<class Target>() {
      program::CompileOptions o;
      o.compute = c.dt;
      const program::CompiledProgram p = program::compile(n.g, describe_target<Target>(), o);
      runtime::ProgramRunner r(p, &n.src, runtime::factories_for<Target>());
      return r.run(ins).at(0).to(DType::f32);
    };
    const Tensor want = run.template operator()<ReferenceTarget>();
    ins[1] = fill(ks, true, std::nanf("")), ins[2] = fill(ks, true, std::nanf(""));
    const Tensor got = run.template operator()<OpenCLTarget>();
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double w = want.data<float>()[i], g = got.data<float>()[i];
      ASSERT_TRUE(std::isfinite(g)) << "element " << i;
      num += (g - w) * (g - w), den += w * w;
    }
    EXPECT_LE(std::sqrt(num / den), c.dt == DType::bf16 ? 8e-3 : 1e-3);
  }
}

// relu, neg, abs and clamp of integer tensors run on the device in 64-bit integers (a chain of them
// as one integer program), exact past float32's 2^24; next to a float pointwise op (here a cast),
// which eltwise_chain would fuse it with, the integer op goes to the reference. The
// mixture-of-experts blocks clamp their int64 expert ids so: every node of theirs stays on OpenCL.
TEST(OpenCLIntegerPointwise, ClampNegAbsReluOfInt64RunExactlyOnTheDevice) {
  const std::int64_t big = std::int64_t{1} << 40;
  Tensor x = Tensor::empty(DType::i64, {8});
  const std::int64_t xs[] = {-big - 3, -5, 7, big + 1, 2 * big + 7, 3, 0, -2 * big - 9};
  std::copy(std::begin(xs), std::end(xs), x.data<std::int64_t>());
  auto int_attr = [](std::int64_t v) { return ir::AttrValue(v); };
  for (bool with_cast : {false, true}) {
    SCOPED_TRACE(with_cast ? "clamp then a cast to float32" : "clamp_min, neg, clamp, abs, relu");
    test::OneNode n;
    ir::TensorId t = n.input("x", {8}, DType::i64);
    if (with_cast) {
      t = n.node("aten.clamp.default", {t}, {8}, test::attrs({{"min", int_attr(-big - 1)}, {"max", int_attr(2 * big + 5)}}), DType::i64);
      n.node("aten._to_copy.default", {t}, {8}, test::attrs({{"dtype", ir::AttrValue(std::string("torch.float32"))}}), DType::f32);
    } else {
      t = n.node("aten.clamp_min.default", {t}, {8}, test::attrs({{"min", int_attr(-big - 1)}}), DType::i64);
      t = n.node("aten.neg.default", {t}, {8}, {}, DType::i64);
      t = n.node("aten.clamp.default", {t}, {8}, test::attrs({{"max", int_attr(2 * big + 5)}}), DType::i64);
      t = n.node("aten.abs.default", {t}, {8}, {}, DType::i64);
      n.node("aten.relu.default", {t}, {8}, {}, DType::i64);
    }
    const program::CompiledProgram p = program::compile(n.g, describe_target<OpenCLTarget>(), {});
    std::string clamp_on;
    for (const auto& part : p.partitions)
      for (const auto& node : part.graph.nodes)
        if (node.op_type == "aten.clamp.default") clamp_on = part.target;
    EXPECT_EQ(clamp_on, with_cast ? "reference" : "opencl");
    if (!with_cast) {
      EXPECT_EQ(p.partitions.size(), 1u);
    }
    const Tensor want = n.run<ReferenceTarget>({x}), got = n.run<OpenCLTarget>({x});
    ASSERT_EQ(got.dtype(), want.dtype());
    for (std::int64_t i = 0; i < 8; ++i) {
      if (with_cast) {
        EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << "element " << i;
      } else {
        EXPECT_EQ(got.data<std::int64_t>()[i], want.data<std::int64_t>()[i]) << "element " << i;
      }
    }
  }
  for (const char* moe : {"ops/mixtral_moe_block", "ops/qwen2_moe_block"}) {
    SCOPED_TRACE(moe);
    runtime::ModelDir c = runtime::ModelDir::open(data(moe));
    const program::CompiledProgram p = compile_opencl(c.graph, DType::f32);
    for (const auto& part : p.partitions)
      for (const auto& node : part.graph.nodes) EXPECT_EQ(part.target, "opencl") << node.name << " " << node.op_type;
  }
}

// The decode step as one persistent launch (of one work-group, which a CPU driver runs too) meets
// the fixture as launch by launch does; the prefill, with tiled GEMMs, runs launch by launch and
// says why. (tools/device/decode_bench.sh checks it on an NVIDIA GPU, with many work-groups.)
TEST(OpenCLPersistent, QwenTinyDecodeAsOneLaunchMeetsTheFixture) {
  ExecutorOptions o;
  o.persistent_groups = 1;
  std::vector<std::string> notes;
  auto r = check_tiny(DType::bf16, true, {}, o, &notes);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("launch by launch: kernel gemm"), std::string::npos) << notes[0];
  EXPECT_EQ(notes[1], "one persistent launch of 1 work-groups");
  EXPECT_EQ(r.token_matches, 8);
  for (const auto& s : r.steps) {
    EXPECT_LE(s.metrics.rel_l2, 0.04) << "step at " << s.position;
    EXPECT_GE(s.metrics.cosine, 0.9995) << "step at " << s.position;
  }
  notes.clear();
  o.persistent_groups = 0;
  check_tiny(DType::bf16, true, {}, o, &notes);
  EXPECT_EQ(notes.at(1), "launch by launch: turned off");
  notes.clear();
  o.persistent_groups = ExecutorOptions::stage_by_stage;
  r = check_tiny(DType::bf16, true, {}, o, &notes);
  EXPECT_EQ(notes.at(1), "stage by stage, arguments from a table");
  EXPECT_EQ(r.token_matches, 8);
  for (const auto& s : r.steps) EXPECT_GE(s.metrics.cosine, 0.9995) << "step at " << s.position;
}

// q4_0 weights: the block GEMV (gemv_q) is a stage too, and stage by stage gives the
// launch-by-launch logits within float reordering (the quantization's own error is the same in both).
// (One mode: the persistent launch runs the same stage functions, and each mode costs PoCL a
// program build of ~10 s in CI.)
TEST(OpenCLPersistent, QuantizedDecodeAsStagesMatchesLaunchByLaunch) {
  ExecutorOptions o;
  const auto base = check_tiny(DType::bf16, true, {}, o, nullptr, "q4_0");
  o.persistent_groups = ExecutorOptions::stage_by_stage;
  std::vector<std::string> notes;
  const auto r = check_tiny(DType::bf16, true, {}, o, &notes, "q4_0");
  EXPECT_EQ(notes.at(1), "stage by stage, arguments from a table");
  ASSERT_EQ(r.steps.size(), base.steps.size());
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    EXPECT_NEAR(r.steps[i].metrics.rel_l2, base.steps[i].metrics.rel_l2, 0.01) << "step " << i;
    EXPECT_EQ(r.steps[i].token, base.steps[i].token) << "step " << i;
  }
}

// The persistent program's sources: the //@pk+ regions of the kernel files, nothing else.
TEST(OpenCLPersistent, RegionsAndWhyNot) {
  EXPECT_EQ(ocl::persistent_regions("a\n//@pk+\nb\nc\n//@pk-\nd\n//@pk+\ne"), "b\nc\ne\n");
  const std::string gemm = ocl::persistent_regions(ocl::cl_source::gemm);
  EXPECT_NE(gemm.find("PK_GROUP_FN(gemv, GV_WG)"), std::string::npos);
  EXPECT_EQ(gemm.find("gemm_mma"), std::string::npos);
  ocl::Launch l;
  l.name = "pointwise", l.dims = 1, l.has_local = true, l.local = {128, 1, 1};
  EXPECT_EQ(ocl::Persistent::why_not({}), "no launches");
  std::vector<ocl::Launch> ls;
  ls.push_back(std::move(l));
  EXPECT_EQ(ocl::Persistent::why_not(ls), "kernel pointwise: not in the persistent program");
  ls[0].name = "gemv", ls[0].options = " -DTA=2 -DTB=2 -DTC=0 -DGV_M=2";
  EXPECT_EQ(ocl::Persistent::why_not(ls), "kernel gemv: build option -DGV_M=2");
  ls[0].options = " -DTA=2 -DTB=2 -DTC=0 -DGV_M=1";
  EXPECT_EQ(ocl::Persistent::why_not(ls), "");
  ls[0].local = {64, 1, 1};
  EXPECT_EQ(ocl::Persistent::why_not(ls), "kernel gemv: work-groups of 64 items");
  // gemv_q: one block format per program.
  ls[0].local = {128, 1, 1};
  ls[0].name = "gemv_q", ls[0].options = " -DTA=2 -DTC=2 -DGQ_FMT=2 -DGV_M=1";
  ls.emplace_back();
  ls[1].name = "gemv_q", ls[1].dims = 1, ls[1].has_local = true, ls[1].local = {128, 1, 1}, ls[1].options = ls[0].options;
  EXPECT_EQ(ocl::Persistent::why_not(ls), "");
  ls[1].options = " -DTA=2 -DTC=2 -DGQ_FMT=1 -DGV_M=1";
  EXPECT_EQ(ocl::Persistent::why_not(ls), "gemv_q over two block formats (one per program)");
}

// The KV cache written in place and carried on the device gives the logits of the host round trip.
TEST(OpenCLModels, CarriedKvCacheMatchesHostRoundTrip) {
  auto dev = check_tiny(DType::bf16, true), host = check_tiny(DType::bf16, false);
  ASSERT_EQ(dev.steps.size(), host.steps.size());
  for (std::size_t i = 0; i < dev.steps.size(); ++i) {
    EXPECT_EQ(dev.steps[i].metrics.rel_l2, host.steps[i].metrics.rel_l2) << "step " << i;
    EXPECT_EQ(dev.steps[i].token, host.steps[i].token);
  }
}

// Outputs come back in pinned memory the executor reuses (docs/opencl.md): never while a caller
// still holds the last run's tensor, and a held tensor outlives its runner (and the device's
// other users) intact.
TEST(OpenCLTransfers, OutputsHeldByTheCallerAreNotReusedAndOutliveTheRunner) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/relu"));
  const auto p = compile_opencl(c.graph, DType::f32);
  ASSERT_EQ(p.inputs.size(), 1u);
  auto inputs = [&](float scale) {
    Tensor x = Tensor::empty(DType::f32, p.inputs[0].shape);
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = scale * static_cast<float>(i % 7 - 3);
    return std::vector<Tensor>{x};
  };
  auto expect_relu_of = [](const Tensor& y, float scale) {
    for (std::int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data<float>()[i], std::max(0.0f, scale * static_cast<float>(i % 7 - 3))) << "element " << i;
  };
  Tensor held;
  {
    auto r = runner_for<OpenCLTarget>::make(p, c.weights.get());
    for (int round = 0; round < 2; ++round) {  // the second round's outputs are recycled ones
      std::vector<Tensor> a = r->run(inputs(1.0f));
      held = a.at(0);
      a.clear();
      std::vector<Tensor> b = r->run(inputs(2.0f));
      expect_relu_of(held, 1.0f);
      expect_relu_of(b.at(0), 2.0f);
      EXPECT_NE(held.raw(), b.at(0).raw());
    }
  }
  expect_relu_of(held, 1.0f);
}

TEST(OpenCLMixedPlans, FallbackPartitionsRunOnTheReference) {
  std::size_t parts = 0;
  auto r = run_case("models/resnet18", DType::f32, {}, "max_pool2d", &parts);
  EXPECT_GE(parts, 3u);
  EXPECT_TRUE(r.pass) << describe(r);
  r = run_case("ops/silu_gate_mlp", DType::f32, {}, "silu", &parts);
  EXPECT_GE(parts, 3u);
  EXPECT_TRUE(r.pass) << describe(r);
  // KV writes on the reference: the cache is carried on the host by the plan runner.
  auto g = check_tiny(DType::f32, true, "aten.index_copy.default");
  EXPECT_EQ(g.token_matches, 8);
  for (const auto& s : g.steps) EXPECT_LE(s.metrics.rel_l2, 1e-3);
}

// Indices are checked on the device: the first one out of range fails the run with the
// reference's error, naming file, node and index tensor; the next run starts clean.
TEST(OpenCLErrors, IndexOutOfRangeIsTheReferencesErrorNotNaN) {
  runtime::ModelDir emb = runtime::ModelDir::open(data("ops/embedding"));
  auto r = runner_for<OpenCLTarget>::make(compile_opencl(emb.graph, DType::f32), emb.weights.get());
  Tensor ids = Tensor::zeros(DType::i64, {1, 7});
  ids.data<std::int64_t>()[3] = 1000000;
  NPUSIM_EXPECT_ERROR(r->run(std::vector<Tensor>{ids}), "npusim runtime error", "ops/embedding/ir.json", "node 'embedding'", "tensor 'input'",
                      "embedding index out of range", "expected [0, 49]", "found 1000000");
  ids.data<std::int64_t>()[3] = -1;  // embedding takes no negative index (the reference refuses it too)
  NPUSIM_EXPECT_ERROR(r->run(std::vector<Tensor>{ids}), "embedding index out of range", "found -1");
  ids.data<std::int64_t>()[3] = 49;
  std::vector<Tensor> out;
  ASSERT_NO_THROW(out = r->run(std::vector<Tensor>{ids}));
  auto ref = runner_for<ReferenceTarget>::make(test::compile_reference(emb.graph), emb.weights.get());
  EXPECT_EQ(harness::compare(out.at(0), ref->run(std::vector<Tensor>{ids}).at(0)).max_abs, 0.0);

  runtime::ModelDir ic = runtime::ModelDir::open(data("ops/index_copy_kv"));
  auto ir = runner_for<OpenCLTarget>::make(compile_opencl(ic.graph, DType::f32), ic.weights.get());
  std::vector<Tensor> in = ic.inputs();
  in.at(1).data<std::int64_t>()[1] = -17;
  NPUSIM_EXPECT_ERROR(ir->run(in), "npusim runtime error", "ops/index_copy_kv/ir.json", "index_copy index out of range", "expected [-16, 15]",
                      "found -17");

  // index.Tensor (swin's relative-position gather): negative indices count from the end.
  runtime::ModelDir rp = runtime::ModelDir::open(data("ops/index_relpos"));
  auto rr = runner_for<OpenCLTarget>::make(compile_opencl(rp.graph, DType::f32), rp.weights.get());
  std::vector<Tensor> rin = rp.inputs();
  rin.at(1).data<std::int64_t>()[80] = 25;
  NPUSIM_EXPECT_ERROR(rr->run(rin), "npusim runtime error", "ops/index_relpos/ir.json", "node 'index'", "index index out of range", "expected [-25, 24]",
                      "found 25");
  rin.at(1).data<std::int64_t>()[80] = -25;
  ASSERT_NO_THROW(out = rr->run(rin));
  auto rref = runner_for<ReferenceTarget>::make(test::compile_reference(rp.graph), rp.weights.get());
  EXPECT_EQ(harness::compare(out.at(0), rref->run(rin).at(0)).max_abs, 0.0);
}

// A decode step at a cache position past the KV cache: the merged rotary + KV-write launch checks it.
TEST(OpenCLErrors, DecodeCachePositionPastTheCacheIsAnError) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill")), dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  auto r = runner_for<OpenCLTarget>::make(compile_opencl(dc.graph, DType::bf16), pc.weights.get());
  std::vector<Tensor> in;
  for (ir::TensorId t : dc.graph.inputs) in.push_back(Tensor::zeros(dc.graph.tensor(t).dtype, dc.graph.tensor(t).shape));
  auto at = [&](const char* name) -> Tensor& {
    for (std::size_t i = 0; i < in.size(); ++i)
      if (dc.graph.tensor(dc.graph.inputs[i]).name == name) return in[i];
    throw std::runtime_error(std::string("no input ") + name);
  };
  at("cache_position").data<std::int64_t>()[0] = 64;
  NPUSIM_EXPECT_ERROR(r->run(in), "npusim runtime error", "qwen2_tiny_decode/ir.json", "index_copy index out of range", "expected [-64, 63]", "found 64");
  at("cache_position").data<std::int64_t>()[0] = 5;
  EXPECT_NO_THROW(r->run(in));
}

// linear_group_rope_kv (the q/k/v GEMV that rotates q and k and writes k and v into the caches in
// its epilogue) computes what linear_group + rope_kv compute apart: one decode step of the tiny
// Qwen2 at bf16 from caches of noise, at the first, a middle and the last position, every
// output (the logits and both layers' caches) bit for bit; a position past the cache is the
// reference's error, not a write out of bounds.
TEST(OpenCLModels, FoldedLaunchesGiveTheSeparateLaunchesOutputs) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill")), dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  const auto fused = compile_opencl(dc.graph, DType::bf16);
  program::CompileOptions o;
  o.compute = DType::bf16;
  o.evaluator = evaluator_for<OpenCLTarget>();
  o.fuse.disabled = {"linear_group_rope_kv"};
  const auto apart = program::compile(dc.graph, describe_target<OpenCLTarget>(), o);
  auto count = [](const program::CompiledProgram& p, std::string_view kind) {
    int n = 0;
    for (const Kernel& k : p.partitions.at(0).kernels) n += k.kind == kind;
    return n;
  };
  ASSERT_EQ(count(fused, "linear_group_rope_kv"), 2);
  ASSERT_EQ(count(fused, "rope_kv"), 0);
  ASSERT_EQ(count(apart, "rope_kv"), 2);
  ASSERT_EQ(count(apart, "linear_group"), 3);
  runtime::ProgramRunner rf(fused, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
  runtime::ProgramRunner ra(apart, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto inputs = [&](std::int64_t pos) {
    std::vector<Tensor> in;
    for (ir::TensorId t : dc.graph.inputs) {
      const ir::TensorInfo& ti = dc.graph.tensor(t);
      Tensor x = Tensor::zeros(DType::f32, ti.shape);
      if (ti.name == "attention_mask")
        for (std::int64_t j = 0; j < x.numel(); ++j) x.data<float>()[j] = j <= pos ? 0.0f : -std::numeric_limits<float>::infinity();
      else if (ti.name.starts_with("kv_"))
        for (std::int64_t j = 0; j < x.numel(); ++j) x.data<float>()[j] = nd(rng);
      else if (ti.name == "input_ids") x.data<float>()[0] = 77;
      else x.data<float>()[0] = static_cast<float>(pos);  // position_ids, cache_position
      in.push_back(x.to(ti.dtype));
    }
    return in;
  };
  for (std::int64_t pos : {0, 37, 63}) {
    SCOPED_TRACE("position " + std::to_string(pos));
    const std::vector<Tensor> in = inputs(pos);
    const std::vector<Tensor> a = ra.run(in), f = rf.run(in);
    ASSERT_EQ(a.size(), f.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(harness::compare(f[i], a[i]).max_abs, 0.0) << "output " << i;
  }
  std::vector<Tensor> bad = inputs(63);
  for (std::size_t i = 0; i < bad.size(); ++i)
    if (dc.graph.tensor(dc.graph.inputs[i]).name == "cache_position") bad[i].data<std::int64_t>()[0] = 64;
  NPUSIM_EXPECT_ERROR(rf.run(bad), "npusim runtime error", "index_copy index out of range", "expected [-64, 63]", "found 64");
}

// The decode step's launches: one per program kernel, the kernels the compiler made (the GEMV
// groups and their RoPE + KV write are fusion patterns the target lists, issue 41; its executor
// merges nothing). Per layer the norm + q/k/v GEMV with RoPE and the KV-cache write in its
// epilogue (linear_group_rope_kv), attention, o_proj + residual, the post-attention norm, gate/up,
// down + residual; then the final norm + lm_head: 15 launches at bf16 (17 with rope_kv a launch
// of its own; Qwen2.5-1.5B's step: Fusion.OpenCLQwen15DecodeIsSixKernelsALayer).
TEST(OpenCLLaunches, QwenTinyDecodeIsOneLaunchPerKernel) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill")), dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  const auto p = compile_opencl(dc.graph, DType::bf16);
  ASSERT_EQ(p.partitions.size(), 1u);
  std::vector<std::string> kinds;
  for (const Kernel& k : p.partitions[0].kernels)
    if (k.kind != "view") kinds.push_back(k.kind);
  std::vector<std::string> want = {"embedding", "rotary_embedding"};
  for (int layer = 0; layer < 2; ++layer)
    want.insert(want.end(), {"linear_group_rope_kv", "attention", "linear_add", "rmsnorm", "linear_silu_gate", "linear_add"});
  want.push_back("linear_group");
  EXPECT_EQ(kinds, want);
  std::vector<Tensor> in;
  for (ir::TensorId t : dc.graph.inputs) in.push_back(Tensor::zeros(dc.graph.tensor(t).dtype, dc.graph.tensor(t).shape));
  for (std::size_t i = 0; i < in.size(); ++i)
    if (dc.graph.tensor(dc.graph.inputs[i]).name == "cache_position") in[i].data<std::int64_t>()[0] = 5;
  const char* old = std::getenv("NPUSIM_OPENCL_STATS");
  const std::string saved = old ? old : "";
  setenv("NPUSIM_OPENCL_STATS", "1", 1);
  Profiler prof;
  testing::internal::CaptureStderr();
  {
    runtime::ProgramRunner r(p, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
    r.set_profiler(&prof);
    r.run(in);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  old ? setenv("NPUSIM_OPENCL_STATS", saved.c_str(), 1) : unsetenv("NPUSIM_OPENCL_STATS");
  EXPECT_NE(err.find("opencl partition (15 launches"), std::string::npos) << err;
  std::vector<std::string> ran;  // one profile row per program kernel that launched
  for (const ProfileEvent& e : prof.events())
    if (e.target == "opencl") ran.push_back(e.kind);
  EXPECT_EQ(ran, want);
}

// The measuring knobs of docs/opencl.md: NPUSIM_OPENCL_DROP leaves a kind's launches out and says
// so (the tiny Qwen2 decode's 2 attention launches: 13 of 15 run); NPUSIM_OPENCL_FLUSH_AFTER=1
// changes nothing in the outputs, and a value that is no count is an error naming it.
TEST(OpenCLLaunches, MeasuringKnobsDropAndFlush) {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill")), dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  const auto p = compile_opencl(dc.graph, DType::bf16);
  std::vector<Tensor> in;
  for (ir::TensorId t : dc.graph.inputs) in.push_back(Tensor::zeros(dc.graph.tensor(t).dtype, dc.graph.tensor(t).shape));
  for (std::size_t i = 0; i < in.size(); ++i)
    if (dc.graph.tensor(dc.graph.inputs[i]).name == "cache_position") in[i].data<std::int64_t>()[0] = 5;
  auto run_with = [&](const char* var, const char* value) {
    setenv(var, value, 1);
    std::vector<Tensor> out;
    try {
      runtime::ProgramRunner r(p, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
      out = r.run(in);
    } catch (...) {
      unsetenv(var);
      throw;
    }
    unsetenv(var);
    return out;
  };
  const std::vector<Tensor> plain = [&] {
    runtime::ProgramRunner r(p, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
    return r.run(in);
  }();
  const std::vector<Tensor> flushed = run_with("NPUSIM_OPENCL_FLUSH_AFTER", "1");
  ASSERT_EQ(flushed.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(harness::compare(flushed[i], plain[i]).max_abs, 0.0) << "output " << i;
  NPUSIM_EXPECT_ERROR(run_with("NPUSIM_OPENCL_FLUSH_AFTER", "first"), "NPUSIM_OPENCL_FLUSH_AFTER must be a number of launches", "first");
  testing::internal::CaptureStderr();
  run_with("NPUSIM_OPENCL_DROP", "attention");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("NPUSIM_OPENCL_DROP=attention: 2 of 15 launches dropped (the outputs are wrong)"), std::string::npos) << err;
}

// explain --kernels and the binder walk one candidate list (ocl::gemm_candidates) over the same
// problems: for every matrix product of the tiny Qwen2 (prefill and decode, bf16, float and q8_0
// weights) and of three convolution and three matmul fixtures, the path implementations_for reports is the OpenCL
// function the executor launched for that kernel (the profile's label names them). On PoCL the
// tensor-core path declines, saying why; NPUSIM_OPENCL_SKIP is tested through the CLI (cli.opencl_skip_*).
TEST(OpenCLKernelChoice, ExplainNamesThePathTheBinderLaunches) {
  const std::map<std::string, std::vector<std::string>> functions = {
      {"gemv", {"gemv", "gemv_rope"}}, {"gemv_q", {"gemv_q"}}, {"gemm_mma", {"gemm_mma"}}, {"gemm", {"gemm"}}};
  std::set<std::string> seen;
  auto check = [&](const std::string& dir, DType compute, const std::string& weights_format, const std::string& weights_dir) {
    SCOPED_TRACE(dir + " " + std::string(dtype_name(compute)) + " " + weights_format);
    runtime::ModelDir m = runtime::ModelDir::open(data(dir)), w = runtime::ModelDir::open(data(weights_dir));
    const auto p = compile_opencl(m.graph, compute, {}, weights_format);
    ASSERT_EQ(p.partitions.size(), 1u);
    const std::vector<KernelImplementation> impl = implementations_for<OpenCLTarget>::of(p.partitions[0]);
    ASSERT_FALSE(impl.empty());
    std::vector<Tensor> in;
    for (ir::TensorId t : m.graph.inputs) {
      in.push_back(Tensor::zeros(m.graph.tensor(t).dtype, m.graph.tensor(t).shape));
      if (m.graph.tensor(t).name == "cache_position") in.back().data<std::int64_t>()[0] = 5;
    }
    Profiler prof;
    runtime::ProgramRunner r(p, w.weights.get(), runtime::factories_for<OpenCLTarget>());
    r.set_profiler(&prof);
    r.run(in);
    std::map<int, std::string> label;
    for (const ProfileEvent& e : prof.events())
      if (e.target == "opencl" && e.kernel >= 0) label[e.kernel] = e.name;
    for (const KernelImplementation& k : impl) {
      SCOPED_TRACE(p.partitions[0].kernels.at(k.kernel).kind + " -> " + k.chosen);
      seen.insert(k.chosen);
      ASSERT_TRUE(label.count(static_cast<int>(k.kernel)));
      const std::string& l = label[static_cast<int>(k.kernel)];
      bool ran = false;
      for (const std::string& fn : functions.at(k.chosen)) ran = ran || l.find("(" + fn + ")") != std::string::npos || l.find("(" + fn + "+") != std::string::npos;
      EXPECT_TRUE(ran) << l;
      for (const auto& [name, why] : k.declined) EXPECT_FALSE(why.empty()) << name;
      // A prefill's group on the 64x64 tiles runs its products apart, and explain says so.
      const std::string& kind = p.partitions[0].kernels.at(k.kernel).kind;
      if ((kind == "linear_group" || kind == "linear_silu_gate") && k.chosen == "gemm") {
        EXPECT_NE(k.note.find("apart"), std::string::npos) << k.note;
        if (kind == "linear_silu_gate") {
          EXPECT_NE(l.find("silu_mul"), std::string::npos) << l;
        }
      }
    }
  };
  check("models/qwen2_tiny_decode", DType::bf16, "", "models/qwen2_tiny_prefill");
  check("models/qwen2_tiny_decode", DType::bf16, "q8_0", "models/qwen2_tiny_prefill");
  check("models/qwen2_tiny_prefill", DType::bf16, "", "models/qwen2_tiny_prefill");
  for (const char* c : {"ops/conv2d_1x1", "ops/conv2d_3x3_bias", "ops/conv_bn_relu", "ops/matmul_2d", "ops/matmul_4d_transpose", "ops/bmm"})
    check(c, DType::f32, "", c);
  EXPECT_TRUE(seen.count("gemv") && seen.count("gemv_q")) << "the decode steps ran no GEMV";
  EXPECT_TRUE(seen.count("gemm") || seen.count("gemm_mma")) << "the prefill and convolutions ran no tiled product";
}

// Convolutions between convolutions and pools run channels-last (NHWC) where the tensor cores run
// them (layout.hpp; here with mma.sync emulated: opencl.mma_emulated): a chain of every kind the
// layout takes (a 3x3 convolution with ReLU after a max pool, a 1x1 one with a residual, a
// strided 3x3 with a strided 1x1 downsample as its residual, a dilated 3x3, a global average pool)
// matches the reference target in float32, and so does the same chain kept NCHW
// (NPUSIM_OPENCL_NHWC=0). The first convolution reads the graph's NCHW input and stays NCHW; the
// profile labels say which kernels ran channels-last, and explain --kernels names the convolutions.
TEST(OpenCLConv, ChannelsLastChainMatchesTheReference) {
  std::mt19937 rng(7);
  auto rnd = [&](Shape s, float scale) {
    Tensor t = Tensor::empty(DType::f32, s);
    std::normal_distribution<float> d(0.0f, scale);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    return t;
  };
  test::OneNode t;
  using test::attrs, test::ints;
  auto conv = [&](ir::TensorId x, Shape out, int co, int ci, int k, int stride, int pad, int dil) {
    const std::string n = "w" + std::to_string(t.g.nodes.size());
    return t.node("aten.conv2d.default", {x, t.weight(n, rnd({co, ci, k, k}, 1.0f / std::sqrt(float(ci * k * k)))), t.weight(n + "b", rnd({co}, 0.1f))}, out,
                  attrs({{"stride", ints({stride, stride})}, {"padding", ints({pad, pad})}, {"dilation", ints({dil, dil})}, {"groups", ir::AttrValue(std::int64_t{1})}}),
                  DType::f32);
  };
  auto relu = [&](ir::TensorId x, Shape s) { return t.node("aten.relu.default", {x}, s, {}, DType::f32); };
  const ir::TensorId x = t.input("x", {2, 16, 9, 9}, DType::f32);
  const ir::TensorId r1 = relu(conv(x, {2, 16, 9, 9}, 16, 16, 3, 1, 1, 1), {2, 16, 9, 9});
  const ir::TensorId p1 = t.node("aten.max_pool2d.default", {r1}, {2, 16, 5, 5},
                                 attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}), DType::f32);
  const ir::TensorId r2 = relu(conv(p1, {2, 32, 5, 5}, 32, 16, 3, 1, 1, 1), {2, 32, 5, 5});
  const ir::TensorId s3 = t.node("aten.add.Tensor", {conv(r2, {2, 32, 5, 5}, 32, 32, 1, 1, 0, 1), r2}, {2, 32, 5, 5}, {}, DType::f32);
  const ir::TensorId r3 = relu(s3, {2, 32, 5, 5});
  const ir::TensorId down = conv(r3, {2, 64, 3, 3}, 64, 32, 1, 2, 0, 1);
  const ir::TensorId s4 = t.node("aten.add.Tensor", {conv(r3, {2, 64, 3, 3}, 64, 32, 3, 2, 1, 1), down}, {2, 64, 3, 3}, {}, DType::f32);
  const ir::TensorId r5 = relu(conv(relu(s4, {2, 64, 3, 3}), {2, 64, 3, 3}, 64, 64, 3, 1, 2, 2), {2, 64, 3, 3});
  t.node("aten.adaptive_avg_pool2d.default", {r5}, {2, 64, 1, 1}, attrs({{"output_size", ints({1, 1})}}), DType::f32);
  const std::vector<Tensor> in{rnd({2, 16, 9, 9}, 1.0f)};
  const Tensor ref = t.run<ReferenceTarget>(in);
  const bool mma = ocl::mma_support(*ocl::open_device()).ok;
  auto run = [&](const char* nhwc, std::size_t* last) {
    struct Env {
      explicit Env(const char* v) { setenv("NPUSIM_OPENCL_NHWC", v, 1); }
      ~Env() { unsetenv("NPUSIM_OPENCL_NHWC"); }
    } env(nhwc);
    const auto p = compile_opencl(t.g, DType::f16);
    Profiler prof;
    runtime::ProgramRunner r(p, &t.src, runtime::factories_for<OpenCLTarget>());
    r.set_profiler(&prof);
    Tensor y = r.run(in).at(0);
    *last = 0;
    for (const ProfileEvent& e : prof.events()) *last += e.target == "opencl" && e.name.find("[NHWC]") != std::string::npos;
    // explain --kernels names the convolutions that ran channels-last (5: all but the first).
    std::size_t noted = 0;
    for (const KernelImplementation& k : implementations_for<OpenCLTarget>::of(p.partitions.at(0))) noted += k.note.find("channels-last") != std::string::npos;
    EXPECT_EQ(noted, *last ? *last - 2 : 0) << "explain's channels-last convolutions against the executor's";
    return y;
  };
  std::size_t last = 0, last_off = 0;
  const Tensor y = run("1", &last), y_off = run("0", &last_off);
  for (const Tensor* o : {&y, &y_off}) {
    const auto m = harness::compare(o->to(DType::f32), ref);
    EXPECT_LT(m.rel_l2, 5e-3) << "max_abs " << m.max_abs;
  }
  EXPECT_EQ(last_off, 0u);
  // The NHWC kernels: five convolutions (the residual adds fused), the max pool that turns the
  // layout and the global average pool that turns it back.
  if (mma) EXPECT_EQ(last, 7u);
  else EXPECT_EQ(last, 0u) << "no tensor cores, no channels-last";
}

TEST(OpenCLDevices, SelectionByIndexNameAndErrors) {
  auto all = ocl::list_devices();
  ASSERT_FALSE(all.empty()) << "no OpenCL device (install pocl-opencl-icd)";
  EXPECT_EQ(ocl::select_device("0").id, all[0].id);
  EXPECT_EQ(ocl::select_device(all.back().name.substr(0, 6)).platform_name.empty(), false);
  NPUSIM_EXPECT_ERROR(ocl::select_device("no such device anywhere"), "no OpenCL device matches", "no such device anywhere");
  NPUSIM_EXPECT_ERROR(ocl::select_device("99"), "no OpenCL device with this index", "99");
}

TEST(OpenCLPrograms, BuiltOnceCachedOnDiskKeyedBySourceAndBuildErrorsCarryTheLog) {
  test::TempDir dir;
  ::setenv("NPUSIM_OPENCL_CACHE", dir.file("cache").c_str(), 1);
  auto count = [&] {
    std::size_t n = 0;
    if (std::filesystem::exists(dir.file("cache")))
      for (auto& e : std::filesystem::directory_iterator(dir.file("cache"))) n += e.path().extension() == ".bin";
    return n;
  };
  const std::string src = "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }";
  {
    ocl::Device d(ocl::select_device());
    cl_program a = d.program("t", src, "");
    EXPECT_EQ(d.program("t", src, ""), a);  // built once per process
    EXPECT_EQ(count(), 1u);
  }
  {
    ocl::Device d(ocl::select_device());  // a new context: the binary comes from disk
    d.program("t", src, "");
    EXPECT_EQ(count(), 1u);
    d.program("t", src + "\n// changed", "");
    EXPECT_EQ(count(), 2u);
    d.program("t", src, "-DX=1");
    EXPECT_EQ(count(), 3u);
    NPUSIM_EXPECT_ERROR(d.program("bad", "__kernel void f(__global float* x) { x[0] = undefined_name; }", ""), "failed to build",
                        "build log", "undefined_name", d.info().name.c_str());
  }
  ::unsetenv("NPUSIM_OPENCL_CACHE");
}

// A decode step's trace: Chrome/Perfetto JSON (schema below), one complete event per kernel with
// its device time; kernel times add up to no more than the step's wall time.
TEST(OpenCLProfiler, DecodeStepTraceIsValidPerfettoJsonWithinWallTime) {
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"));
  auto p = compile_opencl(dc.graph, DType::bf16);
  runtime::ProgramRunner r(p, pc.weights.get(), runtime::factories_for<OpenCLTarget>());
  auto in = test::any_inputs(dc);
  r.run(in);
  Profiler prof;
  r.set_profiler(&prof);
  prof.clear();
  const double t0 = prof.now_us();
  r.run(in);
  const double wall = prof.now_us() - t0;
  r.set_profiler(nullptr);
  ir::json j = ir::json::parse(prof.trace_json());
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j.contains("traceEvents") && j["traceEvents"].is_array());
  double device = 0, host = 0;
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e.contains("name") && e["name"].is_string());
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string());
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer());
    const std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "M") << ph;
    if (ph == "M") {
      ASSERT_TRUE(e["args"].contains("name"));
      continue;
    }
    ++complete;
    ASSERT_TRUE(e.contains("tid") && e["tid"].is_number_integer());
    ASSERT_TRUE(e.contains("cat") && e["cat"].is_string());
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number() && e["ts"].get<double>() >= 0);
    ASSERT_TRUE(e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() >= 0);
    ASSERT_TRUE(e["args"].contains("device_us") && e["args"]["device_us"].is_number());
    ASSERT_TRUE(e["args"].contains("host_us") && e["args"]["host_us"].is_number());
    device += e["args"]["device_us"].get<double>();
    host += e["args"]["host_us"].get<double>();
    // Events lie inside the run.
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), t0 + wall + 1.0);
  }
  EXPECT_GT(complete, 10);
  EXPECT_LE(device, wall);
  EXPECT_LE(host, wall);
  EXPECT_GT(device, 0);
}
