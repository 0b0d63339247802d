// Conformance, in the style of ggml's test-backend-ops: every registered op on every target of the
// build, at every compute dtype the target claims (Target::dtypes) and every weight format it reads
// (Target::weight_formats), on generated shapes with the edges (size 1, lengths that are no multiple
// of a vector or a tile, broadcasting, strided views), against the reference target's interpreter
// in float32 (itself checked against PyTorch's op fixtures: tests/e2e/test_reference_fixtures.cpp).
//
// Coverage comes from registration: the unary and binary op lists of ops/registry.hpp are walked, so
// a new pointwise op is tested here the day it is listed; the other ops have cases below (one line
// each), and Coverage.EveryRegisteredOpIsTested fails for an op that is in neither these cases nor a
// PyTorch fixture. A new target is one entry of test::build_targets (tests/common/build_targets.hpp).
// A case's op must also run on the target when the target lists it and does not refuse the node:
// a case that only passed on the fallback would not have tested the target's kernel.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

#include "../common/int8_graphs.hpp"
#include "../common/op_fixtures.hpp"
#include "../common/build_targets.hpp"
#include "../common/test_util.hpp"
#include "npusim/cpu.hpp"
#include "npusim/harness/compare.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/reference.hpp"
#include "npusim/target/reference/interpreter.hpp"
#if NPUSIM_WITH_OPENCL
#include "npusim/opencl.hpp"
#endif

using namespace npusim;

namespace {

using targets = test::build_targets;

// ---- graphs built by hand, inputs generated ------------------------------------------------------

enum class Values {
  real,      // [-4, 4), exact in bf16 (so in f16 and f32: every dtype reads the same numbers)
  positive,  // (0, 4], exact in bf16
  distinct,  // a permutation of multiples of 1/8: no ties for arg/min/max
  small_int  // {-2, -1, 1, 2}: comparisons meet equality often, exact everywhere
};

Tensor values(Shape s, Values kind, unsigned seed) {
  Tensor t = Tensor::empty(DType::f32, s);
  const std::int64_t n = t.numel();
  float* p = t.data<float>();
  std::mt19937 rng(seed);
  const std::vector<float> u = test::bf16_exact(static_cast<std::size_t>(n), seed);
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = u[static_cast<std::size_t>(i)];
    switch (kind) {
      case Values::real: p[i] = 4 * x; break;
      case Values::positive: p[i] = x == 0 ? 1.0f : 4 * std::fabs(x); break;
      case Values::distinct: p[i] = static_cast<float>(i - n / 2) / 8; break;
      case Values::small_int: p[i] = static_cast<float>(std::array{-2, -1, 1, 2}[static_cast<std::size_t>(rng() % 4)]); break;
    }
  }
  if (kind == Values::distinct) std::shuffle(p, p + n, rng);
  return t;
}

std::string shape_str(const Shape& s) {
  std::string r;
  for (std::int64_t d : s) r += (r.empty() ? "" : "x") + std::to_string(d);
  return r.empty() ? "scalar" : r;
}

struct Builder {
  test::OneNode net;  // the graph and its weights
  std::vector<Tensor> inputs;
  unsigned seed = 1;

  ir::TensorId input(Shape s, Values v = Values::real) {
    inputs.push_back(values(s, v, seed++));
    return net.input("x" + std::to_string(inputs.size()), s, DType::f32);
  }
  ir::TensorId weight(Shape s, Values v = Values::real) { return net.weight("w" + std::to_string(net.g.weights.size()), values(s, v, seed++)); }
  // A 1-D int64 weight of n indices in [0, hi), every one of them at least once when n >= hi.
  ir::TensorId indices(std::int64_t n, std::int64_t hi) {
    Tensor t = Tensor::empty(DType::i64, {n});
    for (std::int64_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = (i * 7 + 3) % hi;
    return net.weight("idx" + std::to_string(net.g.weights.size()), std::move(t));
  }
  // A node of `op` (an ATen name) whose outputs the op's own inference gives; all of them.
  std::vector<ir::TensorId> ops(std::string_view op, std::vector<ir::TensorId> in, ir::AttrMap a = {}) {
    const auto index = ops::find_op(op);
    if (!index) throw std::logic_error("conformance case names an unknown op " + std::string(op));
    ops::Specs specs;
    for (ir::TensorId t : in) specs.push_back({net.g.tensor(t).shape, net.g.tensor(t).dtype});
    const ops::Specs out = ops::op_info(*index).infer(a, op, specs);
    const auto node = static_cast<std::int32_t>(net.g.nodes.size());
    std::vector<ir::TensorId> ys;
    for (std::size_t k = 0; k < out.size(); ++k)
      ys.push_back(net.g.add_tensor({"y" + std::to_string(node) + "_" + std::to_string(k), out[k].shape, out[k].dtype, ir::TensorKind::intermediate, node,
                                     static_cast<std::int32_t>(k), {}}));
    net.g.nodes.push_back({"n" + std::to_string(node), std::string(op), std::move(in), ys, std::move(a)});
    net.g.outputs.clear();  // output() names them; the last node's by default
    return ys;
  }
  ir::TensorId op(std::string_view op, std::vector<ir::TensorId> in, ir::AttrMap a = {}) { return ops(op, std::move(in), std::move(a)).at(0); }
  void output(ir::TensorId t) {
    if (std::find(net.g.outputs.begin(), net.g.outputs.end(), t) == net.g.outputs.end()) net.g.outputs.push_back(t);
  }
};

ir::AttrMap attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> kv) { return test::attrs(kv); }
ir::AttrValue ints(std::initializer_list<std::int64_t> v) {
  ir::AttrList l;
  for (std::int64_t x : v) l.emplace_back(x);
  return l;
}

