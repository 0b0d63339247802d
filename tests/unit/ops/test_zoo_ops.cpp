// The ops the model-zoo sweep found missing (issue 40): einsum, index.Tensor, pad, roll,
// masked_fill, linalg_vector_norm, the alias ops and the writes, on hand-checkable values: the
// reference interpreter on the IR as written, and the compiled program (passes included) on the
// reference and CPU targets.
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "../../common/int8_graphs.hpp"
#include "npusim/cpu.hpp"
#include "npusim/passes/functionalize.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/lower_einsum.hpp"
#include "npusim/reference.hpp"
#include "npusim/target/reference/interpreter.hpp"

using namespace npusim;
using test::attrs;
using test::ints;

namespace {

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_values<float>(std::move(s), v); }
Tensor i64(Shape s, std::vector<std::int64_t> v) { return Tensor::from_values<std::int64_t>(std::move(s), v); }
Tensor iota(Shape s, float from = 0) {
  Tensor t = Tensor::empty(DType::f32, s);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from + static_cast<float>(i);
  return t;
}

std::vector<float> values(const Tensor& t) {
  const Tensor f = t.to(DType::f32);
  return {f.data<float>(), f.data<float>() + f.numel()};
}

// A graph of float inputs and weights, one or more nodes, the last node's output the result.
struct Net {
  test::OneNode n;
  std::vector<Tensor> inputs;
  ir::TensorId in(Tensor v) {
    const ir::TensorId t = n.input("x" + std::to_string(inputs.size()), v.shape(), v.dtype());
    inputs.push_back(std::move(v));
    return t;
  }
  ir::TensorId w(Tensor v) { return n.weight("w" + std::to_string(n.g.weights.size()), std::move(v)); }
  ir::TensorId op(const std::string& op, std::vector<ir::TensorId> ins, ir::AttrMap a = {}) {
    const auto index = ops::find_op(op);
    EXPECT_TRUE(index.has_value()) << op;
    ops::Specs specs;
    for (ir::TensorId t : ins) specs.push_back({n.g.tensor(t).shape, n.g.tensor(t).dtype});
    const ops::TensorSpec o = ops::op_info(*index).infer(a, op, specs).at(0);
    return n.node(op, std::move(ins), o.shape, std::move(a), o.dtype);
  }
  Tensor interpret() {
    std::unordered_map<ir::TensorId, Tensor> ws;
    for (ir::TensorId t : n.g.weights) ws[t] = n.src.t.at(n.g.tensor(t).name);
    ref::InterpreterRunner r(n.g, ws);
    return r.run(inputs).at(0);
  }
  template <class Target>
  Tensor compiled() {
    program::CompileOptions o;
    o.evaluator = &ref::evaluate_node;
    o.verify = true;
    const program::CompiledProgram p = program::compile(n.g, describe_target<Target>(), o);
    runtime::ProgramRunner r(p, &n.src, runtime::factories_for<Target>());
    return r.run(inputs).at(0);
  }
  // The interpreter, the compiled reference and the compiled CPU program agree on `want`.
  void expect(const Shape& shape, const std::vector<float>& want) {
    for (const auto& [what, got] : std::vector<std::pair<std::string, Tensor>>{
             {"interpreter", interpret()}, {"reference", compiled<ReferenceTarget>()}, {"cpu", compiled<CpuTarget>()}}) {
      SCOPED_TRACE(what);
      EXPECT_EQ(got.shape(), shape);
      const std::vector<float> v = values(got);
      ASSERT_EQ(v.size(), want.size());
      for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "element " << i;
    }
  }
};

ir::AttrMap eq(const std::string& e) { return attrs({{"equation", e}}); }

// ---- einsum ------------------------------------------------------------------------------------

