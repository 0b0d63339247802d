#include <map>
#include <nlohmann/json.hpp>

#include "../../common/test_util.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"

using namespace npusim;
using npusim::test::data;
using json = nlohmann::json;

namespace {

std::vector<std::string> all_cases() {
  std::vector<std::string> r;
  for (const char* top : {"ops", "models"})
    for (auto& e : std::filesystem::directory_iterator(data(top))) r.push_back(std::string(top) + "/" + e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

// Small graph used to build malformed variants.
json tiny_ir() {
  return json::parse(R"({
    "model_name": "tiny", "pytorch_version": "2.11.0",
    "graph_inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
    "graph_outputs": [{"name": "relu", "shape": [2, 3], "dtype": "float32"}],
    "weights": [{"name": "fc.weight", "shape": [3, 4], "dtype": "float32"}],
    "weight_name_mapping": {"p_fc_weight": "fc.weight"},
    "nodes": [
      {"name": "linear", "op_type": "aten.linear.default",
       "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32", "producer_node": "x", "producer_output_idx": 0},
                  {"name": "p_fc_weight", "shape": [3, 4], "dtype": "float32"}],
       "outputs": [{"name": "linear", "shape": [2, 3], "dtype": "float32"}], "attrs": {}},
      {"name": "relu", "op_type": "aten.relu.default",
       "inputs": [{"name": "linear", "shape": [2, 3], "dtype": "float32", "producer_node": "linear", "producer_output_idx": 0}],
       "outputs": [{"name": "relu", "shape": [2, 3], "dtype": "float32"}], "attrs": {}}
    ]})");
}

ir::Graph read(const json& j) { return ir::read_ir_string(j.dump(), "test.json"); }

}  // namespace

TEST(IrReader, ReadsEveryFixtureAndItsOpCensusMatchesMeta) {
  auto cases = all_cases();
  ASSERT_GE(cases.size(), 68u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c);
    ir::Graph g = ir::read_ir_file(data(c + "/ir.json"));
    json meta = json::parse(test::read_text(data(c + "/meta.json")));
    std::map<std::string, int> census, want;
    for (const auto& n : g.nodes) ++census[n.op_type];
    for (auto& [k, v] : meta["op_histogram"].items()) want[k] = v.get<int>();
    EXPECT_EQ(census, want);
    EXPECT_NO_THROW(ops::check_graph(g));
  }
}

TEST(IrReader, KeepsInt64ExactlyAndAcceptsIntWhereFloatIsMeant) {
  ir::Graph g = ir::read_ir_file(data("models/qwen2_tiny_decode/ir.json"));
  bool saw_max = false, saw_int_exponent = false;
  for (const auto& n : g.nodes) {
    if (auto* e = n.attrs.find("end"); e && e->is_int() && e->as_int() == INT64_MAX) saw_max = true;
    if (auto* e = n.attrs.find("exponent"); e && e->is_int() && e->as_double() == 2.0) saw_int_exponent = true;
  }
  EXPECT_TRUE(saw_max);
  EXPECT_TRUE(saw_int_exponent);
}

TEST(IrReader, ResolvesWeightPlaceholdersProducersAndZeroOutputNodes) {
  ir::Graph g = ir::read_ir_file(data("models/qwen2_tiny_decode/ir.json"));
  auto lm = g.find("p_model_lm_head_weight");
  ASSERT_TRUE(lm);
  EXPECT_EQ(g.tensor(*lm).kind, ir::TensorKind::weight);
  EXPECT_EQ(g.tensor(*lm).weight_key, "model.lm_head.weight");
  std::size_t zero_out = 0, getitems = 0;
  for (const auto& n : g.nodes) {
    zero_out += n.outputs.empty();
    if (n.op_type == "<built-in function getitem>") {
      ++getitems;
      EXPECT_EQ(n.inputs.size(), 2u);  // every output of the rotary HOP
    }
  }
  EXPECT_GT(zero_out, 0u);
  EXPECT_EQ(getitems, 2u);
  // Graph inputs are resolved even though nodes name them as their own producer.
  EXPECT_EQ(g.tensor(g.nodes[0].inputs[1]).kind, ir::TensorKind::input);
}

TEST(IrReader, ModelNameVersionAndConstantsAreOptional) {
  json j = tiny_ir();
  j.erase("model_name");
  j.erase("pytorch_version");
  j["nodes"][1].erase("attrs");
  EXPECT_NO_THROW(read(j));
}

