// Each compiler pass on real fixtures: what it changes, what it must leave alone, and that the
// graph still type-checks afterwards (passes::verify).
#include <set>

#include <nlohmann/json.hpp>

#include "../../common/compile_util.hpp"
#include "../../common/test_util.hpp"
#include "npusim/passes/basic.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/bn_fold.hpp"
#include "npusim/passes/broadcast_fold.hpp"
#include "npusim/passes/const_fold.hpp"
#include "npusim/passes/pad_channels.hpp"
#include "npusim/passes/select_rows.hpp"

using namespace npusim;
using npusim::test::data;

namespace {
ir::Graph read(const std::string& c) { return ir::read_ir_file(data(c + "/ir.json")); }
int count_op(const ir::Graph& g, std::string_view op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return n.op_type == op; }));
}
// x + expand(b): the expand folds into the add's broadcast.
ir::Graph expand_add_graph() {
  auto j = nlohmann::json::parse(R"({
    "graph_inputs": [{"name": "x", "shape": [2, 3, 8], "dtype": "float32"}, {"name": "b", "shape": [8], "dtype": "float32"}],
    "graph_outputs": [{"name": "add", "shape": [2, 3, 8], "dtype": "float32"}],
    "weights": [], "nodes": [
      {"name": "expand", "op_type": "aten.expand.default", "inputs": [{"name": "b", "shape": [8], "dtype": "float32", "producer_node": "b", "producer_output_idx": 0}],
       "outputs": [{"name": "expand", "shape": [2, 3, 8], "dtype": "float32"}], "attrs": {"size": [2, 3, 8]}},
      {"name": "add", "op_type": "aten.add.Tensor", "inputs": [
        {"name": "x", "shape": [2, 3, 8], "dtype": "float32", "producer_node": "x", "producer_output_idx": 0},
        {"name": "expand", "shape": [2, 3, 8], "dtype": "float32", "producer_node": "expand", "producer_output_idx": 0}],
       "outputs": [{"name": "add", "shape": [2, 3, 8], "dtype": "float32"}], "attrs": {}}]})");
  return ir::read_ir_string(j.dump(), "bcast");
}
// x [1, 4, 8]: a = relu(x); out = a * w (w [8]) then softmax over the last dim; rows = sum(a, dim 1),
// which reads every row of a.
ir::Graph rows_graph() {
  auto in = [](const char* n, nlohmann::json shape) {
    return nlohmann::json{{"name", n}, {"shape", shape}, {"dtype", "float32"}, {"producer_node", n}, {"producer_output_idx", 0}};
  };
  auto out = [](const char* n, nlohmann::json shape) { return nlohmann::json{{"name", n}, {"shape", shape}, {"dtype", "float32"}}; };
  nlohmann::json j = {
      {"graph_inputs", {out("x", {1, 4, 8}), out("w", {8})}},
      {"graph_outputs", {out("soft", {1, 4, 8}), out("rows", {1, 8})}},
      {"weights", nlohmann::json::array()},
      {"nodes",
       {{{"name", "a"}, {"op_type", "aten.relu.default"}, {"inputs", {in("x", {1, 4, 8})}}, {"outputs", {out("a", {1, 4, 8})}}, {"attrs", nlohmann::json::object()}},
        {{"name", "m"}, {"op_type", "aten.mul.Tensor"}, {"inputs", {in("a", {1, 4, 8}), in("w", {8})}}, {"outputs", {out("m", {1, 4, 8})}},
         {"attrs", nlohmann::json::object()}},
        {{"name", "soft"}, {"op_type", "aten.softmax.int"}, {"inputs", {in("m", {1, 4, 8})}}, {"outputs", {out("soft", {1, 4, 8})}}, {"attrs", {{"dim", -1}}}},
        {{"name", "rows"}, {"op_type", "aten.sum.dim_IntList"}, {"inputs", {in("a", {1, 4, 8})}}, {"outputs", {out("rows", {1, 8})}},
         {"attrs", {{"dim", {1}}, {"keepdim", false}}}}}}};
  return ir::read_ir_string(j.dump(), "rows");
}
}  // namespace