TEST(Einsum, MatmulTraceDiagonalOuterBatchedByHand) {
  {
    Net t;  // [[0 1 2] [3 4 5]] @ [[0 1] [2 3] [4 5]] = [[10 13] [28 40]]
    t.op("aten.einsum.default", {t.in(iota({2, 3})), t.in(iota({3, 2}))}, eq("ij,jk->ik"));
    t.expect({2, 2}, {10, 13, 28, 40});
  }
  {
    Net t;  // implicit output: "ij,jk" is "ik"; "ba" alone is its transpose "ab"
    t.op("aten.einsum.default", {t.in(iota({2, 3}))}, eq("ba"));
    t.expect({3, 2}, {0, 3, 1, 4, 2, 5});
  }
  {
    Net t;  // trace of [[0 1 2] [3 4 5] [6 7 8]] = 12, and its diagonal
    t.op("aten.einsum.default", {t.in(iota({3, 3}))}, eq("ii"));
    t.expect({}, {12});
    Net d;
    d.op("aten.einsum.default", {d.in(iota({3, 3}))}, eq("ii->i"));
    d.expect({3}, {0, 4, 8});
  }
  {
    Net t;  // outer product, implicit output in ASCII order (upper case first): "i,A" -> "Ai"
    t.op("aten.einsum.default", {t.in(iota({2}, 1)), t.in(iota({3}, 1))}, eq("i,A"));
    t.expect({3, 2}, {1, 2, 2, 4, 3, 6});
  }
  {
    Net t;  // sum of everything, and a spaced, ellipsis batched product
    t.op("aten.einsum.default", {t.in(iota({2, 3}))}, eq("ij->"));
    t.expect({}, {15});
    Net b;  // b0: [[0 1]] @ [[0] [1]] = 1; b1: [[2 3]] @ [[2] [3]] = 13
    b.op("aten.einsum.default", {b.in(iota({2, 1, 2})), b.in(iota({2, 2, 1}))}, eq("... i j, ... j k -> ... i k"));
    b.expect({2, 1, 1}, {1, 13});
  }
  {
    Net t;  // a size-1 label broadcasts: [[1] [2]] * [10 20 30] summed over j = row sums of the product
    t.op("aten.einsum.default", {t.in(f32({2, 1}, {1, 2})), t.in(f32({3}, {10, 20, 30}))}, eq("ij,j->ij"));
    t.expect({2, 3}, {10, 20, 30, 20, 40, 60});
  }
}

// The lowering against the definition: the sum over every label assignment.
std::vector<float> einsum_by_definition(const std::string& e, const std::vector<Tensor>& xs) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  const ops::EinsumSpec s = ops::parse_einsum(e, shapes);
  const std::vector<int> labels = s.labels();
  std::map<int, std::int64_t> at;
  for (int l : labels) at[l] = 0;
  const Shape os = s.out_shape();
  std::vector<double> out(static_cast<std::size_t>(numel(os)), 0.0);
  for (;;) {
    double p = 1;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      std::int64_t off = 0;
      const Strides st = contiguous_strides(xs[k].shape());
      for (std::size_t d = 0; d < s.in[k].size(); ++d) off += (xs[k].shape()[d] == 1 ? 0 : at[s.in[k][d]]) * st[d];
      p *= xs[k].data<float>()[off];
    }
    std::int64_t o = 0;
    const Strides ost = contiguous_strides(os);
    for (std::size_t d = 0; d < s.out.size(); ++d) o += at[s.out[d]] * ost[d];
    out[static_cast<std::size_t>(o)] += p;
    std::size_t i = labels.size();
    while (i-- > 0) {
      const int l = labels[i];
      if (++at[l] < s.size[static_cast<std::size_t>(l)]) break;
      at[l] = 0;
    }
    if (i == static_cast<std::size_t>(-1)) break;
  }
  return {out.begin(), out.end()};
}