// A mixture-of-experts block as transformers' batched_mm experts export it (the `moe` pattern,
// fusion/patterns.hpp): router scores [T, E] -> softmax -> topk(K) -> renormalise; samples
// s = (token s / K, its expert); gather, gate/up, SwiGLU, down, weight, index_add into zeros.
// The scores are distinct multiples of 1/8, so every dtype routes to the same experts.
ir::TensorId moe_block(Builder& b, std::int64_t T, std::int64_t H, std::int64_t E, std::int64_t I, std::int64_t K, bool split = false) {
  const ir::TensorId x = b.input({T, H});
  const ir::TensorId probs = b.op("aten.softmax.int", {b.input({T, E}, Values::distinct)}, attrs({{"dim", -1}}));
  const auto top = b.ops("aten.topk.default", {probs}, attrs({{"k", K}}));
  const ir::TensorId den = b.op("aten.sum.dim_IntList", {top[0]}, attrs({{"dim", ints({-1})}, {"keepdim", true}}));
  const ir::TensorId w = b.op("aten.reshape.default", {b.op("aten.div.Tensor", {top[0], den})}, attrs({{"shape", ints({-1})}}));
  const ir::TensorId ids = b.op("aten.reshape.default", {top[1]}, attrs({{"shape", ints({-1})}}));
  const ir::TensorId ar = b.op("aten.unsqueeze.default", {b.op("aten.arange.default", {}, attrs({{"end", T}}))}, attrs({{"dim", 1}}));
  const ir::TensorId tok =
      b.op("aten.reshape.default", {b.op("aten.expand.default", {ar}, attrs({{"size", ints({-1, K})}}))}, attrs({{"shape", ints({-1})}}));
  const ir::TensorId zeros = b.op("aten.zeros_like.default", {x});
  auto gather = [&](ir::TensorId t, ir::TensorId idx) { return b.op("aten.index_select.default", {t, idx}, attrs({{"dim", 0}})); };
  auto matvec = [&](ir::TensorId m, ir::TensorId v) {
    const ir::TensorId col = b.op("aten.unsqueeze.default", {v}, attrs({{"dim", -1}}));
    return b.op("aten.squeeze.dim", {b.op("aten.bmm.default", {m, col})}, attrs({{"dim", -1}}));
  };
  const ir::TensorId gate_up = b.weight({E, 2 * I, H}), down = b.weight({E, H, I});
  const ir::TensorId gate_up_out = matvec(gather(gate_up, ids), gather(x, tok));
  const auto gu = split ? b.ops("aten.split.Tensor", {gate_up_out}, attrs({{"split_size", ints({I})}, {"dim", -1}}))
                        : b.ops("aten.chunk.default", {gate_up_out}, attrs({{"chunks", 2}, {"dim", -1}}));
  const ir::TensorId h = b.op("aten.mul.Tensor", {b.op("aten.silu.default", {gu[0]}), gu[1]});
  const ir::TensorId o = b.op("aten.mul.Tensor", {matvec(gather(down, ids), h), b.op("aten.unsqueeze.default", {w}, attrs({{"dim", -1}}))});
  return b.op("aten.index_add.default", {zeros, tok, o}, attrs({{"dim", 0}}));
}

struct Case {
  std::string name;
  std::string op;  // the op under test (its id), for coverage
  std::function<void(Builder&)> build;
  std::vector<std::string> weight_formats = {};  // also run with these block formats (linear)
  bool lowered = false;  // the compiler rewrites the op into others: none of its nodes may reach a fallback
};

// The shapes of the edges: one element, lengths that are no multiple of a vector (16 floats) or a
// tile, three dimensions.
const std::vector<Shape> pointwise_shapes = {{1}, {7}, {3, 17}, {2, 3, 33}};

