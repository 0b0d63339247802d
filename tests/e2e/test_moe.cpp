// Mixture of experts (issue 40): topk, index_add and the `moe` pattern on every target of the
// build against answers worked out by hand (the conformance suite compares them with the
// reference on generated shapes; the PyTorch fixtures of tools/op_fixtures/moe40.py with PyTorch).
#include <cmath>

#include "../common/int8_graphs.hpp"
#include "../common/build_targets.hpp"
#include "../common/test_util.hpp"
#include "npusim/cpu.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/pipeline.hpp"
#include "npusim/reference.hpp"
#if NPUSIM_WITH_OPENCL
#include "npusim/opencl.hpp"
#endif

using namespace npusim;

namespace {

using targets = test::build_targets;

// A graph built node by node, each node's outputs from its op's own inference.
struct Net {
  test::OneNode net;
  std::vector<Tensor> inputs;
  ir::TensorId input(const std::vector<float>& v, Shape s) {
    inputs.push_back(Tensor::from_values<float>(s, v));
    return net.input("x" + std::to_string(inputs.size()), s, DType::f32);
  }
  ir::TensorId weight(const std::vector<float>& v, Shape s) {
    return net.weight("w" + std::to_string(net.g.weights.size()), Tensor::from_values<float>(s, v));
  }
  ir::TensorId indices(const std::vector<std::int64_t>& v) {
    return net.weight("i" + std::to_string(net.g.weights.size()), Tensor::from_values<std::int64_t>({static_cast<std::int64_t>(v.size())}, v));
  }
  std::vector<ir::TensorId> ops(std::string_view op, std::vector<ir::TensorId> in, ir::AttrMap a = {}) {
    ops::Specs specs;
    for (ir::TensorId t : in) specs.push_back({net.g.tensor(t).shape, net.g.tensor(t).dtype});
    const ops::Specs out = ops::op_info(*ops::find_op(op)).infer(a, op, specs);
    const auto node = static_cast<std::int32_t>(net.g.nodes.size());
    std::vector<ir::TensorId> ys;
    for (std::size_t k = 0; k < out.size(); ++k)
      ys.push_back(net.g.add_tensor({"y" + std::to_string(node) + "_" + std::to_string(k), out[k].shape, out[k].dtype, ir::TensorKind::intermediate,
                                     node, static_cast<std::int32_t>(k), {}}));
    net.g.nodes.push_back({"n" + std::to_string(node), std::string(op), std::move(in), ys, std::move(a)});
    return ys;
  }
  ir::TensorId op(std::string_view op, std::vector<ir::TensorId> in, ir::AttrMap a = {}) { return ops(op, std::move(in), std::move(a)).at(0); }

