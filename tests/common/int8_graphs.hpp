// Test helpers for the affine int8 ops (ops/quantized.hpp): graphs of int8 nodes built by hand
// with their weights in memory, run on any target, and PyTorch's quantized-kernel fixtures
// (tests/data/int8, tools/int8_fixtures.py) checked on a target. The including TU includes the
// targets' entry headers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "test_util.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/runtime/int8.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/runtime/program_runner.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/target/reference/reference_target.hpp"
#include "npusim/weights/safetensors.hpp"

namespace npusim::test {

class MapSource final : public weights::WeightSource {
 public:
  std::map<std::string, Tensor> t;
  const std::string& path() const override {
    static const std::string p = "(test weights)";
    return p;
  }
  bool contains(const std::string& k) const override { return t.count(k) > 0; }
  std::pair<Shape, DType> meta(const std::string& k) const override { return {t.at(k).shape(), t.at(k).dtype()}; }
  Tensor load(const std::string& k) const override { return t.at(k); }
};

// A graph of one int8 node: its activation inputs are graph inputs, the rest weights in `src`.
struct OneNode {
  ir::Graph g;
  MapSource src;
  ir::TensorId input(const std::string& name, Shape s, DType d = DType::i8) {
    const ir::TensorId t = g.add_tensor({name, s, d, ir::TensorKind::input, -1, 0, {}});
    g.inputs.push_back(t);
    return t;
  }
  ir::TensorId weight(const std::string& name, Tensor v) {
    const ir::TensorId t = g.add_tensor({name, v.shape(), v.dtype(), ir::TensorKind::weight, -1, 0, name});
    g.weights.push_back(t);
    src.t[name] = std::move(v);
    return t;
  }
  ir::TensorId node(const std::string& op, std::vector<ir::TensorId> in, Shape out, ir::AttrMap attrs, DType d = DType::i8) {
    const auto i = static_cast<std::int32_t>(g.nodes.size());
    const ir::TensorId y = g.add_tensor({"y" + std::to_string(i), out, d, ir::TensorKind::intermediate, i, 0, {}});
    g.nodes.push_back({"n" + std::to_string(i), op, std::move(in), {y}, std::move(attrs)});
    g.outputs = {y};
    return y;
  }
  template <class Target>
  Tensor run(const std::vector<Tensor>& inputs) {
    program::CompileOptions o;
    o.evaluator = &ref::evaluate_node;
    const program::CompiledProgram p = program::compile(g, describe_target<Target>(), o);
    runtime::ProgramRunner r(p, &src, runtime::factories_for<Target>());
    return r.run(inputs).at(0);
  }
};

inline Tensor random_i8(Shape s, std::mt19937& rng, int lo = -128, int hi = 127) {
  Tensor t = Tensor::empty(DType::i8, s);
  std::uniform_int_distribution<int> d(lo, hi);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::int8_t>()[i] = static_cast<std::int8_t>(d(rng));
  return t;
}

inline ir::AttrMap attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> kv) {
  ir::AttrMap m;
  for (const auto& [k, v] : kv) m.set(k, v);
  return m;
}

inline ir::AttrValue ints(std::initializer_list<std::int64_t> v) {
  ir::AttrList l;
  for (auto x : v) l.push_back(ir::AttrValue(x));
  return ir::AttrValue(std::move(l));
}

inline bool same(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(DType::i32), y = b.to(DType::i32);
  if (x.shape() != y.shape()) return false;
  for (std::int64_t i = 0; i < x.numel(); ++i)
    if (x.data<std::int32_t>()[i] != y.data<std::int32_t>()[i]) {
      ADD_FAILURE() << "element " << i << ": " << x.data<std::int32_t>()[i] << " vs " << y.data<std::int32_t>()[i];
      return false;
    }
  return true;
}