std::vector<Case> make_cases() {
  std::vector<Case> cs;
  // Unary ops, from the registry's list: every shape, and two strided views (a transpose, a slice
  // with step 2) feeding the op.
  meta::for_each(ops::unary_ops{}, [&]<class Op>() {
    const std::string id(Op::id), aten(Op::aten[0]);
    const bool positive = id == "rsqrt" || id == "sqrt" || id == "reciprocal" || id == "log";
    ir::AttrMap a;
    if (id == "clamp") a = attrs({{"min", -0.5}, {"max", 0.5}});
    if (id == "clamp_min") a = attrs({{"min", -0.25}});
    if (id == "pow_scalar") a = attrs({{"exponent", 2.0}});
    if (id == "hardtanh") a = attrs({{"min_val", -0.5}, {"max_val", 2.0}});
    if (id == "leaky_relu") a = attrs({{"negative_slope", 0.125}});
    const Values v = positive ? Values::positive : Values::real;
    for (const Shape& s : pointwise_shapes)
      cs.push_back({id + "/" + shape_str(s), id, [=](Builder& b) { b.output(b.op(aten, {b.input(s, v)}, a)); }});
    cs.push_back({id + "/strided_t", id, [=](Builder& b) { b.output(b.op(aten, {b.op("aten.t.default", {b.input({17, 3}, v)})}, a)); }});
    cs.push_back({id + "/strided_slice", id, [=](Builder& b) {
                    const auto x = b.op("aten.slice.Tensor", {b.input({3, 34}, v)}, attrs({{"dim", 1}, {"start", 1}, {"end", 34}, {"step", 2}}));
                    b.output(b.op(aten, {x}, a));
                  }});
  });
  // Binary ops, from the registry's list: equal shapes, broadcasting both ways, a size-1 operand,
  // a strided (transposed) operand, and a scalar `other`.
  meta::for_each(ops::binary_ops{}, [&]<class Op>() {
    const std::string id(Op::id), aten(Op::aten[0]);
    const bool compare = id == "gt" || id == "lt" || id == "ge" || id == "le" || id == "eq" || id == "ne";
    const Values v = compare || id == "div" ? Values::small_int : Values::real;
    const std::vector<std::pair<Shape, Shape>> pairs = {{{1}, {1}}, {{3, 17}, {3, 17}}, {{3, 17}, {17}}, {{2, 1, 33}, {1, 4, 1}}, {{5, 1}, {1}}};
    for (const auto& pair : pairs) {
      const Shape sa = pair.first, sb = pair.second;  // (copies: Clang 14 captures no structured binding)
      cs.push_back({id + "/" + shape_str(sa) + "_" + shape_str(sb), id, [=](Builder& b) { b.output(b.op(aten, {b.input(sa, v), b.input(sb, v)})); }});
    }
    cs.push_back({id + "/strided_t", id, [=](Builder& b) {
                    b.output(b.op(aten, {b.op("aten.t.default", {b.input({17, 3}, v)}), b.input({3, 17}, v)}));
                  }});
    if (id != "maximum" && id != "minimum")
      cs.push_back({id + "/scalar_other", id, [=](Builder& b) { b.output(b.op(aten, {b.input({3, 17}, v)}, attrs({{"other", 1.0}}))); }});
  });
  // Everything else: a line per case.
  auto add = [&](std::string name, std::string op, std::function<void(Builder&)> f, std::vector<std::string> formats = {}) {
    cs.push_back({std::move(name), std::move(op), std::move(f), std::move(formats)});
  };
  for (const auto& mkn : std::vector<std::array<std::int64_t, 3>>{{1, 17, 33}, {5, 64, 33}, {1, 1, 1}}) {
    const std::int64_t m = mkn[0], k = mkn[1], n = mkn[2];
    add("addmm/" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n), "addmm",
        [=](Builder& b) { b.output(b.op("aten.addmm.default", {b.weight({n}), b.input({m, k}), b.weight({k, n})})); });
  }
  for (const auto& mkn : std::vector<std::array<std::int64_t, 3>>{{1, 64, 33}, {5, 96, 17}, {1, 32, 1}}) {
    const std::int64_t m = mkn[0], k = mkn[1], n = mkn[2];
    add("linear/" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n), "linear",
        [=](Builder& b) { b.output(b.op("aten.linear.default", {b.input({m, k}), b.weight({n, k}), b.weight({n})})); }, {"q8_0", "q4_0"});
  }
  add("matmul/batched_broadcast", "matmul", [](Builder& b) { b.output(b.op("aten.matmul.default", {b.input({2, 3, 17}), b.input({17, 5})})); });
  // Eager attention's products over grouped-query heads: HF's repeat_kv (unsqueeze, expand,
  // reshape: 2 KV heads for 6 query heads) feeding q @ k^T and p @ v (the gqa_matmul pattern).
  for (const bool trans : {true, false}) {
    add(std::string("matmul/gqa_repeat_kv") + (trans ? "_transposed" : ""), "matmul", [=](Builder& b) {
      const auto u = b.op("aten.unsqueeze.default", {b.input({1, 2, 5, 8})}, attrs({{"dim", 2}}));
      const auto e = b.op("aten.expand.default", {u}, attrs({{"size", ints({1, 2, 3, 5, 8})}}));
      const auto r = b.op("aten.reshape.default", {e}, attrs({{"shape", ints({1, 6, 5, 8})}}));
      if (trans) b.output(b.op("aten.matmul.default", {b.input({1, 6, 4, 8}), b.op("aten.transpose.int", {r}, attrs({{"dim0", 2}, {"dim1", 3}}))}));
      else b.output(b.op("aten.matmul.default", {b.input({1, 6, 4, 5}), r}));
    });
  }
  for (const char* op : {"argmin", "argmax"}) {
    const std::string aten = std::string("aten.") + op + ".default";
    add(std::string(op) + "/last", op, [=](Builder& b) { b.output(b.op(aten, {b.input({3, 17}, Values::distinct)}, attrs({{"dim", -1}}))); });
    add(std::string(op) + "/first_keepdim", op,
        [=](Builder& b) { b.output(b.op(aten, {b.input({5, 1, 3}, Values::distinct)}, attrs({{"dim", 0}, {"keepdim", true}}))); });
    add(std::string(op) + "/single", op, [=](Builder& b) { b.output(b.op(aten, {b.input({1, 1}, Values::distinct)}, attrs({{"dim", 1}}))); });
  }
  for (const char* op : {"amin", "amax"}) {
    const std::string aten = std::string("aten.") + op + ".default";
    add(std::string(op) + "/last", op, [=](Builder& b) { b.output(b.op(aten, {b.input({3, 17}, Values::distinct)}, attrs({{"dim", ints({-1})}}))); });
    add(std::string(op) + "/two_dims_keepdim", op,
        [=](Builder& b) { b.output(b.op(aten, {b.input({2, 3, 5}, Values::distinct)}, attrs({{"dim", ints({0, 2})}, {"keepdim", true}}))); });
  }
  for (const char* op : {"sum", "mean"}) {
    const std::string aten = std::string(op) == "sum" ? "aten.sum.dim_IntList" : "aten.mean.dim";
    add(std::string(op) + "/last", op, [=](Builder& b) { b.output(b.op(aten, {b.input({3, 33})}, attrs({{"dim", ints({-1})}}))); });
  }
  for (const char* op : {"log_softmax", "softmax"}) {
    const std::string aten = std::string("aten.") + op + ".int";
    for (const Shape& s : std::vector<Shape>{{1, 1}, {3, 17}, {2, 3, 33}})
      add(std::string(op) + "/" + shape_str(s), op, [=](Builder& b) { b.output(b.op(aten, {b.input(s)}, attrs({{"dim", -1}}))); });
    add(std::string(op) + "/dim0", op, [=](Builder& b) { b.output(b.op(aten, {b.input({5, 3})}, attrs({{"dim", 0}}))); });
  }
  add("t/2d", "t", [](Builder& b) { b.output(b.op("aten.t.default", {b.input({5, 3})})); });
  add("t/then_add", "t", [](Builder& b) { b.output(b.op("aten.add.Tensor", {b.op("aten.t.default", {b.input({17, 3})}), b.input({3, 17})})); });
  add("t/1d", "t", [](Builder& b) { b.output(b.op("aten.mul.Tensor", {b.op("aten.t.default", {b.input({7})}), b.input({7})})); });
  // Creation ops feed an op that reads an input (the compiler folds them into constants).
  add("zeros/add", "zeros", [](Builder& b) {
    b.output(b.op("aten.add.Tensor", {b.input({3, 17}), b.op("aten.zeros.default", {}, attrs({{"size", ints({3, 17})}}))}));
  });
  add("ones/mul_broadcast", "ones", [](Builder& b) {
    b.output(b.op("aten.mul.Tensor", {b.input({3, 17}), b.op("aten.ones.default", {}, attrs({{"size", ints({1, 17})}}))}));
  });
  add("scalar_tensor/add", "scalar_tensor", [](Builder& b) {
    b.output(b.op("aten.add.Tensor", {b.input({2, 5}), b.op("aten.scalar_tensor.default", {}, attrs({{"s", 1.5}}))}));
  });
  add("cat/odd_sizes", "cat", [](Builder& b) { b.output(b.op("aten.cat.default", {b.input({2, 3}), b.input({2, 17})}, attrs({{"dim", 1}}))); });
  add("permute/3d", "permute", [](Builder& b) { b.output(b.op("aten.permute.default", {b.input({2, 3, 17})}, attrs({{"dims", ints({2, 0, 1})}}))); });
  add("split/uneven", "split", [](Builder& b) {
    for (ir::TensorId y : b.ops("aten.split.Tensor", {b.input({3, 17})}, attrs({{"split_size", ints({5})}, {"dim", 1}}))) b.output(y);
  });
  add("split/sizes_dim0", "split", [](Builder& b) {
    for (ir::TensorId y : b.ops("aten.split_with_sizes.default", {b.input({7, 3})}, attrs({{"split_sizes", ints({1, 6})}, {"dim", 0}}))) b.output(y);
  });
  add("index_select/rows", "index_select",
      [](Builder& b) { b.output(b.op("aten.index_select.default", {b.input({5, 17}), b.indices(9, 5)}, attrs({{"dim", 0}}))); });
  add("index_select/last_dim", "index_select",
      [](Builder& b) { b.output(b.op("aten.index_select.default", {b.input({2, 3, 17}), b.indices(4, 17)}, attrs({{"dim", -1}}))); });
  // Mixture of experts (ops/moe.hpp): topk along the last dim and another, smallest first; index_add
  // with repeated indices; the `moe` pattern on the batched_mm experts block (moe_block below).
  add("topk/last_17", "topk", [](Builder& b) {
    for (ir::TensorId y : b.ops("aten.topk.default", {b.input({3, 17}, Values::distinct)}, attrs({{"k", 5}}))) b.output(y);
  });
  add("topk/dim0_smallest", "topk", [](Builder& b) {
    for (ir::TensorId y : b.ops("aten.topk.default", {b.input({6, 4}, Values::distinct)}, attrs({{"k", 2}, {"dim", 0}, {"largest", false}}))) b.output(y);
  });
  add("zeros_like/add", "zeros_like",
      [](Builder& b) { b.output(b.op("aten.add.Tensor", {b.input({3, 17}), b.op("aten.zeros_like.default", {b.input({3, 17})})})); });
  add("index_add/rows_repeated", "index_add", [](Builder& b) {
    b.output(b.op("aten.index_add.default", {b.input({5, 17}), b.indices(9, 5), b.input({9, 17})}, attrs({{"dim", 0}})));
  });
  add("index_add/last_dim_alpha", "index_add", [](Builder& b) {
    b.output(b.op("aten.index_add.default", {b.input({2, 3, 7}), b.indices(4, 7), b.input({2, 3, 4})}, attrs({{"dim", -1}, {"alpha", 2}})));
  });
  add("moe/batched_mm_3x17", "topk", [](Builder& b) { b.output(moe_block(b, 3, 17, 4, 5, 2)); });
  add("moe/decode_1", "topk", [](Builder& b) { b.output(moe_block(b, 1, 16, 4, 8, 2)); });
  add("moe/split_top3_of_5", "topk", [](Builder& b) { b.output(moe_block(b, 4, 24, 5, 6, 3, true)); });
  // SiLU*gate (the silu_gate pattern; the OpenCL target's silu_mul kernel where both operands are
  // contiguous): one element, a row that is no multiple of a work-item's 8 values, a block of a
  // prefill's shape, and a broadcast operand (the pointwise program).
  for (const Shape& s : std::vector<Shape>{{1}, {3, 17}, {16, 136}})
    add("silu_gate/" + shape_str(s), "silu", [=](Builder& b) { b.output(b.op("aten.mul.Tensor", {b.op("aten.silu.default", {b.input(s)}), b.input(s)})); });
  add("silu_gate/broadcast", "silu", [](Builder& b) { b.output(b.op("aten.mul.Tensor", {b.op("aten.silu.default", {b.input({3, 17})}), b.input({17})})); });
  // The model-zoo ops (issue 40): einsum equations of every kind, swin's window ops, the writes
  // through slices (functionalized) and the alias ops (rewritten into listed ops).
  auto einsum = [](std::string e) { return attrs({{"equation", std::move(e)}}); };
  // Diagonals (a label repeated in one operand): lowered to a stepped slice of the merged
  // occurrences, so that no einsum is left for the fallback; size 1, non-adjacent repeats, a label
  // three times, two repeated labels, a trace, and a diagonal feeding a product.
  auto add_lowered = [&](std::string name, std::function<void(Builder&)> f) { cs.push_back({std::move(name), "einsum", std::move(f), {}, true}); };
  add_lowered("einsum/diag_ii_i", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({5, 5})}, einsum("ii->i"))); });
  add_lowered("einsum/diag_size1", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({1, 1, 3})}, einsum("iij->ij"))); });
  add_lowered("einsum/diag_batched_bii", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({2, 7, 7})}, einsum("bii->bi"))); });
  add_lowered("einsum/diag_apart_iji", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({4, 3, 4})}, einsum("iji->ji"))); });
  add_lowered("einsum/diag_iii_and_jj", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({3, 2, 3, 2, 3})}, einsum("ijiji->ij"))); });
  add_lowered("einsum/trace_ii", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({17, 17})}, einsum("ii"))); });
  add_lowered("einsum/diag_times_matrix", [=](Builder& b) {
    b.output(b.op("aten.einsum.default", {b.input({3, 5, 5}), b.input({5, 4})}, einsum("bii,ik->bk")));
  });
  add_lowered("einsum/matmul_17", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({5, 17}), b.input({17, 3})}, einsum("ij,jk->ik"))); });
  add_lowered("einsum/maxvit_scores", [=](Builder& b) {
    b.output(b.op("aten.einsum.default", {b.input({1, 4, 2, 7, 8}), b.input({1, 4, 2, 7, 8})}, einsum("B G H I D, B G H J D -> B G H I J")));
  });
  add_lowered("einsum/transpose_out", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({2, 3, 4}), b.input({2, 4, 5})}, einsum("bij,bjk->bki"))); });
  add_lowered("einsum/trace_diag_sum", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({3, 3, 5})}, einsum("iij->j"))); });
  add_lowered("einsum/ellipsis_broadcast", [=](Builder& b) { b.output(b.op("aten.einsum.default", {b.input({2, 1, 6}), b.input({3, 6})}, einsum("...j,...j"))); });
  add_lowered("einsum/three_operands", [=](Builder& b) {
    b.output(b.op("aten.einsum.default", {b.input({2, 3}), b.input({4, 3, 5}), b.input({2, 5})}, einsum("bn,anm,bm->ba")));
  });
  auto index_weight = [](Builder& b, Tensor t) { return b.net.weight("idx" + std::to_string(b.net.g.weights.size()), std::move(t)); };
  add("index_tensor/swin_bias", "index_tensor", [=](Builder& b) {
    Tensor idx = Tensor::empty(DType::i64, {9, 9});
    for (std::int64_t i = 0; i < 81; ++i) idx.data<std::int64_t>()[i] = (i * 5 + 2) % 25;
    b.output(b.op("aten.index.Tensor", {b.input({25, 3}), index_weight(b, idx)}));
  });
  add("index_tensor/none_then_index_1", "index_tensor", [=](Builder& b) {
    ir::AttrMap a = attrs({{"_tensor_list_none_masks", ir::AttrValue(ir::AttrList{ir::AttrValue(ir::AttrList{true, false})})}});
    b.output(b.op("aten.index.Tensor", {b.input({2, 17, 1}), b.indices(5, 17)}, a));
  });
  add("pad/constant_nchw", "pad", [](Builder& b) { b.output(b.op("aten.pad.default", {b.input({1, 3, 5, 7})}, attrs({{"pad", ints({0, 0, 1, 2})}, {"value", 0.5}}))); });
  add("pad/reflect", "pad", [](Builder& b) { b.output(b.op("aten.pad.default", {b.input({2, 3, 17})}, attrs({{"pad", ints({2, 3})}, {"mode", "reflect"}}))); });
  add("pad/replicate_circular", "pad", [](Builder& b) {
    const auto x = b.op("aten.pad.default", {b.input({1, 2, 4, 5})}, attrs({{"pad", ints({1, 1, 2, 0})}, {"mode", "replicate"}}));
    b.output(b.op("aten.pad.default", {x}, attrs({{"pad", ints({2, 1})}, {"mode", "circular"}})));
  });
  add("reflection_pad/2d", "reflection_pad", [](Builder& b) { b.output(b.op("aten.reflection_pad2d.default", {b.input({1, 2, 5, 17})}, attrs({{"padding", ints({3, 1, 0, 4})}}))); });
  add("replication_pad/1d", "replication_pad", [](Builder& b) { b.output(b.op("aten.replication_pad1d.default", {b.input({2, 3, 7})}, attrs({{"padding", ints({1, 9})}}))); });
  add("pad_circular/2d", "pad_circular", [](Builder& b) { b.output(b.op("aten._pad_circular.default", {b.input({1, 1, 4, 5})}, attrs({{"pad", ints({2, 2, 1, 3})}}))); });
  add("roll/swin_shift", "roll", [](Builder& b) { b.output(b.op("aten.roll.default", {b.input({1, 7, 7, 4})}, attrs({{"shifts", ints({-3, -3})}, {"dims", ints({1, 2})}}))); });
  add("roll/flat", "roll", [](Builder& b) { b.output(b.op("aten.roll.default", {b.input({3, 17})}, attrs({{"shifts", ints({5})}}))); });
  add("linalg_vector_norm/normalize", "linalg_vector_norm", [](Builder& b) {
    const auto x = b.input({2, 3, 17});
    const auto n = b.op("aten.linalg_vector_norm.default", {x}, attrs({{"ord", 2.0}, {"dim", ints({-1})}, {"keepdim", true}}));
    const auto c = b.op("aten.clamp_min.default", {n}, attrs({{"min", 1e-12}}));
    b.output(b.op("aten.div.Tensor", {x, b.op("aten.expand_as.default", {c, x})}));
  });
  add("linalg_vector_norm/inf_all", "linalg_vector_norm", [](Builder& b) { b.output(b.op("aten.linalg_vector_norm.default", {b.input({3, 17})}, attrs({{"ord", "inf"}}))); });
  add("masked_fill/swin_mask", "masked_fill", [](Builder& b) {
    const auto x = b.input({4, 17}, Values::small_int);
    const auto m = b.op("aten.gt.Scalar", {x}, attrs({{"other", 0.0}}));
    b.output(b.op("aten.masked_fill.Scalar", {x, m}, attrs({{"value", -100.0}})));
  });
  add("masked_fill/broadcast_mask", "masked_fill", [](Builder& b) {
    const auto m = b.op("aten.lt.Scalar", {b.input({17}, Values::small_int)}, attrs({{"other", 0.0}}));
    b.output(b.op("aten.masked_fill.Scalar", {b.input({3, 17}), m}, attrs({{"value", 2.5}})));
  });
  add("masked_fill/size1", "masked_fill", [](Builder& b) {
    const auto m = b.op("aten.gt.Scalar", {b.input({1}, Values::small_int)}, attrs({{"other", 0.0}}));
    b.output(b.op("aten.masked_fill.Scalar", {b.input({1}), m}, attrs({{"value", -1.5}})));
  });
  add("masked_fill/tensor_value_strided_self", "masked_fill", [](Builder& b) {
    const auto m = b.op("aten.ne.Scalar", {b.input({3, 1}, Values::small_int)}, attrs({{"other", 1.0}}));
    b.output(b.op("aten.masked_fill.Tensor", {b.op("aten.t.default", {b.input({17, 3})}), m, b.input({})}));
  });
  // Inside a pointwise chain (eltwise_chain), with -inf before a softmax as attention masks do.
  add("masked_fill/chain_neg_inf", "masked_fill", [](Builder& b) {
    const auto x = b.input({2, 3, 17});
    const auto m = b.op("aten.lt.Scalar", {b.input({3, 17}, Values::small_int)}, attrs({{"other", 0.0}}));
    const auto f = b.op("aten.masked_fill.Scalar", {b.op("aten.mul.Tensor", {x}, attrs({{"other", 0.5}})), m}, attrs({{"value", "-inf"}}));
    b.output(b.op("aten.softmax.int", {b.op("aten.add.Tensor", {f, x})}, attrs({{"dim", -1}})));
  });
  add("swapaxes/3d", "swapaxes", [](Builder& b) { b.output(b.op("aten.swapaxes.default", {b.input({2, 3, 17})}, attrs({{"axis0", -2}, {"axis1", -3}}))); });
  add("repeat_interleave/rows", "repeat_interleave", [](Builder& b) {
    b.output(b.op("aten.repeat_interleave.self_int", {b.input({3, 17})}, attrs({{"repeats", 2}, {"dim", 0}})));
  });
  add("repeat_interleave/flat_ids", "repeat_interleave", [](Builder& b) {
    b.output(b.op("aten.repeat_interleave.self_int", {b.indices(5, 9)}, attrs({{"repeats", 3}})));
  });
  add("expand_as/row", "expand_as", [](Builder& b) { b.output(b.op("aten.expand_as.default", {b.input({1, 17}), b.input({3, 17})})); });
  add("type_as/f32", "type_as", [](Builder& b) {
    const auto x = b.input({3, 17});
    b.output(b.op("aten.type_as.default", {b.op("aten.mul.Tensor", {x, x}), x}));
  });
  add("new_zeros/added", "new_zeros", [](Builder& b) {
    const auto x = b.input({3, 17});
    b.output(b.op("aten.add.Tensor", {x, b.op("aten.new_zeros.default", {x}, attrs({{"size", ints({3, 17})}}))}));
  });
  // Writes through slices, read afterwards through the base: swin's mask, swin v2's bias.
  add("copy/swin_mask_writes", "copy", [=](Builder& b) {
    const auto x = b.input({4, 4});
    const auto m = b.op("aten.new_zeros.default", {x}, attrs({{"size", ints({4, 4})}}));
    const auto s = b.op("aten.slice.Tensor", {b.op("aten.slice.Tensor", {m}, attrs({{"dim", 0}, {"start", 1}}))}, attrs({{"dim", 1}, {"end", 3}}));
    b.op("aten.copy_.default", {s, index_weight(b, Tensor::scalar<std::int64_t>(3))});
    b.output(b.op("aten.add.Tensor", {x, m}));
  });
  add("zero/bias_slice", "zero", [](Builder& b) {
    const auto c = b.op("aten.clone.default", {b.input({3, 17})});
    b.op("aten.zero_.default", {b.op("aten.slice.Tensor", {c}, attrs({{"dim", 1}, {"start", 5}, {"end", 11}}))});
    b.output(b.op("aten.mul.Tensor", {c}, attrs({{"other", 2.0}})));
  });
  add("fill/row", "fill", [](Builder& b) {
    const auto c = b.op("aten.clone.default", {b.input({3, 17})});
    b.op("aten.fill_.Scalar", {b.op("aten.select.int", {c}, attrs({{"dim", 0}, {"index", 1}}))}, attrs({{"value", 1.5}}));
    b.output(b.op("aten.neg.default", {c}));
  });
  // slice_scatter (what the writes above become): a step, a negative dim with a slice of one from
  // the end, a step over dim 0 with a transposed source, a broadcast (expanded) source under a
  // negative end, the whole tensor, integers, and a source of another dtype (torch's copy_ casts).
  auto scatter = [](Builder& b, ir::TensorId self, ir::TensorId src, ir::AttrMap a) { return b.op("aten.slice_scatter.default", {self, src}, std::move(a)); };
  add("slice_scatter/step2", "slice_scatter", [=](Builder& b) { b.output(scatter(b, b.input({3, 17}), b.input({3, 8}), attrs({{"dim", 1}, {"start", 1}, {"step", 2}}))); });
  add("slice_scatter/neg_dim_size1_from_end", "slice_scatter",
      [=](Builder& b) { b.output(scatter(b, b.input({2, 5, 3}), b.input({2, 1, 3}), attrs({{"dim", -2}, {"start", -1}}))); });
  add("slice_scatter/dim0_step3_strided_src", "slice_scatter", [=](Builder& b) {
    const auto src = b.op("aten.t.default", {b.input({17, 3})});
    b.output(scatter(b, b.input({8, 17}), src, attrs({{"dim", 0}, {"start", 1}, {"end", 8}, {"step", 3}})));
  });
  add("slice_scatter/broadcast_src_neg_end", "slice_scatter", [=](Builder& b) {
    const auto src = b.op("aten.expand.default", {b.input({2, 3, 1})}, attrs({{"size", ints({2, 3, 3})}}));
    b.output(scatter(b, b.input({2, 3, 9}), src, attrs({{"dim", -1}, {"start", 2}, {"end", -1}, {"step", 2}})));
  });
  add("slice_scatter/whole_then_mul", "slice_scatter", [=](Builder& b) {
    const auto x = b.input({1, 7});
    b.output(b.op("aten.mul.Tensor", {scatter(b, x, b.input({1, 7}), attrs({{"dim", 1}})), x}));
  });
  add("slice_scatter/int64", "slice_scatter", [=](Builder& b) {
    auto i64 = [&](Shape s) { return b.op("aten._to_copy.default", {b.input(s, Values::small_int)}, attrs({{"dtype", "int64"}})); };
    b.output(scatter(b, i64({5, 3}), i64({2, 3}), attrs({{"start", 3}})));
  });
  add("slice_scatter/f16_src_into_f32", "slice_scatter", [=](Builder& b) {
    const auto src = b.op("aten._to_copy.default", {b.input({3, 2})}, attrs({{"dtype", "float16"}}));
    b.output(scatter(b, b.input({3, 17}), src, attrs({{"dim", 1}, {"start", 15}})));
  });
  // Convolutions: every CPU candidate's territory (odd channels and images, depthwise, grouped,
  // strided, 3x3 stride 1 over more than 64 pixels, channel-blocked intermediates in a chain, a
  // residual added after, a max pool fused after), each at every dtype.
  struct ConvSpec {
    std::string name;
    std::int64_t n, c, h, w, k, kernel, stride, pad, groups;
  };
  auto conv = [](Builder& b, ir::TensorId x, std::int64_t c, std::int64_t k, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                 std::int64_t groups) {
    return b.op("aten.conv2d.default", {x, b.weight({k, c / groups, kernel, kernel}), b.weight({k})},
                attrs({{"stride", ints({stride, stride})}, {"padding", ints({pad, pad})}, {"groups", groups}}));
  };
  for (const ConvSpec& cv : std::vector<ConvSpec>{{"odd_3x3", 1, 3, 7, 5, 17, 3, 1, 1, 1},
                                                  {"depthwise", 1, 16, 9, 9, 16, 3, 1, 1, 16},
                                                  {"3x3_s1_100px", 1, 32, 10, 10, 32, 3, 1, 1, 1},
                                                  {"grouped_1x1_s2_batch2", 2, 8, 6, 6, 12, 1, 2, 0, 2},
                                                  {"7x7_s2", 1, 4, 11, 11, 6, 7, 2, 3, 1}})
    add("conv2d/" + cv.name, "conv2d", [=](Builder& b) { b.output(conv(b, b.input({cv.n, cv.c, cv.h, cv.w}), cv.c, cv.k, cv.kernel, cv.stride, cv.pad, cv.groups)); });
  add("conv2d/chain_blocked", "conv2d", [=](Builder& b) {
    const auto y = b.op("aten.relu.default", {conv(b, b.input({1, 16, 8, 8}), 16, 32, 3, 1, 1, 1)});
    b.output(conv(b, y, 32, 16, 3, 1, 1, 1));
  });
  add("conv2d/residual_relu", "conv2d", [=](Builder& b) {
    const auto x = b.input({1, 16, 9, 9});
    const auto y = conv(b, b.op("aten.relu.default", {conv(b, x, 16, 16, 3, 1, 1, 1)}), 16, 16, 3, 1, 1, 1);
    b.output(b.op("aten.relu.default", {b.op("aten.add.Tensor", {y, x})}));
  });
  add("conv2d/then_max_pool", "conv2d", [=](Builder& b) {
    const auto y = b.op("aten.relu.default", {conv(b, b.input({1, 3, 12, 12}), 3, 16, 3, 1, 1, 1)});
    b.output(b.op("aten.max_pool2d.default", {y}, attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}})));
  });
  add("conv2d/direct_max_pool", "conv2d", [=](Builder& b) {  // no relu between: conv_max_pool on every target
    const auto y = conv(b, b.input({1, 3, 9, 9}), 3, 8, 3, 1, 1, 1);
    b.output(b.op("aten.max_pool2d.default", {y}, attrs({{"kernel_size", ints({2, 2})}, {"stride", ints({2, 2})}})));
  });
  add("max_pool2d/odd", "max_pool2d", [](Builder& b) {
    b.output(b.op("aten.max_pool2d.default", {b.input({1, 3, 7, 5})}, attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}})));
  });
  add("avg_pool2d/odd", "avg_pool2d", [](Builder& b) {
    b.output(b.op("aten.avg_pool2d.default", {b.input({2, 3, 7, 5})}, attrs({{"kernel_size", ints({2, 2})}, {"stride", ints({2, 2})}})));
  });
  add("layer_norm/17", "layer_norm", [](Builder& b) {
    b.output(b.op("aten.layer_norm.default", {b.input({3, 17}), b.weight({17}), b.weight({17})}, attrs({{"normalized_shape", ints({17})}})));
  });
  add("where/broadcast", "where", [](Builder& b) {
    const auto c = b.op("aten.gt.Tensor", {b.input({3, 17}), b.input({17})});
    b.output(b.op("aten.where.self", {c, b.input({3, 17}), b.input({1})}));
  });
  return cs;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = make_cases();
  return c;
}