// The region grows back from the output while every reader of a node is in it: relu's output is
// also summed over the rows, so the select goes between relu and mul.
TEST(Passes, SelectOutputRowStopsWhereEveryRowIsStillRead) {
  ir::Graph g = rows_graph();
  const passes::RowSelection r = passes::select_output_row(g, 0, "row");
  EXPECT_EQ(r.nodes, 2u);  // mul, softmax
  EXPECT_EQ(r.selects, 1u);
  EXPECT_EQ(r.input, "row");
  ASSERT_EQ(g.inputs.size(), 3u);
  EXPECT_EQ(g.tensor(g.inputs[2]).shape, Shape{1});
  EXPECT_EQ(g.tensor(g.inputs[2]).dtype, DType::i64);
  ASSERT_EQ(count_op(g, "aten.index_select.default"), 1);
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 1, 8}));
  EXPECT_EQ(g.tensor(g.outputs[1]).shape, (Shape{1, 8}));  // the other output is unchanged
  EXPECT_EQ(g.tensor(*g.find("a")).shape, (Shape{1, 4, 8}));
  // Runs: the selected output is that row of the whole one.
  Tensor x = Tensor::empty(DType::f32, {1, 4, 8}), w = Tensor::empty(DType::f32, {8});
  for (std::int64_t i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::int64_t i = 0; i < 8; ++i) w.data<float>()[i] = 0.25f * static_cast<float>(i);
  auto whole = runner_for<ReferenceTarget>::make(test::compile_reference(rows_graph()), nullptr)->run(std::vector<Tensor>{x, w});
  auto one = runner_for<ReferenceTarget>::make(test::compile_reference(g), nullptr);
  for (std::int64_t row = 0; row < 4; ++row) {
    auto o = one->run(std::vector<Tensor>{x, w, Tensor::from_values<std::int64_t>({1}, std::vector<std::int64_t>{row})});
    for (std::int64_t i = 0; i < 8; ++i) EXPECT_EQ(o[0].data<float>()[i], whole[0].data<float>()[row * 8 + i]) << row << "," << i;
    for (std::int64_t i = 0; i < 8; ++i) EXPECT_EQ(o[1].data<float>()[i], whole[1].data<float>()[i]);
  }
}

TEST(Passes, SelectOutputRowRefusesWhatIsNotComputedRowByRow) {
  ir::Graph g = rows_graph();
  // `rows` is a sum over dim 1: every row of a in each of its values.
  NPUSIM_EXPECT_ERROR(passes::select_output_row(g, 1, "row"), "does not compute it row by row", "rows");
  NPUSIM_EXPECT_ERROR(passes::select_output_row(g, 2, "row"), "no such graph output");
  EXPECT_EQ(g.inputs.size(), 2u);  // nothing added by the refusals
}

TEST(Passes, NormalizeInplaceRenamesInPlaceVariants) {
  ir::Graph g = read("models/resnet18");
  EXPECT_EQ(count_op(g, "aten.relu_.default"), 17);
  EXPECT_EQ(passes::normalize_inplace(g), 25);  // 17 relu_ + 8 add_
  EXPECT_EQ(count_op(g, "aten.relu_.default"), 0);
  EXPECT_EQ(count_op(g, "aten.add.Tensor"), 8);
  ir::Graph h = read("ops/hardtanh_relu6");
  EXPECT_EQ(passes::normalize_inplace(h), 1);
  EXPECT_EQ(h.nodes[0].op_type, "aten.hardtanh.default");
  passes::verify(h, "normalize_inplace");
}

