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