// A case directory to quantize on Target: its graph and weights, the float compile options, a
// runner factory over Target's executors, and its inputs' specs.
template <class Target>
struct Int8Model {
  runtime::ModelDir c;
  partition::TargetInfo target = describe_target<Target>();
  program::CompileOptions opt;
  runtime::RunnerFactory make;
  std::vector<program::IoSpec> ins;
  explicit Int8Model(const std::string& case_dir) : c(runtime::ModelDir::open(data(case_dir), "auto")) {
    opt.evaluator = &ref::evaluate_node;
    make = [this](const program::CompiledProgram& p) -> std::unique_ptr<Runner> {
      return std::make_unique<runtime::ProgramRunner>(p, c.weights.get(), runtime::factories_for<Target>());
    };
    for (auto t : c.graph.inputs) ins.push_back({c.graph.tensor(t).name, c.graph.tensor(t).shape, c.graph.tensor(t).dtype});
  }
  // The int8 compile options from `calib_spec`'s calibration (int8_inputs: synthetic:N or a folder).
  program::CompileOptions int8_options(const std::string& calib_spec) const {
    program::CompileOptions q = opt;
    q.int8.ranges = runtime::calibrate(c.graph, target, opt, make, runtime::int8_inputs(calib_spec, ins, 0, 0, 0).sets, {}).ranges;
    return q;
  }
};

// A qconv2d of random int8 weights, scales and biases on a random input: Target against the
// reference, bit for bit.
struct QConvCase {
  std::int64_t n, c, h, w, k, kh, stride, pad, dil, groups;
  double out_scale;  // small: multipliers above 1
  std::int64_t out_min;
};
template <class Target>
void expect_qconv_matches_reference(const QConvCase& cs, std::mt19937& rng) {
  OneNode t;
  const auto x = t.input("x", {cs.n, cs.c, cs.h, cs.w});
  Tensor s = Tensor::empty(DType::f32, {cs.k}), b = Tensor::empty(DType::i32, {cs.k});
  std::uniform_real_distribution<float> sd(0.001f, 0.02f);
  std::uniform_int_distribution<int> bd(-5000, 5000);
  for (std::int64_t i = 0; i < cs.k; ++i) s.data<float>()[i] = sd(rng), b.data<std::int32_t>()[i] = bd(rng);
  const std::int64_t oh = (cs.h + 2 * cs.pad - cs.dil * (cs.kh - 1) - 1) / cs.stride + 1, ow = (cs.w + 2 * cs.pad - cs.dil * (cs.kh - 1) - 1) / cs.stride + 1;
  t.node("npusim.qconv2d", {x, t.weight("w", random_i8({cs.k, cs.c / cs.groups, cs.kh, cs.kh}, rng)), t.weight("s", s), t.weight("b", b)},
         {cs.n, cs.k, oh, ow},
         attrs({{"stride", ints({cs.stride, cs.stride})}, {"padding", ints({cs.pad, cs.pad})}, {"dilation", ints({cs.dil, cs.dil})},
                {"groups", ir::AttrValue(cs.groups)}, {"x_scale", ir::AttrValue(0.05)}, {"x_zero_point", ir::AttrValue(std::int64_t{-7})},
                {"out_scale", ir::AttrValue(cs.out_scale)}, {"out_zero_point", ir::AttrValue(std::int64_t{5})}, {"out_min", ir::AttrValue(cs.out_min)}}));
  const Tensor in = random_i8({cs.n, cs.c, cs.h, cs.w}, rng);
  EXPECT_TRUE(same(t.run<Target>({in}), t.run<ReferenceTarget>({in}))) << "conv " << cs.c << " -> " << cs.k << ", " << cs.kh << "x" << cs.kh;
}

// The geometries every target's convolution is held to: the stem's shape with odd sizes and a
// partial channel block, batch 2 with a ReLU-like clamp, dilation with groups, 1x1 with C not a
// multiple of 4 and multipliers above 1.
inline constexpr QConvCase qconv_cases[] = {
    {1, 3, 17, 15, 20, 7, 2, 3, 1, 1, 2.0, -128},
    {2, 64, 9, 9, 40, 3, 1, 1, 1, 1, 4.0, -100},
    {1, 16, 8, 8, 16, 3, 2, 1, 2, 2, 3.0, -128},
    {1, 5, 6, 7, 33, 1, 1, 0, 1, 1, 0.002, -128},
};