TEST(Passes, RemoveNoopsDropsAssertsAliasesDropoutGetitem) {
  ir::Graph g = read("models/qwen2_tiny_decode");
  const int asserts = count_op(g, "aten._assert_tensor_metadata.default"), dropouts = count_op(g, "aten.dropout.default");
  const int aliases = count_op(g, "aten.alias.default"), getitems = count_op(g, "<built-in function getitem>");
  int removed = passes::remove_noops(g);
  EXPECT_EQ(removed, asserts + dropouts + aliases + getitems);
  for (const char* op : {"aten._assert_tensor_metadata.default", "aten.dropout.default", "<built-in function getitem>"}) EXPECT_EQ(count_op(g, op), 0) << op;
  passes::verify(g, "remove_noops");
}

TEST(Passes, RemoveNoopsKeepsGraphOutputNamesAsAliases) {
  ir::Graph g = read("ops/permute");  // output 'contiguous' comes from a no-op
  passes::remove_noops(g);
  passes::verify(g, "remove_noops");
  EXPECT_EQ(g.tensor(g.outputs[0]).name, "contiguous");
  EXPECT_EQ(count_op(g, "aten.alias.default"), 1);
}

TEST(Passes, BatchNormFoldsIntoConvAndAddsABias) {
  ir::Graph g = read("models/resnet18");
  std::vector<weights::Recipe> recipes;
  auto r = passes::fold_batch_norms(g, recipes);
  EXPECT_EQ(r.folded, 20);
  EXPECT_EQ(r.kept, 0);
  EXPECT_EQ(count_op(g, "aten.batch_norm.default"), 0);
  ASSERT_EQ(recipes.size(), 20u);
  EXPECT_EQ(recipes[0].kind, "bn_fold");
  EXPECT_EQ(recipes[0].inputs[1], "");  // torchvision convs have no bias: the fold adds one
  for (const auto& n : g.nodes) {
    if (n.op_type == "aten.conv2d.default") {
      EXPECT_EQ(n.inputs.size(), 3u) << n.name;
    }
  }
  passes::verify(g, "fold_batch_norm");
}

TEST(Passes, UnfoldableBatchNormStaysAKernel) {
  ir::Graph g = read("ops/batch_norm");  // input is a graph input, not a conv
  std::vector<weights::Recipe> recipes;
  auto r = passes::fold_batch_norms(g, recipes);
  EXPECT_EQ(r.folded, 0);
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(count_op(g, "aten.batch_norm.default"), 1);
  program::CompiledProgram p = test::compile_reference(read("ops/batch_norm"));
  EXPECT_EQ(p.partitions[0].kernels.size(), 1u);
  EXPECT_EQ(p.partitions[0].kernels[0].kind, "batch_norm");
}

TEST(Passes, DeadCodeIsRemovedLiveCodeKept) {
  auto j = nlohmann::json::parse(test::read_text(data("ops/cos_sin/ir.json")));
  // Make the graph output the cos branch only: sin and add become dead.
  j["graph_outputs"][0] = j["nodes"][0]["outputs"][0];
  ir::Graph g = ir::read_ir_string(j.dump(), "cos_sin");
  EXPECT_EQ(passes::eliminate_dead_code(g), 2);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "aten.cos.default");
}

TEST(Passes, ConstantFoldingEvaluatesCompileTimeValuesOnly) {
  ir::Graph g = read("ops/arange_full");
  EXPECT_EQ(passes::fold_constants(g, &ref::evaluate_node), 2);  // arange and full; the adds read a graph input
  EXPECT_EQ(count_op(g, "aten.arange.default"), 0);
  EXPECT_EQ(count_op(g, "aten.add.Tensor"), 2);
  EXPECT_EQ(g.constants.size(), 2u);
  passes::verify(g, "fold_constants");
  // Rotary tables depend on runtime positions: nothing to fold in a decode graph.
  ir::Graph d = read("models/qwen2_tiny_decode");
  passes::remove_noops(d);
  EXPECT_EQ(passes::fold_constants(d, &ref::evaluate_node), 0);
}