TEST(IrReader, ReadsLiftedConstantsWithValues) {
  json j = tiny_ir();
  j["weights"].push_back({{"name", "lifted_tensor_0"}, {"shape", {2}}, {"dtype", "int64"}});
  j["weight_name_mapping"]["c_lifted_tensor_0"] = "lifted_tensor_0";
  j["constants"] = {{"lifted_tensor_0", {{"data", {7, 9}}, {"dtype", "int64"}}}};
  ir::Graph g = read(j);
  ASSERT_TRUE(g.constants.count("lifted_tensor_0"));
  EXPECT_EQ(g.constants["lifted_tensor_0"].data<std::int64_t>()[1], 9);
  EXPECT_EQ(g.tensor(*g.find("c_lifted_tensor_0")).kind, ir::TensorKind::constant);
}

TEST(IrReaderErrors, TruncatedJson) {
  std::string text = test::read_text(data("ops/relu/ir.json"));
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(text.substr(0, text.size() / 2), "relu/ir.json"), "invalid JSON", "relu/ir.json", "byte");
}

TEST(IrReaderErrors, NodeNamingAMissingProducer) {
  json j = tiny_ir();
  j["nodes"][1]["inputs"][0]["producer_node"] = "lineer";
  NPUSIM_EXPECT_ERROR(read(j), "node 'relu'", "names a producer that does not exist", "lineer", "test.json");
}

TEST(IrReaderErrors, InputWithoutAnyProducer) {
  json j = tiny_ir();
  j["nodes"][1]["inputs"][0] = {{"name", "ghost"}, {"shape", {2, 3}}, {"dtype", "float32"}};
  NPUSIM_EXPECT_ERROR(read(j), "node 'relu'", "'ghost' has no producer");
}

TEST(IrReaderErrors, NodesOutOfTopologicalOrder) {
  json j = tiny_ir();
  std::swap(j["nodes"][0], j["nodes"][1]);
  NPUSIM_EXPECT_ERROR(read(j), "node 'relu'", "topological order");
}

TEST(IrReaderErrors, ProducerIndexOutOfRange) {
  json j = tiny_ir();
  j["nodes"][1]["inputs"][0]["producer_output_idx"] = 3;
  NPUSIM_EXPECT_ERROR(read(j), "node 'relu'", "producer_output_idx out of range");
}

TEST(IrReaderErrors, MetadataDisagreeingWithProducer) {
  json j = tiny_ir();
  j["nodes"][1]["inputs"][0]["dtype"] = "bfloat16";
  NPUSIM_EXPECT_ERROR(read(j), "node 'relu'", "disagrees", "float32 [2, 3]", "bfloat16 [2, 3]");
}

TEST(IrReaderErrors, UnknownDtypeAndMissingFields) {
  json j = tiny_ir();
  j["graph_inputs"][0]["dtype"] = "complex64";
  NPUSIM_EXPECT_ERROR(read(j), "unsupported dtype 'complex64'", "tensor 'x'");
  json k = tiny_ir();
  k.erase("nodes");
  NPUSIM_EXPECT_ERROR(read(k), "no \"nodes\" field");
  json m = tiny_ir();
  m["graph_inputs"][0]["shape"] = {2, -4};
  NPUSIM_EXPECT_ERROR(read(m), "negative dimension");
}

TEST(IrReaderErrors, MappingToAnUnknownStateDictKey) {
  json j = tiny_ir();
  j["weight_name_mapping"]["p_fc_weight"] = "fc.weigth";
  NPUSIM_EXPECT_ERROR(read(j), "p_fc_weight", "fc.weigth");
}

TEST(IrReaderErrors, GraphOutputNotProduced) {
  json j = tiny_ir();
  j["graph_outputs"][0]["name"] = "nope";
  NPUSIM_EXPECT_ERROR(read(j), "tensor 'nope'", "not produced");
}

TEST(IrReaderErrors, DeepNestingIsRejectedBeforeParsing) {
  std::string deep(100000, '[');
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(deep, "deep.json"), "nested too deeply", "deep.json");
}

TEST(IrReaderErrors, MissingFileAndDirectory) {
  NPUSIM_EXPECT_ERROR(ir::read_ir_file("/nonexistent/ir.json"), "cannot open", "/nonexistent/ir.json");
  NPUSIM_EXPECT_ERROR(ir::read_ir_file(data("ops")), "is a directory");
}