  template <class Target>
  program::CompiledProgram compile() const {
    program::CompileOptions o;
    o.evaluator = evaluator_for<Target>();
    o.verify = true;
    return program::compile(net.g, describe_target<Target>(), o);
  }
  template <class Target>
  std::vector<Tensor> run() const {
    runtime::ProgramRunner r(compile<Target>(), &net.src, runtime::factories_for<Target>());
    return r.run(inputs);
  }
};

ir::AttrValue ints(std::initializer_list<std::int64_t> v) {
  ir::AttrList l;
  for (std::int64_t x : v) l.emplace_back(x);
  return l;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  const Tensor c = t.to(dtype_of_v<T>);
  return std::vector<T>(c.data<T>(), c.data<T>() + c.numel());
}

int kernels_of(const program::CompiledProgram& p, std::string_view kind) {
  int n = 0;
  for (const auto& part : p.partitions)
    for (const auto& k : part.kernels) n += k.kind == kind && !part.fallback;
  return n;
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

// The batched_mm experts block of two tokens, three experts (H = 2, I = 1), top-2 renormalised:
// router scores pick experts {0, 2} for token 0 and {1, 0} for token 1.
struct TinyMoe {
  Net n;
  ir::TensorId y, h;
  // gate_up[e] = [[g0, g1], [u0, u1]]; down[e] = [[d0], [d1]].
  const std::vector<float> gate_up = {1, 0, 0, 1, /**/ 0.5f, 0.5f, 1, 1, /**/ -1, 2, 2, 0};
  const std::vector<float> down = {1, -1, /**/ 2, 0.5f, /**/ -0.5f, 3};
  const std::vector<float> x = {1, 2, -1, 0.5f};
  const std::vector<float> scores = {2, -1, 1, /**/ 0.5f, 3, -2};

  explicit TinyMoe(bool expose_h = false, bool split = false) {
    const ir::TensorId xi = n.input(x, {2, 2});
    const ir::TensorId probs = n.op("aten.softmax.int", {n.input(scores, {2, 3})}, test::attrs({{"dim", -1}}));
    const auto top = n.ops("aten.topk.default", {probs}, test::attrs({{"k", 2}}));
    const ir::TensorId den = n.op("aten.sum.dim_IntList", {top[0]}, test::attrs({{"dim", ints({-1})}, {"keepdim", true}}));
    const ir::TensorId w = n.op("aten.reshape.default", {n.op("aten.div.Tensor", {top[0], den})}, test::attrs({{"shape", ints({-1})}}));
    const ir::TensorId ids = n.op("aten.reshape.default", {top[1]}, test::attrs({{"shape", ints({-1})}}));
    const ir::TensorId tok = n.indices({0, 0, 1, 1});
    const ir::TensorId zeros = n.op("aten.zeros_like.default", {xi});
    auto gather = [&](ir::TensorId t, ir::TensorId idx) { return n.op("aten.index_select.default", {t, idx}, test::attrs({{"dim", 0}})); };
    auto matvec = [&](ir::TensorId m, ir::TensorId v) {
      const ir::TensorId col = n.op("aten.unsqueeze.default", {v}, test::attrs({{"dim", -1}}));
      return n.op("aten.squeeze.dim", {n.op("aten.bmm.default", {m, col})}, test::attrs({{"dim", -1}}));
    };
    const ir::TensorId gate_up_out = matvec(gather(n.weight(gate_up, {3, 2, 2}), ids), gather(xi, tok));
    const auto gu = split ? n.ops("aten.split.Tensor", {gate_up_out}, test::attrs({{"split_size", ints({1})}, {"dim", -1}}))
                          : n.ops("aten.chunk.default", {gate_up_out}, test::attrs({{"chunks", 2}, {"dim", -1}}));
    h = n.op("aten.mul.Tensor", {n.op("aten.silu.default", {gu[0]}), gu[1]});
    const ir::TensorId o = n.op("aten.mul.Tensor", {matvec(gather(n.weight(down, {3, 2, 1}), ids), h),
                                                    n.op("aten.unsqueeze.default", {w}, test::attrs({{"dim", -1}}))});
    y = n.op("aten.index_add.default", {zeros, tok, o}, test::attrs({{"dim", 0}}));
    n.net.g.outputs = {y};
    if (expose_h) n.net.g.outputs.push_back(h);
  }

  // By hand: token t, expert e: h = silu(g . x_t) * (u . x_t); out_t += w * h * down[e].
  std::vector<float> expected() const {
    std::vector<float> out(4, 0.0f);
    const int pick[2][2] = {{0, 2}, {1, 0}};
    for (int t = 0; t < 2; ++t) {
      const float* s = &scores[static_cast<std::size_t>(3 * t)];
      const float p0 = std::exp(s[pick[t][0]]), p1 = std::exp(s[pick[t][1]]);
      for (int k = 0; k < 2; ++k) {
        const int e = pick[t][k];
        const float wk = (k == 0 ? p0 : p1) / (p0 + p1);
        const float* gw = &gate_up[static_cast<std::size_t>(4 * e)];
        const float* xt = &x[static_cast<std::size_t>(2 * t)];
        const float hv = silu(gw[0] * xt[0] + gw[1] * xt[1]) * (gw[2] * xt[0] + gw[3] * xt[1]);
        for (int r = 0; r < 2; ++r) out[static_cast<std::size_t>(2 * t + r)] += wk * hv * down[static_cast<std::size_t>(2 * e + r)];
      }
    }
    return out;
  }
};

}  // namespace

TEST(Moe, TopKByHand) {
  meta::for_each(targets{}, [&]<class T>() {
    SCOPED_TRACE(std::string(T::name));
    Net n;
    const ir::TensorId x = n.input({1, 3, 2, 3, /**/ 5, NAN, -1, 0}, {2, 4});
    const auto top = n.ops("aten.topk.default", {x}, test::attrs({{"k", 2}}));
    const auto low = n.ops("aten.topk.default", {x}, test::attrs({{"k", 3}, {"largest", false}}));
    n.net.g.outputs = {top[0], top[1], low[0], low[1]};
    const auto r = n.run<T>();
    // Equal values: the lower index first; NaN above every number (PyTorch's order).
    EXPECT_EQ(values<float>(r[0])[0], 3.0f);
    EXPECT_EQ(values<float>(r[0])[1], 3.0f);
    EXPECT_TRUE(std::isnan(values<float>(r[0])[2]));
    EXPECT_EQ(values<float>(r[0])[3], 5.0f);
    EXPECT_EQ(values<std::int64_t>(r[1]), (std::vector<std::int64_t>{1, 3, 1, 0}));
    // Smallest first: NaN, being above every number, is never among the 3 smallest of 4.
    EXPECT_EQ(values<float>(r[2]), (std::vector<float>{1, 2, 3, -1, 0, 5}));
    EXPECT_EQ(values<std::int64_t>(r[3]), (std::vector<std::int64_t>{0, 2, 1, 2, 3, 0}));
  });
}

TEST(Moe, IndexAddByHand) {
  meta::for_each(targets{}, [&]<class T>() {
    SCOPED_TRACE(std::string(T::name));
    Net n;
    const ir::TensorId self = n.input({1, 1, 0, 0, 10, 10}, {3, 2});
    const ir::TensorId src = n.input({1, 2, 3, 4, 5, 6}, {3, 2});
    n.net.g.outputs = {n.op("aten.index_add.default", {self, n.indices({0, 2, 0}), src}, test::attrs({{"dim", 0}, {"alpha", 2}}))};
    // rows 0 += 2*[1,2] + 2*[5,6] (index 0 twice); row 2 += 2*[3,4]; row 1 untouched.
    EXPECT_EQ(values<float>(n.run<T>()[0]), (std::vector<float>{13, 17, 0, 0, 16, 18}));
  });
}

TEST(Moe, ExpertsBlockByHandAndFusedOnCpuAndOpenCL) {
  meta::for_each(targets{}, [&]<class T>() {
    SCOPED_TRACE(std::string(T::name));
    TinyMoe m;
    const std::vector<float> got = values<float>(m.n.run<T>()[0]), want = m.expected();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
    if constexpr (!std::is_same_v<T, ReferenceTarget>) {
      // One `moe` kernel on the target itself: no gathered weight copies, no index_add fallback.
      const auto p = m.n.compile<T>();
      EXPECT_EQ(kernels_of(p, "moe"), 1);
      EXPECT_EQ(kernels_of(p, "bmm") + kernels_of(p, "matmul") + kernels_of(p, "index_select"), 0);
      for (const auto& part : p.partitions) EXPECT_FALSE(part.fallback) << "a partition fell back to " << part.target;
    }
  });
}

TEST(Moe, PatternTakesTheSplitADecomposedExportMakesOfChunk) {
  TinyMoe m(false, /*split=*/true);
  EXPECT_EQ(kernels_of(m.n.compile<CpuTarget>(), "moe"), 1);
  const std::vector<float> got = values<float>(m.n.run<CpuTarget>()[0]), want = m.expected();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
}

TEST(Moe, PatternLeavesABlockWhoseInsideIsReadOutside) {
  TinyMoe m(/*expose_h=*/true);
  EXPECT_EQ(kernels_of(m.n.compile<CpuTarget>(), "moe"), 0);
  const std::vector<float> got = values<float>(m.n.run<CpuTarget>()[0]), want = m.expected();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
}

TEST(Moe, ErrorsNameTheProblem) {
  Net n;
  const ir::TensorId x = n.input({1, 2, 3}, {1, 3});
  NPUSIM_EXPECT_ERROR(n.ops("aten.topk.default", {x}, test::attrs({{"k", 4}})), "topk k is larger", "k <= 3");
  NPUSIM_EXPECT_ERROR(n.ops("aten.topk.default", {x}), "topk needs its 'k' attribute");
  NPUSIM_EXPECT_ERROR(n.ops("aten.index_add.default", {x, n.indices({0}), n.input({1, 2}, {1, 2})}, test::attrs({{"dim", 0}})),
                      "index_add source shape", "[1, 3]");
  // An index out of range at run time: the reference's error on every target.
  meta::for_each(targets{}, [&]<class T>() {
    SCOPED_TRACE(std::string(T::name));
    Net m;
    const ir::TensorId self = m.input({0, 0}, {2, 1});
    m.net.g.outputs = {m.op("aten.index_add.default", {self, m.indices({2}), m.input({1}, {1, 1})}, test::attrs({{"dim", 0}}))};
    NPUSIM_EXPECT_ERROR(m.run<T>(), "index_add index out of range");
  });
}

// tests/data/moe/tiny_block: the block as IR JSON in the torch_ir format, with synth weights and an
// expected output computed apart from npusim (tools/op_fixtures/make_moe_ir.py): through the
// reader and the passes (getitem, arange folding) to one `moe` kernel, at float32 and the halves.
TEST(Moe, TinyBlockFromIrJsonMatchesItsExpectedOutput) {
  const runtime::ModelDir c = runtime::ModelDir::open(test::data("moe/tiny_block"));
  meta::for_each(targets{}, [&]<class T>() {
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(T::name) + " " + std::string(dtype_name(dt)));
      program::CompileOptions o;
      o.compute = dt;
      o.evaluator = evaluator_for<T>();
      o.verify = true;
      const program::CompiledProgram p = program::compile(c.graph, describe_target<T>(), o);
      if constexpr (!std::is_same_v<T, ReferenceTarget>) {
        EXPECT_EQ(kernels_of(p, "moe"), 1);
      }
      runtime::ProgramRunner r(p, c.weights.get(), runtime::factories_for<T>());
      const harness::CaseResult res = harness::check_case(c, r, {.tolerance = dt == DType::f32 ? 1e-5 : 1e-2, .half_compute = dt != DType::f32});
      ASSERT_EQ(res.outputs.size(), 1u);
      EXPECT_LE(res.outputs[0].metrics.rel_l2, dt == DType::f32 ? 1e-5 : 1e-2);
      EXPECT_TRUE(res.pass);
    }
  });
}