// NPUSIM_CONFORMANCE_CASES=slice_scatter,masked_fill/ runs the cases whose names contain one of
// the comma-separated parts (while working on a kernel); unset, every case.
bool selected(const Case& c) {
  const char* env = std::getenv("NPUSIM_CONFORMANCE_CASES");
  if (!env || !*env) return true;
  const std::string_view all(env);
  for (std::size_t at = 0; at <= all.size();) {
    const std::size_t end = std::min(all.find(',', at), all.size());
    if (end > at && c.name.find(all.substr(at, end - at)) != std::string::npos) return true;
    at = end + 1;
  }
  return false;
}

// ---- running a case on a target -------------------------------------------------------------------

struct Outcome {
  std::vector<Tensor> outputs;
  bool on_target = false;  // some kernel ran on the target itself (not only its fallback)
  // Nodes of `op` that ran on the fallback although the target lists the op and does not refuse
  // them, or although the compiler lowers the op (`lowered`): a kernel the case was written for
  // never ran (the results would still match).
  std::vector<std::string> missed;
};

template <class Target>
Outcome run_on(const Builder& b, DType compute, const std::string& format, std::string_view op = {}, bool lowered = false) {
  program::CompileOptions o;
  o.compute = compute;
  o.weight_quant.format = format;
  o.evaluator = evaluator_for<Target>();
  o.verify = true;
  const partition::TargetInfo info = describe_target<Target>();
  const program::CompiledProgram p = program::compile(b.net.g, info, o);
  Outcome r;
  for (const auto& part : p.partitions) {
    r.on_target |= !part.fallback && part.target == Target::name;
    if (!part.fallback) continue;
    for (const ir::Node& n : part.graph.nodes) {
      const auto i = ops::find_op(n.op_type);
      if (i && ops::op_info(*i).id == op && (lowered || (info.ops.at(*i) && !(info.refuse && info.refuse(part.graph, n))))) r.missed.push_back(n.name);
    }
  }
  runtime::ProgramRunner runner(p, &b.net.src, runtime::factories_for<Target>());
  r.outputs = runner.run(b.inputs);
  return r;
}

