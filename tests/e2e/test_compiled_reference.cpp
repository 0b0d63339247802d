// Passes and fusion preserve meaning: every fixture compiled for the reference target (all
// patterns, BatchNorm folding, constant folding) gives the unfused graph's outputs; .npubin round
// trips byte for byte; forced-fallback plans give the same outputs.
#include "../common/compile_util.hpp"
#include "../common/test_util.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

std::vector<std::string> all_cases() {
  std::vector<std::string> r;
  for (const char* top : {"ops", "models"})
    for (auto& e : std::filesystem::directory_iterator(data(top))) {
      std::string n = std::string(top) + "/" + e.path().filename().string();
      if (n.find("1.5b") == std::string::npos) r.push_back(n);
    }
  std::sort(r.begin(), r.end());
  return r;
}

struct Runs {
  std::vector<Tensor> unfused, compiled;
};

Runs run_both(const runtime::ModelDir& c, const program::CompiledProgram& p) {
  weights::BindOptions bo;
  bo.load_as = DType::f32;
  auto w = c.bind(bo);
  ref::InterpreterRunner plain(c.graph, w.tensors);
  runtime::ProgramRunner compiled(p, c.weights.get(), runtime::factories_for<ReferenceTarget>());
  auto in = test::any_inputs(c);
  return {plain.run(in), compiled.run(in)};
}

// The float32 rule: 1e-5, or 1e-4 once a reduction exceeds 1k elements (folded BatchNorm
// weights round differently from conv-then-BN, and ResNet-50 chains 50 such layers).
void expect_same(const Runs& r, double tol) {
  ASSERT_EQ(r.unfused.size(), r.compiled.size());
  for (std::size_t i = 0; i < r.unfused.size(); ++i) {
    harness::Metrics m = harness::compare(r.compiled[i], r.unfused[i]);
    EXPECT_LE(m.rel_l2, tol) << "output " << i;
  }
}

class CompiledCase : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(CompiledCase, CompiledProgramMatchesUnfusedGraphOnReference) {
  runtime::ModelDir c = runtime::ModelDir::open(data(GetParam()));
  program::CompiledProgram p = test::compile_reference(c.graph);
  expect_same(run_both(c, p), harness::longest_reduction(c.graph) > 1024 ? 1e-4 : 1e-5);
}

TEST_P(CompiledCase, NpubinRoundTripIsByteIdentical) {
  runtime::ModelDir c = runtime::ModelDir::open(data(GetParam()));
  program::CompiledProgram p = test::compile_reference(c.graph);
  std::string a = program::serialize(p);
  program::CompiledProgram q = program::deserialize(a, "mem.npubin");
  std::string b = program::serialize(q);
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CompiledCase, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// The OpenCL target's patterns (linear_group with a folded RMSNorm, linear_silu_gate, linear_add,
// rope_kv writing the caches in place, conv_add_relu), run by the reference as their member nodes
// in the order the fusion pass schedules them: the unfused graph's outputs.
TEST(CompiledPrograms, OpenCLPatternsKeepTheGraphsMeaning) {
  for (const char* c : {"models/qwen2_tiny_decode", "models/qwen2_tiny_prefill", "models/resnet18"}) {
    SCOPED_TRACE(c);
    runtime::ModelDir m = runtime::ModelDir::open(data(c));
    auto t = describe_target<ReferenceTarget>();
    t.patterns = fusion::pattern_infos(OpenCLTarget::pattern_list{});
    program::CompiledProgram p = program::compile(m.graph, t, test::reference_options());
    expect_same(run_both(m, p), harness::longest_reduction(m.graph) > 1024 ? 1e-4 : 1e-5);
  }
}

TEST(CompiledPrograms, ForcedFallbackPlansGiveTheSameOutputs) {
  struct Case {
    const char* dir;
    const char* force;
    std::size_t min_parts;
  };
  for (Case k : {Case{"models/resnet18", "max_pool2d", 3}, Case{"models/resnet18", "node:linear,relu", 3},
                 Case{"models/qwen2_tiny_prefill", "softmax", 3}, Case{"models/qwen2_tiny_decode", "aten.index_copy.default", 3},
                 Case{"ops/silu_gate_mlp", "silu", 3}}) {
    SCOPED_TRACE(std::string(k.dir) + " forcing " + k.force);
    runtime::ModelDir c = runtime::ModelDir::open(data(k.dir));
    auto o = test::reference_options();
    o.force = partition::ForceFallback::parse(k.force);
    program::CompiledProgram p = test::compile_reference(c.graph, o);
    EXPECT_GE(p.partitions.size(), k.min_parts);
    bool any_fallback = false;
    for (const auto& part : p.partitions) any_fallback = any_fallback || part.fallback;
    EXPECT_TRUE(any_fallback);
    expect_same(run_both(c, p), 1e-4);
    EXPECT_EQ(program::serialize(program::deserialize(program::serialize(p))), program::serialize(p));
  }
}

TEST(Npubin, RejectsOtherVersionsTruncationAndCorruption) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/conv_bn_relu"));
  std::string a = program::serialize(test::compile_reference(c.graph));
  std::string v = a;
  v[8] = 3;
  NPUSIM_EXPECT_ERROR(program::deserialize(v, "x.npubin"), "unsupported .npubin format version", "expected 1 or 2, found 3", "x.npubin");
  NPUSIM_EXPECT_ERROR(program::deserialize(a.substr(0, a.size() - 10), "x.npubin"), "truncated");
  std::string bad = a;
  bad[a.size() / 2] ^= 0x5a;
  NPUSIM_EXPECT_ERROR(program::deserialize(bad, "x.npubin"), "checksum mismatch");
  NPUSIM_EXPECT_ERROR(program::deserialize("hello", "x.npubin"), "not an .npubin file");
  test::TempDir d;
  program::save(test::compile_reference(c.graph), d.file("p.npubin"));
  EXPECT_EQ(program::serialize(program::load(d.file("p.npubin"))), a);
}