TEST(Passes, BroadcastFoldingRemovesExpandBeforeABroadcastingOp) {
  ir::Graph g = expand_add_graph();
  EXPECT_EQ(passes::fold_broadcasts(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.tensor(g.nodes[0].inputs[1]).name, "b");
  passes::verify(g, "fold_broadcasts");
  // An expand feeding cat (which needs the full shape) stays.
  ir::Graph c = read("ops/cat_class_token");
  EXPECT_EQ(passes::fold_broadcasts(c), 0);
}

TEST(Passes, ChannelPaddingPadsConvChainsAndUnpadsOutputs) {
  for (const char* c : {"ops/conv_dilated", "ops/conv2d_3x3_bias", "ops/conv_bn_relu", "ops/conv2d_7x7_s2_p3", "ops/max_pool2d_3x3_s2_p1"}) {
    SCOPED_TRACE(c);
    runtime::ModelDir k = runtime::ModelDir::open(data(c));
    auto t = describe_target<ReferenceTarget>();
    t.limits.channel_alignment_bytes = 128;  // 32 float32 channels: pads the 16-channel convs
    program::CompiledProgram p = program::compile(k.graph, t, test::reference_options());
    weights::BindOptions bo;
    bo.load_as = DType::f32;
    ref::InterpreterRunner plain(k.graph, k.bind(bo).tensors);
    runtime::ProgramRunner compiled(p, k.weights.get(), runtime::factories_for<ReferenceTarget>());
    auto in = k.inputs();
    auto a = plain.run(in), b = compiled.run(in);
    EXPECT_LE(harness::compare(b[0], a[0]).rel_l2, 1e-6);
    EXPECT_EQ(b[0].shape(), a[0].shape());
  }
  ir::Graph g = read("ops/conv_dilated");  // 16 -> 32 channels
  std::vector<weights::Recipe> recipes;
  EXPECT_EQ(passes::pad_channels(g, 32, recipes), 1);
  passes::verify(g, "pad_channels");
  EXPECT_EQ(recipes.size(), 2u);  // weight and bias
  bool saw = false;
  for (const auto& t : g.tensors) saw = saw || t.shape == Shape{1, 32, 12, 12};
  EXPECT_TRUE(saw);
}

// `npusim explain` re-derives the fallback verdicts on the graph run_passes() gives: it must be the
// graph compile() partitioned, with every pass (here with channel padding and a broadcast to fold).
TEST(Passes, RunPassesGivesTheGraphCompilePartitions) {
  for (const ir::Graph& in : {read("models/resnet18"), read("models/qwen2_tiny_decode"), read("ops/conv_dilated"), expand_add_graph()}) {
    SCOPED_TRACE(in.source);
    auto t = describe_target<ReferenceTarget>();
    t.limits.channel_alignment_bytes = 128;
    program::CompileOptions opt = test::reference_options();
    opt.force = partition::ForceFallback::parse("max_pool2d,add,expand");
    const program::CompiledProgram p = program::compile(in, t, opt);
    ir::Graph g = in;
    program::CompiledProgram scratch;
    program::run_passes(g, t, opt, scratch);
    EXPECT_EQ(static_cast<std::int64_t>(g.nodes.size()), p.stats.nodes_after_passes);
    std::multiset<std::string> after, parted;
    for (const ir::Node& n : g.nodes) after.insert(n.name);
    for (const program::Partition& part : p.partitions)
      for (const ir::Node& n : part.graph.nodes) parted.insert(n.name);
    EXPECT_EQ(after, parted);
    EXPECT_EQ(scratch.recipes.size(), p.recipes.size());
  }
}

TEST(Passes, VerifyCatchesABrokenGraph) {
  ir::Graph g = read("ops/add_relu");
  std::swap(g.nodes[0], g.nodes[1]);
  NPUSIM_EXPECT_ERROR(passes::verify(g, "swap"), "compiler pass 'swap' broke the graph");
}