TEST(Einsum, LoweringMatchesTheDefinition) {
  struct C {
    std::string e;
    std::vector<Shape> shapes;
  };
  const std::vector<C> cases = {
      {"bgid,bgjd->bgij", {{2, 3, 4, 5}, {2, 3, 6, 5}}},   // maxvit's attention scores (spaces elsewhere)
      {"bgij,bgjd->bgid", {{2, 3, 4, 6}, {2, 3, 6, 5}}},   // and its weighted sum
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},          // a chain
      {"iij->j", {{3, 3, 4}}},                             // diagonal then sum
      {"iji->ji", {{4, 3, 4}}},                            // a diagonal over dimensions apart
      {"ijiji->ij", {{3, 2, 3, 2, 3}}},                    // a label three times, another twice
      {"bii,ik->bk", {{2, 5, 5}, {5, 3}}},                 // a diagonal into a product
      {"ijk,ik->j", {{3, 4, 5}, {3, 5}}},                  // batch label contracted away
      {"...a,ab->...b", {{2, 3, 4}, {4, 5}}},              // linear-like, ellipsis
      {"a...,a...->...", {{3, 2, 1}, {3, 1, 4}}},          // broadcasting ellipsis
      {"ab,cd->", {{2, 3}, {4, 5}}},                       // independent sums
      {"abc,c->ba", {{2, 3, 4}, {1}}},                     // size-1 contracted label
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                     // Hadamard
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},      // bilinear
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const C& c : cases) {
    SCOPED_TRACE(c.e);
    Net t;
    std::vector<ir::TensorId> ins;
    std::vector<Tensor> xs;
    for (const Shape& s : c.shapes) {
      Tensor x = Tensor::empty(DType::f32, s);
      for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
      xs.push_back(x);
      ins.push_back(t.in(x));
    }
    t.op("aten.einsum.default", ins, eq(c.e));
    std::vector<Shape> shapes = c.shapes;
    t.expect(ops::parse_einsum(c.e, shapes).out_shape(), einsum_by_definition(c.e, xs));
  }
}

