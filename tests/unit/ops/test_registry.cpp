#include <nlohmann/json.hpp>

#include "../../common/test_util.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/interpreter.hpp"

using namespace npusim;

TEST(Registry, FindsOpsByEveryAtenName) {
  ASSERT_TRUE(ops::find_op("aten.relu_.default"));
  EXPECT_EQ(ops::find_op("aten.relu_.default"), ops::find_op("aten.relu.default"));
  EXPECT_EQ(ops::op_info(*ops::find_op("aten.conv2d.default")).id, "conv2d");
  EXPECT_EQ(*ops::find_op("aten.conv2d.default"), ops::op_index_v<ops::Conv2d>);
  EXPECT_FALSE(ops::find_op("aten.frobnicate.default"));
}

TEST(Registry, SchemaDefaultsFillOmittedAttrs) {
  ir::AttrMap m;
  m.set("stride", ir::AttrValue(ir::AttrList{2, 2}));
  auto a = ops::read_attrs<ops::Conv2d::Attrs>(m, "aten.conv2d.default");
  EXPECT_EQ(a.stride, (ops::Ints{2, 2}));
  EXPECT_EQ(a.padding, (ops::Ints{0, 0}));
  EXPECT_EQ(a.dilation, (ops::Ints{1, 1}));
  EXPECT_EQ(a.groups, 1);

  ir::AttrMap mp;
  mp.set("kernel_size", ir::AttrValue(ir::AttrList{3, 3}));
  auto p = ops::read_attrs<ops::MaxPool2d::Attrs>(mp, "aten.max_pool2d.default");
  EXPECT_EQ(p.stride, (ops::Ints{3, 3}));  // stride defaults to kernel_size
  EXPECT_FALSE(p.ceil_mode);

  auto s = ops::read_attrs<ops::Slice::Attrs>(ir::AttrMap{}, "aten.slice.Tensor");
  EXPECT_EQ(s.end, INT64_MAX);
  EXPECT_EQ(s.step, 1);
  auto sm = ops::read_attrs<ops::Softmax::Attrs>(ir::AttrMap{}, "aten.softmax.int");
  EXPECT_FALSE(sm.dtype);
}

TEST(Registry, UnknownAttrIsAnErrorNotIgnored) {
  ir::AttrMap m;
  m.set("rounding_mode", ir::AttrValue("floor"));
  NPUSIM_EXPECT_ERROR(ops::read_attrs<ops::Div::Attrs>(m, "aten.div.Tensor"), "unknown attribute 'rounding_mode'", "aten.div.Tensor");
}

TEST(Registry, NonDefaultAttrWeDoNotImplementIsAnError) {
  ir::AttrMap m;
  m.set("training", ir::AttrValue(true));
  NPUSIM_EXPECT_ERROR(ops::read_attrs<ops::BatchNorm::Attrs>(m, "aten.batch_norm.default"), "attribute 'training'",
                      "does not implement", "found true");
  ir::AttrMap d;
  d.set("p", ir::AttrValue(0.1));
  d.set("train", ir::AttrValue(true));
  NPUSIM_EXPECT_ERROR(ops::read_attrs<ops::Dropout::Attrs>(d, "aten.dropout.default"), "attribute 'train'");
}

TEST(Registry, WrongAttrTypeIsReported) {
  ir::AttrMap m;
  m.set("dim", ir::AttrValue("last"));
  NPUSIM_EXPECT_ERROR(ops::read_attrs<ops::Softmax::Attrs>(m, "aten.softmax.int"), "attribute 'dim'", "an integer", "\"last\"");
}

TEST(Registry, UnknownOpInAGraphNamesTheNode) {
  auto j = nlohmann::json::parse(test::read_text(test::data("ops/relu/ir.json")));
  j["nodes"][0]["op_type"] = "aten.frobnicate.default";
  ir::Graph g = ir::read_ir_string(j.dump(), "relu.json");
  NPUSIM_EXPECT_ERROR(ops::check_graph(g), "1 op type(s) npusim has no definition for: aten.frobnicate.default (1 node, first 'relu')",
                      "node 'relu'", "relu.json");
}

// Every unknown op of a model in one error (op type, node count, first node), not only the first:
// three unknown types over five nodes of a chain, known ones between them.
TEST(Registry, EveryUnknownOpIsListedInOneError) {
  auto j = nlohmann::json::parse(test::read_text(test::data("ops/relu/ir.json")));
  nlohmann::json node = j["nodes"][0];
  j["nodes"] = nlohmann::json::array();
  const char* ops[] = {"aten.frob.default", "aten.relu.default", "aten.frob.default", "aten.twiddle.default", "aten.relu.default", "aten.frob.default",
                       "aten.zap.default"};
  std::string prev = "input";
  for (std::size_t i = 0; i < std::size(ops); ++i) {
    nlohmann::json n = node;
    n["name"] = "n" + std::to_string(i), n["op_type"] = ops[i];
    n["inputs"][0]["name"] = prev, n["inputs"][0]["producer_node"] = prev;
    n["outputs"][0]["name"] = "n" + std::to_string(i);
    prev = "n" + std::to_string(i);
    j["nodes"].push_back(n);
  }
  j["graph_outputs"][0]["name"] = prev;
  ir::Graph g = ir::read_ir_string(j.dump(), "chain.json");
  NPUSIM_EXPECT_ERROR(ops::check_graph(g), "the model uses 3 op type(s) npusim has no definition for: aten.frob.default (3 nodes, first 'n0'), "
                      "aten.twiddle.default (1 node, first 'n3'), aten.zap.default (1 node, first 'n6')", "chain.json");
  NPUSIM_EXPECT_ERROR((void)ref::Interpreter(g), "the model uses 3 op type(s)");
}

TEST(Registry, InferenceDisagreeingWithIrIsReported) {
  auto j = nlohmann::json::parse(test::read_text(test::data("ops/relu/ir.json")));
  j["nodes"][0]["op_type"] = "aten.sum.dim_IntList";
  ir::Graph g = ir::read_ir_string(j.dump(), "relu.json");
  NPUSIM_EXPECT_ERROR(ops::check_graph(g), "disagrees with the op's shape/dtype inference");
}

TEST(Registry, AttrSchemaIsDescribable) {
  auto f = ops::describe_attrs<ops::Conv2d::Attrs>();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].first, "stride");
  EXPECT_EQ(f[0].second, "[1, 1]");
}