std::vector<Tensor> expected(const Builder& b) {
  std::unordered_map<ir::TensorId, Tensor> w;
  for (ir::TensorId t : b.net.g.weights) w[t] = b.net.src.t.at(b.net.g.tensor(t).name);
  ref::InterpreterRunner r(b.net.g, w);
  return r.run(b.inputs);
}

// Float outputs within a relative L2 of `tol`; integer and bool outputs exactly.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_EQ(got[i].shape(), want[i].shape());
    if (got[i].shape() != want[i].shape()) continue;
    const bool exact = !is_floating(want[i].dtype());
    const harness::Metrics m = harness::compare(got[i].to(DType::f32), want[i].to(DType::f32));
    if (want[i].numel() == 0) continue;
    EXPECT_TRUE(m.compared());
    if (exact) EXPECT_EQ(m.max_abs, 0.0) << "integer/bool output differs";
    else EXPECT_LE(m.rel_l2, tol) << "max_abs " << m.max_abs;
  }
}

struct Param {
  std::size_t target;
  DType dtype;
  std::string name;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.name; }

std::vector<Param> params() {
  std::vector<Param> v;
  std::size_t i = 0;
  meta::for_each(targets{}, [&]<class T>() {
    for (DType d : T::dtypes) v.push_back({i, d, std::string(T::name) + "_" + std::string(dtype_name(d))});
    ++i;
  });
  return v;
}