TEST(Einsum, CompilerLowersItToMatmulsAndDiagonalsToSlices) {
  auto census = [](const std::string& e, std::vector<Shape> shapes) {
    Net t;
    std::vector<ir::TensorId> ins;
    for (const Shape& s : shapes) ins.push_back(t.in(Tensor::zeros(DType::f32, s)));
    t.op("aten.einsum.default", ins, eq(e));
    ir::Graph g = t.n.g;
    passes::lower_einsum(g);
    passes::verify(g, "lower_einsum");
    std::map<std::string, int> ops;
    for (const ir::Node& n : g.nodes) ++ops[n.op_type];
    EXPECT_EQ(g.nodes.back().outputs[0], t.n.g.outputs[0]) << "the last node writes the einsum's own output";
    return ops;
  };
  auto scores = census("B G H I D, B G H J D -> B G H I J", {{1, 4, 2, 7, 8}, {1, 4, 2, 7, 8}});
  EXPECT_EQ(scores["aten.matmul.default"], 1);
  EXPECT_EQ(scores["aten.einsum.default"], 0);
  EXPECT_EQ(scores["aten.permute.default"], 1);  // k to [B G H D J]
  auto chain = census("ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}});
  EXPECT_EQ(chain["aten.matmul.default"], 2);
  auto reduce = census("ijk->j", {{3, 4, 5}});
  EXPECT_EQ(reduce["aten.sum.dim_IntList"], 1);
  EXPECT_EQ(reduce["aten.matmul.default"], 0);
  auto diag = census("ii->i", {{3, 3}});  // [3, 3] -> [9] -> [0:9:4]
  EXPECT_EQ(diag["aten.einsum.default"], 0);
  EXPECT_EQ(diag["aten.slice.Tensor"], 1);
  EXPECT_EQ(diag["aten.permute.default"], 0);
  auto apart = census("iji->ij", {{4, 3, 4}});  // the second i brought next to the first
  EXPECT_EQ(apart["aten.permute.default"], 1);
  EXPECT_EQ(apart["aten.slice.Tensor"], 1);
}

TEST(Einsum, BadEquationsAreTypedErrors) {
  const std::vector<std::pair<std::string, std::vector<Shape>>> bad = {
      {"ij,jk->ik", {{2, 3}}},           // two terms, one operand
      {"ij->ik", {{2, 3}}},              // output label no operand has
      {"ij->ii", {{2, 3}}},              // output label twice
      {"ijk", {{2, 3}}},                 // rank
      {"ij,jk", {{2, 3}, {4, 2}}},       // sizes disagree
      {"ii", {{2, 3}}},                  // diagonal of a non-square
      {"i.j", {{2, 3}}},                 // stray dot
      {"1i", {{2, 3}}},                  // bad subscript
      {"...i...", {{2, 3}}},             // two ellipses
  };
  for (const auto& [e, shapes] : bad) {
    SCOPED_TRACE(e);
    ops::Specs specs;
    for (const Shape& s : shapes) specs.push_back({s, DType::f32});
    EXPECT_THROW(ops::op_info(ops::op_index_v<ops::Einsum>).infer(eq(e), "aten.einsum.default", specs), Error);
  }
}

// ---- index.Tensor --------------------------------------------------------------------------------

ir::AttrMap none_mask(std::vector<bool> m) {
  ir::AttrList l;
  for (bool b : m) l.emplace_back(b);
  return attrs({{"_tensor_list_none_masks", ir::AttrValue(ir::AttrList{ir::AttrValue(l)})}});
}

TEST(IndexTensor, GathersRowsColumnsAndBroadcastIndices) {
  {
    Net t;  // x[[2, 0, -1]] of a 3x2: rows 2, 0, 2
    t.op("aten.index.Tensor", {t.in(iota({3, 2})), t.w(i64({3}, {2, 0, -1}))});
    t.expect({3, 2}, {4, 5, 0, 1, 4, 5});
  }
  {
    Net t;  // x[:, [1, 1, 0]] of a 2x3
    t.op("aten.index.Tensor", {t.in(iota({2, 3})), t.w(i64({3}, {1, 1, 0}))}, none_mask({true, false}));
    t.expect({2, 3}, {1, 1, 0, 4, 4, 3});
  }
  {
    Net t;  // swin's bias gather: table [5, 2] by a [2, 2] index -> [2, 2, 2]
    t.op("aten.index.Tensor", {t.in(iota({5, 2})), t.w(i64({2, 2}, {4, 0, 1, 3}))});
    t.expect({2, 2, 2}, {8, 9, 0, 1, 2, 3, 6, 7});
  }
  {
    Net t;  // x[[0, 1], :, [2]] of a 2x3x4: indices broadcast to [2], not adjacent: B first -> [2, 3]
    t.op("aten.index.Tensor", {t.in(iota({2, 3, 4})), t.w(i64({2}, {0, 1})), t.w(i64({1}, {2}))}, none_mask({false, true, false}));
    t.expect({2, 3}, {2, 6, 10, 14, 18, 22});
  }
  {
    Net t;  // x[:, [[0], [1]], [2, 0]] of a 2x2x3: adjacent indices broadcast to [2, 2], in place -> [2, 2, 2]
    t.op("aten.index.Tensor", {t.in(iota({2, 2, 3})), t.w(i64({2, 1}, {0, 1})), t.w(i64({2}, {2, 0}))}, none_mask({true, false, false}));
    t.expect({2, 2, 2}, {2, 0, 5, 3, 8, 6, 11, 9});
  }
}

TEST(IndexTensor, OutOfRangeAndMasksAreErrors) {
  Net t;
  t.op("aten.index.Tensor", {t.in(iota({3, 2})), t.w(i64({1}, {3}))});
  EXPECT_THROW(t.interpret(), Error);
  EXPECT_THROW(t.compiled<CpuTarget>(), Error);
  ops::Specs bool_index = {{{3, 2}, DType::f32}, {{3}, DType::boolean}};
  EXPECT_THROW(ops::op_info(ops::op_index_v<ops::IndexTensor>).infer({}, "aten.index.Tensor", bool_index), Error);
}

// ---- pad, roll ------------------------------------------------------------------------------------

// pad(x, p, mode, value) on every engine of Net::expect gives `want` of `shape`.
void expect_pad(Tensor x, const std::string& mode, const ops::Ints& p, std::optional<double> value, const Shape& shape, const std::vector<float>& want) {
  SCOPED_TRACE(mode);
  Net t;
  ir::AttrList pl;
  for (auto v : p) pl.emplace_back(v);
  ir::AttrMap a = attrs({{"pad", ir::AttrValue(pl)}, {"mode", mode}});
  if (value) a.set("value", *value);
  t.op("aten.pad.default", {t.in(std::move(x))}, a);
  t.expect(shape, want);
}

TEST(Pad, EveryModeByHand) {
  auto pad = [](std::string mode, ops::Ints p, std::optional<double> value, Shape shape, std::vector<float> want) {
    expect_pad(f32({1, 3}, {1, 2, 3}), mode, p, value, shape, want);
  };
  pad("constant", {1, 2}, 9.0, {1, 6}, {9, 1, 2, 3, 9, 9});
  pad("constant", {0, 0, 1, 0}, std::nullopt, {2, 3}, {0, 0, 0, 1, 2, 3});
  pad("constant", {-1, 1}, std::nullopt, {1, 3}, {2, 3, 0});  // a negative pad crops
  pad("reflect", {2, 2}, std::nullopt, {1, 7}, {3, 2, 1, 2, 3, 2, 1});
  pad("replicate", {2, 1}, std::nullopt, {1, 6}, {1, 1, 1, 2, 3, 3});
  pad("circular", {2, 3}, std::nullopt, {1, 8}, {2, 3, 1, 2, 3, 1, 2, 3});
}

TEST(Pad, ModeSpecificSpellings) {
  Net t;
  t.op("aten.reflection_pad1d.default", {t.in(f32({1, 3}, {1, 2, 3}))}, attrs({{"padding", ints({1, 2})}}));
  t.expect({1, 6}, {2, 1, 2, 3, 2, 1});
  Net r;
  r.op("aten.replication_pad2d.default", {r.in(f32({1, 1, 1, 2}, {1, 2}))}, attrs({{"padding", ints({0, 1, 1, 0})}}));
  r.expect({1, 1, 2, 3}, {1, 2, 2, 1, 2, 2});
  Net c;
  c.op("aten._pad_circular.default", {c.in(f32({1, 3}, {1, 2, 3}))}, attrs({{"pad", ints({1, 1})}}));
  c.expect({1, 5}, {3, 1, 2, 3, 1});
}

// Two padded dimensions at once (the reference gathers through one index map per dimension).
TEST(Pad, TwoDimensionsByHand) {
  auto pad = [](std::string mode, ops::Ints p, std::optional<double> value, Shape shape, std::vector<float> want) {
    expect_pad(f32({2, 3}, {1, 2, 3, 4, 5, 6}), mode, p, value, shape, want);
  };
  pad("constant", {1, 0, 0, 1}, 7.0, {3, 4}, {7, 1, 2, 3, 7, 4, 5, 6, 7, 7, 7, 7});
  pad("circular", {1, 2, 1, 0}, std::nullopt, {3, 6}, {6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5});
  pad("replicate", {0, 1, 1, 0}, std::nullopt, {3, 4}, {1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6});
  pad("reflect", {1, 1, 1, 1}, std::nullopt, {4, 5}, {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2});
}

// slice_scatter along the first, a middle and the last dimension (the reference's [before, dim,
// after] view with one or both outer extents 1), with steps, and over an empty tensor.
TEST(SliceScatter, EveryDimensionByHand) {
  auto scatter = [](Tensor x, Tensor src, ir::AttrMap a, const std::vector<float>& want) {
    Net t;
    const Shape shape = x.shape();
    t.op("aten.slice_scatter.default", {t.in(std::move(x)), t.in(std::move(src))}, std::move(a));
    t.expect(shape, want);
  };
  scatter(iota({3, 2}, 1), f32({2, 2}, {10, 20, 30, 40}), attrs({{"dim", 0}, {"start", 1}}), {1, 2, 10, 20, 30, 40});
  scatter(iota({2, 4}, 1), f32({2, 2}, {10, 20, 30, 40}), attrs({{"dim", 1}, {"start", 1}, {"step", 2}}), {1, 10, 3, 20, 5, 30, 7, 40});
  scatter(iota({2, 2, 3}, 1), f32({2, 2, 2}, {10, 20, 30, 40, 50, 60, 70, 80}), attrs({{"dim", -1}, {"step", 2}}),
          {10, 2, 20, 30, 5, 40, 50, 8, 60, 70, 11, 80});
  scatter(iota({2, 3, 2}, 1), f32({2, 1, 2}, {10, 20, 30, 40}), attrs({{"dim", 1}, {"start", -2}, {"end", -1}}),
          {1, 2, 10, 20, 5, 6, 7, 8, 30, 40, 11, 12});
  scatter(iota({0, 3}), f32({0, 1}, {}), attrs({{"dim", 1}, {"start", 1}, {"end", 2}}), {});
}

TEST(Pad, TooMuchPaddingIsAnError) {
  ops::Specs x = {{{1, 3}, DType::f32}};
  const auto& info = ops::op_info(ops::op_index_v<ops::Pad>);
  EXPECT_THROW(info.infer(attrs({{"pad", ints({3, 0})}, {"mode", "reflect"}}), "aten.pad.default", x), Error);
  EXPECT_THROW(info.infer(attrs({{"pad", ints({1})}}), "aten.pad.default", x), Error);
  EXPECT_THROW(info.infer(attrs({{"pad", ints({0, 0, 0, 0, 0, 0})}}), "aten.pad.default", x), Error);
  EXPECT_THROW(info.infer(attrs({{"pad", ints({1, 1})}, {"mode", "mirror"}}), "aten.pad.default", x), Error);
}

TEST(Roll, FlatAndPerDimension) {
  {
    Net t;
    t.op("aten.roll.default", {t.in(f32({5}, {1, 2, 3, 4, 5}))}, attrs({{"shifts", ints({2})}}));
    t.expect({5}, {4, 5, 1, 2, 3});
  }
  {
    Net t;  // swin's cyclic shift: (-1, -1) over dims (0, 1) of [[0 1 2] [3 4 5]]
    t.op("aten.roll.default", {t.in(iota({2, 3}))}, attrs({{"shifts", ints({-1, -1})}, {"dims", ints({0, 1})}}));
    t.expect({2, 3}, {4, 5, 3, 1, 2, 0});
  }
  {
    Net t;  // no dims: the flattened tensor rolls by 7 (= 1 mod 6)
    t.op("aten.roll.default", {t.in(iota({2, 3}))}, attrs({{"shifts", ints({7})}}));
    t.expect({2, 3}, {5, 0, 1, 2, 3, 4});
  }
}

// ---- masked_fill, vector norm, alias ops ---------------------------------------------------------

TEST(MaskedFill, ScalarAndBroadcastMask) {
  Net t;  // swin: mask.masked_fill(mask != 0, -100)
  const ir::TensorId x = t.in(f32({2, 3}, {0, 1, 0, 2, 0, 3}));
  const ir::TensorId m = t.op("aten.ne.Scalar", {x}, attrs({{"other", 0.0}}));
  t.op("aten.masked_fill.Scalar", {x, m}, attrs({{"value", -100.0}}));
  t.expect({2, 3}, {0, -100, 0, -100, 0, -100});
  Net b;  // a [3] mask over [2, 3]
  const ir::TensorId y = b.in(iota({2, 3}));
  const ir::TensorId mask = b.op("aten.gt.Scalar", {b.in(f32({3}, {1, 0, 1}))}, attrs({{"other", 0.5}}));
  b.op("aten.masked_fill.Scalar", {y, mask}, attrs({{"value", 7}}));
  b.expect({2, 3}, {7, 1, 7, 7, 4, 7});
}

TEST(LinalgVectorNorm, OrdersAndDims) {
  auto norm = [](ir::AttrMap a, Shape shape, std::vector<float> want) {
    Net t;
    t.op("aten.linalg_vector_norm.default", {t.in(f32({2, 2}, {3, -4, 0, 1}))}, std::move(a));
    t.expect(shape, want);
  };
  norm({}, {}, {std::sqrt(26.0f)});
  norm(attrs({{"dim", ints({-1})}}), {2}, {5, 1});
  norm(attrs({{"dim", ints({-1})}, {"keepdim", true}}), {2, 1}, {5, 1});
  norm(attrs({{"ord", 1}, {"dim", ints({0})}}), {2}, {3, 5});
  norm(attrs({{"ord", "inf"}}), {}, {4});
  norm(attrs({{"ord", "-inf"}, {"dim", ints({1})}}), {2}, {3, 0});
  norm(attrs({{"ord", 0}}), {}, {3});
  norm(attrs({{"ord", 3.0}, {"dim", ints({1})}}), {2}, {std::cbrt(91.0f), 1});
}

TEST(AliasOps, SwapaxesExpandAsTypeAsNewZeros) {
  {
    Net t;
    t.op("aten.swapaxes.default", {t.in(iota({2, 3}))}, attrs({{"axis0", 0}, {"axis1", -1}}));
    t.expect({3, 2}, {0, 3, 1, 4, 2, 5});
  }
  {
    Net t;
    t.op("aten.expand_as.default", {t.in(f32({2, 1}, {1, 2})), t.in(iota({2, 3}))});
    t.expect({2, 3}, {1, 1, 1, 2, 2, 2});
  }
  {
    Net t;  // Gemma: the f32 norm output cast back to the activations' bf16 (values exact in bf16)
    const ir::TensorId y = t.op("aten.type_as.default", {t.in(f32({2}, {1.5f, -2.25f})), t.in(Tensor::zeros(DType::bf16, {1}))});
    EXPECT_EQ(t.n.g.tensor(y).dtype, DType::bf16);
    t.expect({2}, {1.5f, -2.25f});
  }
  {
    Net t;
    const ir::TensorId z = t.op("aten.new_zeros.default", {t.in(iota({2}))}, attrs({{"size", ints({2, 2})}}));
    t.op("aten.add.Tensor", {z, t.in(iota({2}))});
    t.expect({2, 2}, {0, 1, 0, 1});
  }
}

// repeat_interleave(repeats: int): MoE routing repeats each token id once per selected expert.
TEST(AliasOps, RepeatInterleaveAlongADimAndFlattened) {
  {
    Net t;  // [[0 1 2] [3 4 5]] rows twice each
    t.op("aten.repeat_interleave.self_int", {t.in(iota({2, 3}))}, attrs({{"repeats", 2}, {"dim", 0}}));
    t.expect({4, 3}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  }
  {
    Net t;  // along the last dim, with output_size given as torch passes it
    t.op("aten.repeat_interleave.self_int", {t.in(iota({2, 2}))}, attrs({{"repeats", 3}, {"dim", -1}, {"output_size", 6}}));
    t.expect({2, 6}, {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3});
  }
  {
    Net t;  // dim None: flattened first
    t.op("aten.repeat_interleave.self_int", {t.in(iota({2, 2}))}, attrs({{"repeats", 2}}));
    t.expect({8}, {0, 0, 1, 1, 2, 2, 3, 3});
  }
  {
    Net t;
    NPUSIM_EXPECT_ERROR(t.op("aten.repeat_interleave.self_int", {t.in(iota({2}))}, attrs({{"repeats", 2}, {"dim", 0}, {"output_size", 5}})),
                        "output_size disagrees with repeats");
  }
}

// ---- writes ----------------------------------------------------------------------------------------

TEST(Writes, SwinMaskWrittenThroughSlicesReachesLaterReaders) {
  Net t;  // m = x.new_zeros(3, 4); m[0:2, 2:4] = 5; m[2:, :1] = 7; y = m.view(12) + 0
  const ir::TensorId x = t.in(iota({2}));
  const ir::TensorId m = t.op("aten.new_zeros.default", {x}, attrs({{"size", ints({3, 4})}}));
  const ir::TensorId s1 = t.op("aten.slice.Tensor", {m}, attrs({{"dim", 0}, {"start", 0}, {"end", 2}}));
  const ir::TensorId s2 = t.op("aten.slice.Tensor", {s1}, attrs({{"dim", 1}, {"start", 2}, {"end", INT64_MAX}}));
  t.op("aten.copy_.default", {s2, t.w(i64({}, {5}))});
  const ir::TensorId s3 = t.op("aten.slice.Tensor", {m}, attrs({{"dim", 0}, {"start", -1}}));
  const ir::TensorId s4 = t.op("aten.slice.Tensor", {s3}, attrs({{"dim", 1}, {"start", 0}, {"end", 1}}));
  t.op("aten.copy_.default", {s4, t.w(f32({}, {7}))});
  const ir::TensorId v = t.op("aten.view.default", {m}, attrs({{"size", ints({12})}}));
  t.op("aten.add.Scalar", {v}, attrs({{"other", 0.0}}));
  t.expect({12}, {0, 0, 5, 5, 0, 0, 5, 5, 7, 0, 0, 0});
}

TEST(Writes, ZeroThroughASliceOfAClone) {
  Net t;  // swin v2: b = bias.clone(); b[2:4].zero_(); y = b * 1
  const ir::TensorId b = t.op("aten.clone.default", {t.in(iota({6}, 1))});
  const ir::TensorId s = t.op("aten.slice.Tensor", {b}, attrs({{"dim", 0}, {"start", 2}, {"end", 4}}));
  t.op("aten.zero_.default", {s});
  t.op("aten.mul.Tensor", {b}, attrs({{"other", 1.0}}));
  t.expect({6}, {1, 2, 0, 0, 5, 6});
}

TEST(Writes, FillAndCopyWithBroadcastAndCast) {
  Net t;  // y = x.clone(); y[:, 1:].fill_(3); y.copy_ of a row broadcast is checked separately
  const ir::TensorId y = t.op("aten.clone.default", {t.in(iota({2, 3}))});
  const ir::TensorId s = t.op("aten.slice.Tensor", {y}, attrs({{"dim", 1}, {"start", 1}}));
  t.op("aten.fill_.Scalar", {s}, attrs({{"value", 3}}));
  t.op("aten.neg.default", {y});
  t.expect({2, 3}, {0, -3, -3, -3, -3, -3});
  Net c;  // copy_(zeros [2, 3], an int64 row [3]): broadcast and cast
  const ir::TensorId z = c.op("aten.mul.Tensor", {c.in(iota({2, 3}))}, attrs({{"other", 0.0}}));
  const ir::TensorId w = c.op("aten.copy_.default", {z, c.w(i64({3}, {1, 2, 3}))});
  c.op("aten.neg.default", {w});
  c.expect({2, 3}, {-1, -2, -3, -1, -2, -3});
}

TEST(Writes, AWriteThroughATransposeIsARefusalByName) {
  Net t;  // y = x.clone(); y.t()[0].zero_(): a view npusim's tensors cannot alias
  const ir::TensorId y = t.op("aten.clone.default", {t.in(iota({2, 3}))});
  const ir::TensorId tr = t.op("aten.t.default", {y});
  t.op("aten.zero_.default", {t.op("aten.select.int", {tr}, attrs({{"dim", 0}, {"index", 0}}))});
  t.op("aten.neg.default", {y});
  try {
    t.interpret();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("view"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("n3"), std::string::npos) << "names the write node: " << e.what();
  }
  EXPECT_THROW(t.compiled<CpuTarget>(), Error);
}

TEST(Writes, FunctionalizeLeavesNoWriteAndCanonicalizeNoAlias) {
  Net t;
  const ir::TensorId b = t.op("aten.clone.default", {t.in(iota({6}))});
  const ir::TensorId s = t.op("aten.slice.Tensor", {b}, attrs({{"dim", 0}, {"start", 2}, {"end", 4}}));
  t.op("aten.zero_.default", {s});
  t.op("aten.swapaxes.default", {t.op("aten.unsqueeze.default", {b}, attrs({{"dim", 0}}))}, attrs({{"axis0", 0}, {"axis1", 1}}));
  ir::Graph g = t.n.g;
  EXPECT_EQ(passes::functionalize_writes(g), 1);
  EXPECT_EQ(passes::canonicalize_aliases(g), 2);  // zero_ -> zeros, swapaxes -> transpose
  passes::verify(g, "test");
  EXPECT_FALSE(passes::has_writes(g));
  int scatters = 0;
  for (const ir::Node& n : g.nodes) scatters += n.op_type == "aten.slice_scatter.default";
  EXPECT_EQ(scatters, 1);
  // The unsqueeze reads the written clone.
  EXPECT_EQ(g.tensor(g.nodes[g.nodes.size() - 2].inputs[0]).name.find("_written") != std::string::npos, true);
}

}  // namespace