// A qlinear (3 rows), a qadd followed by a qmax_pool2d and a qcat on random codes: Target against
// the reference.
template <class Target>
void expect_linear_add_pool_match_reference(std::mt19937& rng) {
  {
    OneNode t;
    const auto x = t.input("x", {3, 70});
    Tensor s = Tensor::empty(DType::f32, {37}), b = Tensor::empty(DType::i32, {37});
    for (std::int64_t i = 0; i < 37; ++i) s.data<float>()[i] = 0.003f + 0.0001f * static_cast<float>(i), b.data<std::int32_t>()[i] = static_cast<std::int32_t>(i * 97 - 1800);
    t.node("npusim.qlinear", {x, t.weight("w", random_i8({37, 70}, rng)), t.weight("s", s), t.weight("b", b)}, {3, 37},
           attrs({{"x_scale", ir::AttrValue(0.1)}, {"x_zero_point", ir::AttrValue(std::int64_t{3})}, {"out_scale", ir::AttrValue(0.5)},
                  {"out_zero_point", ir::AttrValue(std::int64_t{-2})}}));
    const Tensor in = random_i8({3, 70}, rng);
    EXPECT_TRUE(same(t.run<Target>({in}), t.run<ReferenceTarget>({in}))) << "qlinear";
  }
  {
    OneNode t;
    const auto a = t.input("a", {1, 8, 7, 9}), b = t.input("b", {1, 8, 7, 9});
    const auto sum = t.node("npusim.qadd", {a, b}, {1, 8, 7, 9},
                            attrs({{"a_scale", ir::AttrValue(0.031)}, {"a_zero_point", ir::AttrValue(std::int64_t{-20})}, {"b_scale", ir::AttrValue(0.017)},
                                   {"b_zero_point", ir::AttrValue(std::int64_t{11})}, {"out_scale", ir::AttrValue(0.04)}, {"out_zero_point", ir::AttrValue(std::int64_t{-128})}}));
    t.node("npusim.qmax_pool2d", {sum}, {1, 8, 4, 5}, attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}));
    const Tensor x = random_i8({1, 8, 7, 9}, rng), y = random_i8({1, 8, 7, 9}, rng);
    EXPECT_TRUE(same(t.run<Target>({x, y}), t.run<ReferenceTarget>({x, y}))) << "qadd + qmax_pool2d";
  }
  {
    // qcat along the channels: one input rescaled down, one up (a multiplier above 1), one with
    // the output's parameters (copied).
    OneNode t;
    const auto a = t.input("a", {2, 3, 4, 5}), b = t.input("b", {2, 5, 4, 5}), c = t.input("c", {2, 1, 4, 5});
    ir::AttrList scales{ir::AttrValue(0.08), ir::AttrValue(0.01), ir::AttrValue(0.03)}, zps{ir::AttrValue(std::int64_t{4}), ir::AttrValue(std::int64_t{-9}),
                                                                                           ir::AttrValue(std::int64_t{-1})};
    t.node("npusim.qcat", {a, b, c}, {2, 9, 4, 5},
           attrs({{"dim", ir::AttrValue(std::int64_t{1})}, {"scales", ir::AttrValue(scales)}, {"zero_points", ir::AttrValue(zps)},
                  {"out_scale", ir::AttrValue(0.03)}, {"out_zero_point", ir::AttrValue(std::int64_t{-1})}}));
    const Tensor x = random_i8({2, 3, 4, 5}, rng), y = random_i8({2, 5, 4, 5}, rng), z = random_i8({2, 1, 4, 5}, rng);
    const Tensor got = t.run<Target>({x, y, z});
    EXPECT_TRUE(same(got, t.run<ReferenceTarget>({x, y, z}))) << "qcat";
    // The third input, with the output's parameters, is copied: channel 8 of the output is z.
    const Tensor g = got.to(DType::i32), zi = z.to(DType::i32);
    for (std::int64_t i = 0; i < 20; ++i) EXPECT_EQ(g.data<std::int32_t>()[8 * 20 + i], zi.data<std::int32_t>()[i]);
  }
}