class Conformance : public ::testing::TestWithParam<Param> {};

template <class Target>
void run_all(DType dt) {
  const double tol = is_half(dt) ? 1e-2 : 1e-4;
  std::size_t ran = 0, on_target = 0, runs = 0;
  for (const Case& c : cases()) {
    if (!selected(c)) continue;
    ++runs;
    SCOPED_TRACE(c.name + " on " + std::string(Target::name) + " at " + std::string(dtype_name(dt)));
    Builder b;
    c.build(b);
    const std::vector<Tensor> want = expected(b);
    try {
      const Outcome got = run_on<Target>(b, dt, "", c.op, c.lowered);
      expect_close(got.outputs, want, tol);
      EXPECT_TRUE(got.missed.empty()) << c.op << (c.lowered ? " is lowered by the compiler" : " is listed by " + std::string(Target::name))
                                      << ", but these nodes ran on the fallback: " << ::testing::PrintToString(got.missed);
      ++ran, on_target += got.on_target;
      // Block weight formats: against the reference target reading the same blocks (the format's
      // own error is not the target's), and that one near float32 (it did quantize). The CPU's
      // block kernels also round the activations to int8 per block of 32, as llama.cpp does
      // (compute/gemv_q.hpp): 0.4-0.9% here, hence 2% (the format's own error is larger).
      if constexpr (requires { Target::weight_formats; }) {
        for (const std::string& f : c.weight_formats) {
          if (std::find(std::begin(Target::weight_formats), std::end(Target::weight_formats), f) == std::end(Target::weight_formats)) continue;
          SCOPED_TRACE("weights " + f);
          const Outcome q = run_on<Target>(b, dt, f);
          const Outcome qref = run_on<ReferenceTarget>(b, DType::f32, f);
          expect_close(q.outputs, qref.outputs, 2e-2);
          expect_close(qref.outputs, want, f == "q4_0" ? 0.2 : 2e-2);
          ++ran, on_target += q.on_target;
        }
      }
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
  // Every case ran, and the target itself (not only its fallback) ran most of them.
  EXPECT_GE(ran, runs);
  EXPECT_GE(on_target * 2, ran) << "most cases fell back to " << "the fallback target";
  std::printf("conformance: %s %s: %zu runs, %zu with kernels on the target\n", std::string(Target::name).c_str(), std::string(dtype_name(dt)).c_str(),
              ran, on_target);
}

}  // namespace

TEST_P(Conformance, EveryCaseMatchesTheReference) {
  meta::dispatch<void>(targets{}, GetParam().target, [&]<class T>() { run_all<T>(GetParam().dtype); });
}

INSTANTIATE_TEST_SUITE_P(Targets, Conformance, ::testing::ValuesIn(params()), [](const auto& info) { return info.param.name; });

// The generator reaches the edges it claims: sizes of one, odd lengths, broadcasting, strides.
TEST(Coverage, CasesIncludeTheEdges) {
  bool one = false, odd = false, strided = false, broadcast = false;
  for (const Case& c : cases()) {
    one |= c.name.find("/1") != std::string::npos;
    odd |= c.name.find("17") != std::string::npos;
    strided |= c.name.find("strided") != std::string::npos;
    broadcast |= c.name.find("broadcast") != std::string::npos || c.name.find("_17") != std::string::npos;
  }
  EXPECT_TRUE(one && odd && strided && broadcast);
}

// Every registered op is tested: by a case above or by a PyTorch fixture (tests/data/ops). Ops
// that need inputs this generator does not make are named with where they are tested.
TEST(Coverage, EveryRegisteredOpIsTested) {
  std::set<std::string> tested;
  for (const Case& c : cases()) tested.insert(c.op);
  for (const std::string& f : test::op_fixtures()) {
    const ir::Graph g = ir::read_ir_file(test::data("ops/" + f + "/ir.json"));
    for (const ir::Node& n : g.nodes)
      if (auto i = ops::find_op(n.op_type)) tested.insert(std::string(ops::op_info(*i).id));
  }
  // Tested elsewhere: the affine int8 ops (tests/e2e/test_int8.cpp, test_opencl_int8.cpp, against
  // PyTorch's quantized kernels), and ops the compiler removes or folds before any target sees them.
  const std::set<std::string> elsewhere = {"quantize_per_tensor", "dequantize_per_tensor", "qconv2d", "qlinear", "qadd", "qmax_pool2d", "qcat",
                                           "assert_tensor_metadata", "alias", "contiguous", "dropout", "getitem",
                                           // the HF rotary block (wrap_with_set_grad_enabled), accepted only with its exact
                                           // signature: the Qwen2 fixtures on every target (test_cpu_target, test_opencl)
                                           "rotary_embedding"};
  std::vector<std::string> missing;
  for (const ops::OpInfo& op : ops::op_infos())
    if (!tested.count(std::string(op.id)) && !elsewhere.count(std::string(op.id))) missing.push_back(std::string(op.id));
  EXPECT_TRUE(missing.empty()) << "ops with no conformance case and no fixture: " << ::testing::PrintToString(missing);
}

// Every fusion pattern a target of the build lists is exercised (the "and fused kernel" of the
// suite's rule): some case above, some PyTorch op fixture, or one of the model fixtures the
// targets' end-to-end tests run against PyTorch (ResNet-18, the tiny Qwen2 prefill and decode:
// test_cpu_target.cpp, test_opencl.cpp) compiles to a kernel of that kind on the target, at one of
// its dtypes. Compiling only: a pattern nothing produces would be a fused kernel no test runs.
TEST(Coverage, EveryFusionPatternIsExercised) {
  std::vector<ir::Graph> graphs;
  for (const Case& c : cases()) {
    Builder b;
    c.build(b);
    graphs.push_back(b.net.g);
  }
  for (const std::string& f : test::op_fixtures()) graphs.push_back(ir::read_ir_file(test::data("ops/" + f + "/ir.json")));
  for (const char* m : {"resnet18", "qwen2_tiny_prefill", "qwen2_tiny_decode"}) graphs.push_back(ir::read_ir_file(test::data("models/" + std::string(m) + "/ir.json")));
  meta::for_each(targets{}, [&]<class T>() {
    if constexpr (requires { typename T::pattern_list; }) {
      const partition::TargetInfo info = describe_target<T>();
      std::set<std::string> kinds;
      std::vector<std::string> formats = {""};  // float weights, and the block formats it reads (the models' linears)
      if constexpr (requires { T::weight_formats; }) formats.insert(formats.end(), std::begin(T::weight_formats), std::end(T::weight_formats));
      for (DType dt : T::dtypes)
        for (const std::string& f : formats)
          for (const ir::Graph& g : graphs) {
            program::CompileOptions o;
            o.compute = dt;
            o.evaluator = evaluator_for<T>();
            o.weight_quant.format = f;
            try {
              for (const auto& part : program::compile(g, info, o).partitions)
                if (!part.fallback)
                  for (const Kernel& k : part.kernels) kinds.insert(k.kind);
            } catch (const Error&) {  // a case the target cannot compile this way: the run tests say so
            }
          }
      // Listed but unreachable by construction: the reference's list (fusion::default_patterns)
      // puts add_relu before conv_add_relu, so a conv -> add -> relu fuses as add_relu there; the
      // CPU and OpenCL targets list conv_add_relu first, and are held to it.
      const std::set<std::pair<std::string_view, std::string_view>> unreachable = {{"reference", "conv_add_relu"}};
      std::vector<std::string> missing;
      meta::for_each(typename T::pattern_list{}, [&]<class P>() {
        if (!kinds.count(std::string(P::name)) && !unreachable.count({T::name, P::name})) missing.push_back(std::string(P::name));
      });
      EXPECT_TRUE(missing.empty()) << T::name << ": patterns no case or fixture produces: " << ::testing::PrintToString(missing);
    }
  });
}