// Every case of tests/data/int8 (PyTorch's quantized kernels, onednn engine) on Target: within one
// step of PyTorch's code everywhere, at most 5% of the codes one step off, the add and the max
// pool exact (onednn requantizes in float and adds the bias in float, where npusim's integer ops
// requantize in fixed point with the bias rounded to int32). Returns the number of cases.
template <class Target>
int expect_pytorch_int8_cases() {
  const ir::json cases = ir::json::parse(read_text(data("int8/cases.json")));
  int compared = 0;
  for (const auto& cs : cases.at("cases")) {
    const std::string name = cs.at("name");
    const auto f = weights::SafetensorsFile::open(data("int8/" + name + ".safetensors"));
    const std::string op = cs.at("op");
    OneNode t;
    std::vector<Tensor> ins;
    const Tensor want = f.tensor("y");
    if (op == "conv" || op == "linear") {
      const Tensor x = f.tensor("x"), w = f.tensor("w"), ws = f.tensor("w_scale"), bias = f.tensor("bias");
      const double xs = cs.at("x_scale");
      Tensor b = Tensor::empty(DType::i32, {w.shape()[0]});
      for (std::int64_t c = 0; c < w.shape()[0]; ++c)  // as the quantize_per_channel recipe rounds it
        b.data<std::int32_t>()[c] = static_cast<std::int32_t>(std::nearbyint(bias.data<float>()[c] * (1.0f / (static_cast<float>(xs) * ws.data<float>()[c]))));
      const std::int64_t zp = cs.at("out_zero_point");
      ir::AttrMap a = attrs({{"x_scale", ir::AttrValue(xs)}, {"x_zero_point", ir::AttrValue(cs.at("x_zero_point").get<std::int64_t>())},
                             {"out_scale", ir::AttrValue(cs.at("out_scale").get<double>())}, {"out_zero_point", ir::AttrValue(zp)},
                             {"out_min", ir::AttrValue(cs.at("relu").get<bool>() ? zp : std::int64_t{-128})}});
      if (op == "conv") {
        const std::int64_t st = cs.at("stride"), pd = cs.at("padding");
        a.set("stride", ints({st, st}));
        a.set("padding", ints({pd, pd}));
      }
      const auto xi = t.input("x", x.shape());
      t.node(op == "conv" ? "npusim.qconv2d" : "npusim.qlinear", {xi, t.weight("w", w), t.weight("s", ws), t.weight("b", b)}, want.shape(), a);
      ins = {x};
    } else if (op == "add") {
      const std::int64_t zp = cs.at("out_zero_point");
      const auto a = t.input("a", f.tensor("a").shape()), b = t.input("b", f.tensor("b").shape());
      t.node("npusim.qadd", {a, b}, want.shape(),
             attrs({{"a_scale", ir::AttrValue(cs.at("a_scale").get<double>())}, {"a_zero_point", ir::AttrValue(cs.at("a_zero_point").get<std::int64_t>())},
                    {"b_scale", ir::AttrValue(cs.at("b_scale").get<double>())}, {"b_zero_point", ir::AttrValue(cs.at("b_zero_point").get<std::int64_t>())},
                    {"out_scale", ir::AttrValue(cs.at("out_scale").get<double>())}, {"out_zero_point", ir::AttrValue(zp)},
                    {"out_min", ir::AttrValue(cs.at("relu").get<bool>() ? zp : std::int64_t{-128})}}));
      ins = {f.tensor("a"), f.tensor("b")};
    } else {
      const std::int64_t k = cs.at("kernel"), st = cs.at("stride"), pd = cs.at("padding");
      const auto x = t.input("x", f.tensor("x").shape());
      t.node("npusim.qmax_pool2d", {x}, want.shape(), attrs({{"kernel_size", ints({k, k})}, {"stride", ints({st, st})}, {"padding", ints({pd, pd})}}));
      ins = {f.tensor("x")};
    }
    const Tensor g = t.run<Target>(ins).to(DType::i32), e = want.to(DType::i32);
    EXPECT_EQ(g.shape(), e.shape()) << name;
    if (g.shape() != e.shape()) continue;
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < g.numel(); ++i) {
      const int d = std::abs(g.data<std::int32_t>()[i] - e.data<std::int32_t>()[i]);
      EXPECT_LE(d, 1) << name << " element " << i;
      off += d != 0;
    }
    EXPECT_LE(off * 20, g.numel()) << name << ": more than 5% of the codes differ by one";
    if (op == "max_pool" || op == "add") {
      EXPECT_EQ(off, 0) << name;  // no requantization choice there: exact
    }
    ++compared;
  }
  return compared;
}

}  // namespace npusim::test
