// Hostile inputs: every class of bad input docs/robustness.md lists has a test here that asserts
// the message, plus a regression test for every crash the fuzzers found (named after the target).
// Resource claims (1 TB tensors, terabyte arenas) must fail before anything large is allocated:
// these tests would take minutes or be killed if they did not.
#include "../../common/compile_util.hpp"
#include "../../common/test_util.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/program/impl/npubin_format.hpp"
#include "npusim/runtime/generate.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

constexpr std::int64_t one_tb_f32 = std::int64_t{1} << 38;  // elements of a 1 TiB float32 tensor

std::string safetensors_bytes(const std::string& header, std::size_t data_bytes = 0) {
  std::string b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return b + header + std::string(data_bytes, '\0');
}

// A .npubin frame (magic, version, length, FNV-1a) around any payload.
std::string npubin_frame(const std::string& payload) {
  std::string out(program::npubin_magic, sizeof program::npubin_magic);
  program::npubin_detail::put_u32(out, program::npubin_format_version);
  program::npubin_detail::put_u64(out, payload.size());
  out += payload;
  program::npubin_detail::put_u64(out, program::npubin_detail::fnv1a(payload));
  return out;
}

program::CompiledProgram compiled(const char* dir) { return test::compile_reference(runtime::ModelDir::open(data(dir)).graph); }

// A one-node IR graph (relu over x) with the given graph input shape.
std::string relu_ir(const std::string& shape) {
  return R"({"graph_inputs": [{"name": "x", "shape": )" + shape + R"(, "dtype": "float32"}], "graph_outputs": [], "weights": [],
             "nodes": []})";
}

}  // namespace

// ---- a file that claims a 1 TB tensor ------------------------------------------------------------

TEST(HostileInputs, SafetensorsClaimingOneTerabyteIsRefusedByItsOffsets) {
  const std::string h = R"({"w": {"dtype": "F32", "shape": [)" + std::to_string(one_tb_f32) + R"(], "data_offsets": [0, 1099511627776]}})";
  NPUSIM_EXPECT_ERROR(weights::SafetensorsFile::from_bytes(safetensors_bytes(h, 64), "big.safetensors"), "big.safetensors",
                      "tensor 'w'", "data_offsets point outside the file", "expected end <= 64, found 1099511627776");
}

TEST(HostileInputs, IrWeightOfOneTerabyteIsRefusedBeforeBinding) {
  const std::string shape = "[" + std::to_string(one_tb_f32) + "]";
  ir::Graph g = ir::read_ir_string(R"({"graph_inputs": [], "graph_outputs": [], "weights": [{"name": "w", "shape": )" + shape +
                                       R"(, "dtype": "float32"}], "weight_name_mapping": {"p_w": "w"},
      "nodes": [{"name": "neg", "op_type": "aten.neg.default", "inputs": [{"name": "p_w", "shape": )" + shape +
                                       R"(, "dtype": "float32"}], "outputs": [{"name": "neg", "shape": )" + shape + R"(, "dtype": "float32"}]}]})",
                                   "big.json");
  weights::SynthSource src(weights::SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": {"w": {"offset": 0, "scale": 1, "shape": )" +
                                                             shape + R"(, "dtype": "float32"}}})",
                                                         "big-synth.json"));
  NPUSIM_EXPECT_ERROR(weights::bind_weights(g, &src), "npusim resource error", "big-synth.json", "tensor 'w'",
                      "binding 1 weight tensor(s) (the largest of shape [274877906944])", "needs more memory than the allocation limit",
                      "found 1099511627776 bytes");
}

TEST(HostileInputs, OneTerabyteTensorAndSynthTensorAreRefusedBeforeAllocating) {
  NPUSIM_EXPECT_ERROR(Tensor::empty(DType::f32, {one_tb_f32}), "npusim resource error", "float32 tensor of shape [274877906944]",
                      "needs more memory than the allocation limit", "found 1099511627776 bytes");
  auto m = weights::SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": {"w": {"offset": 0, "scale": 1, "shape": [1048576, 1048576], "dtype": "bfloat16"}}})",
                                         "s.json");
  NPUSIM_EXPECT_ERROR(m.generate("w"), "bfloat16 tensor of shape [1048576, 1048576]", "needs more memory");
}

TEST(HostileInputs, AllocationLimitCanBeLowered) {
  const std::uint64_t saved = allocation_limit();
  allocation_limit() = 1 << 20;
  NPUSIM_EXPECT_ERROR(Tensor::zeros(DType::f32, {1024, 1024}), "needs more memory", "expected <= 1048576 bytes, found 4194304 bytes");
  EXPECT_NO_THROW(Tensor::zeros(DType::f32, {512, 512}));
  allocation_limit() = saved;
}

TEST(HostileInputs, NpubinArenaClaimingTerabytesIsRefused) {
  program::CompiledProgram p = compiled("ops/relu");
  p.partitions.at(0).plan.arena_bytes = std::int64_t{100} << 40;  // 100 TiB
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "arena.npubin"), "npusim resource error", "arena.npubin",
                      "partition 0: the program's arena size is implausible", "found 109951162777600 bytes");
  // Below the format's cap but above this machine's memory: reads (inspect works), cannot run.
  program::CompiledProgram q = compiled("ops/relu");
  q.partitions.at(0).plan.arena_bytes = std::int64_t{60} << 40;
  program::CompiledProgram r = program::deserialize(program::serialize(q), "arena.npubin");
  NPUSIM_EXPECT_ERROR((void)runtime::ProgramRunner(r, nullptr, runtime::factories_for<ReferenceTarget>()), "npusim resource error", "arena of 65970697666560 bytes",
                      "needs more memory than the allocation limit");
}

// ---- JSON (and msgpack) nested 100k deep ---------------------------------------------------------

TEST(HostileInputs, JsonNested100kDeepIsRejectedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(deep, "deep.json"), "npusim resource error", "deep.json", "byte 256",
                      "JSON nested too deeply", "expected depth <= 256");
  NPUSIM_EXPECT_ERROR(weights::SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": )" + deep + "}", "deep-synth.json"),
                      "deep-synth.json", "JSON nested too deeply");
  NPUSIM_EXPECT_ERROR(weights::SafetensorsFile::from_bytes(safetensors_bytes(deep), "deep.safetensors"), "deep.safetensors",
                      "JSON nested too deeply");
}

TEST(HostileInputs, MsgpackNested100kDeepIsRejected) {
  std::string payload(100000, static_cast<char>(0x91));  // fixarray of one element, 100k times
  payload.push_back(static_cast<char>(0xc0));
  NPUSIM_EXPECT_ERROR(program::deserialize(npubin_frame(payload), "deep.npubin"), "deep.npubin", "malformed .npubin payload",
                      "depth size overflow");
}

TEST(HostileInputs, MsgpackContainerClaimingBillionsOfElementsIsRejected) {
  // array32 header claiming 2^32-1 elements, then nothing: ~100 GB for msgpack without a limit.
  const std::string payload = {static_cast<char>(0xdd), static_cast<char>(0xff), static_cast<char>(0xff), static_cast<char>(0xff),
                               static_cast<char>(0xff)};
  NPUSIM_EXPECT_ERROR(program::deserialize(npubin_frame(payload), "huge.npubin"), "huge.npubin", "malformed .npubin payload",
                      "array size overflow");
}

// ---- a shape whose element count overflows int64 -------------------------------------------------

TEST(HostileInputs, ShapeOverflowingInt64IsAnErrorInEveryReader) {
  const std::string shape = "[4294967296, 4294967296, 4]";
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(relu_ir(shape), "ovf.json"), "npusim resource error", "ovf.json", "tensor 'x'",
                      "element count of shape [4294967296, 4294967296, 4] overflows int64");
  NPUSIM_EXPECT_ERROR(weights::SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": {"w": {"offset": 0, "scale": 1, "shape": )" +
                                                        shape + R"(, "dtype": "float32"}}})",
                                                    "ovf-synth.json"),
                      "ovf-synth.json", "overflows int64");
  NPUSIM_EXPECT_ERROR(weights::SafetensorsFile::from_bytes(
                          safetensors_bytes(R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 0]}})"), "ovf.safetensors"),
                      "ovf.safetensors", "tensor 'w'", "overflows int64");
  program::CompiledProgram p = compiled("ops/relu");
  p.inputs.at(0).shape = {std::int64_t{1} << 32, std::int64_t{1} << 32, 4};
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "ovf.npubin"), "ovf.npubin", "malformed .npubin",
                      "overflows int64");
}

TEST(HostileInputs, ReshapeSizeOverflowingInt64IsAnError) {
  // Found by the npubin fuzzer under UBSan: the product of a view's known sizes overflowed.
  const ops::Ints size = {std::int64_t{1} << 32, std::int64_t{1} << 32, 4, -1};
  NPUSIM_EXPECT_ERROR(ops::resolve_view_shape(size, 8), "npusim shape error", "view/reshape size overflows int64");
  NPUSIM_EXPECT_ERROR(ops::resolve_view_shape({std::int64_t{1} << 62, 4}, 8), "view/reshape size overflows int64");
}

// ---- a cycle in the graph -----------------------------------------------------------------------

TEST(HostileInputs, IrCycleIsReportedAsAnOrderError) {
  // a reads b's output, b reads a's output.
  const std::string ir = R"({"graph_inputs": [], "graph_outputs": [], "weights": [], "nodes": [
    {"name": "a", "op_type": "aten.relu.default", "inputs": [{"name": "b", "shape": [2], "dtype": "float32", "producer_node": "b"}],
     "outputs": [{"name": "a", "shape": [2], "dtype": "float32"}]},
    {"name": "b", "op_type": "aten.relu.default", "inputs": [{"name": "a", "shape": [2], "dtype": "float32", "producer_node": "a"}],
     "outputs": [{"name": "b", "shape": [2], "dtype": "float32"}]}]})";
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(ir, "cycle.json"), "npusim graph error", "cycle.json", "node 'a'",
                      "is produced by a later node: nodes are not in topological order", "found producer 'b'");
}

TEST(HostileInputs, NpubinCycleIsRejected) {
  program::CompiledProgram p = compiled("ops/neg_silu");
  ir::Graph& g = p.partitions.at(0).graph;
  ASSERT_GE(g.nodes.size(), 2u);
  // The first node now reads the last node's output: a cycle through the whole chain.
  g.nodes.front().inputs.at(0) = g.nodes.back().outputs.at(0);
  const std::string first_node = "node '" + g.nodes.front().name + "'";
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "cycle.npubin"), "npusim parse error", "cycle.npubin",
                      "malformed .npubin: partition 0: node reads a tensor before it is produced (a cycle", first_node.c_str());
}

TEST(HostileInputs, NpubinScheduleOutOfDependencyOrderIsRejected) {
  program::CompiledProgram p = compiled("ops/silu_gate_mlp");
  auto& ks = p.partitions.at(0).kernels;
  ASSERT_GE(ks.size(), 2u);
  std::reverse(ks.begin(), ks.end());
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "order.npubin"), "order.npubin",
                      "kernel schedule runs a node before one of its inputs is produced");
  program::CompiledProgram q = compiled("ops/silu_gate_mlp");
  q.partitions.at(0).kernels.pop_back();
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(q), "short.npubin"), "kernels do not cover every node");
}

TEST(HostileInputs, NpubinMisalignedArenaOffsetIsRejected) {
  // Found by the sanitizer stage's npubin fuzzer: an offset moved by one byte made the CPU
  // target store floats at an odd address (undefined behaviour, a fault on strict targets).
  program::CompiledProgram p = compiled("ops/neg_silu");
  plan::BufferPlan& b = p.partitions.at(0).plan;
  auto arena = std::find_if(b.tensors.begin(), b.tensors.end(), [](const auto& t) { return t.place == plan::Place::arena && t.offset + 64 + t.bytes <= 1 << 20; });
  ASSERT_NE(arena, b.tensors.end());
  arena->offset += 1;
  b.arena_bytes = std::max(b.arena_bytes, arena->offset + arena->bytes);
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "misaligned.npubin"), "misaligned.npubin",
                      "tensor placed at an arena offset that is not 64-byte aligned", "a multiple of 64");
}

TEST(HostileInputs, NpubinOutputWithoutStorageIsRejected) {
  // Found by the npubin fuzzer under ASan: the CPU target copied a result out of a null address.
  program::CompiledProgram p = compiled("ops/neg_silu");
  program::Partition& part = p.partitions.at(0);
  const ir::TensorId out = part.graph.outputs.at(0);
  part.plan.tensors.at(static_cast<std::size_t>(out)).place = plan::Place::none;
  const std::string name = "tensor '" + part.graph.tensor(out).name + "'";
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "nowhere.npubin"), "nowhere.npubin",
                      "buffer plan stores no partition output", name.c_str());
}

TEST(HostileInputs, NpubinReturningAWeightTheGraphDoesNotListIsRejected) {
  // Found by the npubin fuzzer (seed 11): a weight no node reads made a partition output; the CPU
  // target had bound only the weights its nodes read and had no address to copy it from.
  program::CompiledProgram p = compiled("ops/relu");
  ir::Graph& g = p.partitions.at(0).graph;
  const ir::TensorId w = g.add_tensor({"stray", {4}, DType::f32, ir::TensorKind::weight, -1, 0, "stray"});
  p.partitions.at(0).plan.tensors.push_back({.place = plan::Place::weight, .storage = DType::f32, .bytes = 16, .root = w});
  g.outputs.push_back(w);  // returned, read by no node, in no list
  const std::string name = "tensor 'stray'";
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "returns.npubin"), "returns.npubin",
                      "partition returns a tensor of kind 'weight' that is not in the graph's weights", name.c_str());
}

TEST(HostileInputs, NpubinPlanOutsideTheArenaOrOfTheWrongSizeIsRejected) {
  program::CompiledProgram p = compiled("ops/neg_silu");
  plan::BufferPlan& b = p.partitions.at(0).plan;
  auto arena = std::find_if(b.tensors.begin(), b.tensors.end(), [](const auto& t) { return t.place == plan::Place::arena; });
  ASSERT_NE(arena, b.tensors.end());
  arena->offset = INT64_MAX - 8;  // offset + bytes would overflow
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "plan.npubin"), "tensor placed outside the arena");
  arena->offset = 0;
  arena->bytes -= 4;
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "plan.npubin"),
                      "buffer plan size disagrees with the tensor's shape and storage type");
}

TEST(HostileInputs, NpubinOutputThatNoPartitionProducesIsRejected) {
  program::CompiledProgram p = compiled("ops/relu");
  p.outputs.at(0).name = "ghost";
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "out.npubin"), "program output is produced by no partition",
                      "tensor 'ghost'");
}

TEST(HostileInputs, NpubinRecipesAreCheckedWhenRead) {
  program::CompiledProgram p = compiled("ops/conv_bn_relu");
  ASSERT_FALSE(p.recipes.empty());
  ASSERT_EQ(p.recipes[0].kind, "bn_fold");
  auto read = [&](const program::CompiledProgram& q) { return program::deserialize(program::serialize(q), "recipe.npubin"); };
  program::CompiledProgram a = p;
  a.recipes[0].params = {};
  NPUSIM_EXPECT_ERROR(read(a), "npusim parse error", "recipe.npubin", "bn_fold recipe: param 'eps' must be a number");
  program::CompiledProgram b = p;
  b.recipes[0].inputs.pop_back();
  NPUSIM_EXPECT_ERROR(read(b), "bn_fold recipe: expected 6 input(s) and 2 output(s), found 5 and 2");
  program::CompiledProgram c = p;
  c.recipes.push_back(weights::pad_recipe(c.recipes[0].outputs[0] + ".x", c.recipes[0].outputs[0] + ".x", {1}));
  NPUSIM_EXPECT_ERROR(read(c), "a pad recipe reads its own output");
  program::CompiledProgram d = p;
  d.recipes.insert(d.recipes.begin(), weights::pad_recipe(p.recipes[0].outputs[0], "padded", {64, 64, 3, 3}));
  NPUSIM_EXPECT_ERROR(read(d), "a pad recipe reads a weight a later recipe derives");
  program::CompiledProgram e = p;
  e.recipes[0].kind = "magic";
  NPUSIM_EXPECT_ERROR(read(e), "npusim unsupported error", "unknown weight recipe 'magic'");
}

TEST(HostileInputs, RecipesCheckTheWeightsTheyRead) {
  // A pad recipe that would shrink its input (an out-of-bounds copy before), and a bn_fold whose
  // gamma is shorter than the conv's output channels (an out-of-bounds read before).
  auto get = [](const std::string& k) { return Tensor::zeros(DType::f32, k == "gamma" ? Shape{3} : k == "w" ? Shape{4, 2, 1, 1} : Shape{4}); };
  NPUSIM_EXPECT_ERROR(weights::apply_recipe(weights::pad_recipe("w", "w.pad", {2, 2, 1, 1}), get), "npusim shape error", "tensor 'w'",
                      "pad recipe must keep the rank and only grow dims", "expected [2, 2, 1, 1], found [4, 2, 1, 1]");
  NPUSIM_EXPECT_ERROR(weights::apply_recipe(weights::bn_fold_recipe({"w", "", "gamma", "", "mean", "var"}, {"w.f", "b.f"}, 1e-5), get),
                      "tensor 'gamma'", "do not match the conv's output channels", "expected 4, found 3");
}

// ---- a KV position beyond the cache --------------------------------------------------------------

namespace {
struct TinyLlm {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"));
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  std::unordered_map<std::string, Tensor> cache;
  weights::BoundWeights pw = bind(pc.graph), dw = bind(dc.graph);
  ref::InterpreterRunner prefill{pc.graph, pw.tensors}, decode{dc.graph, dw.tensors};
  llm::LlmPrograms model{prefill, decode, llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json")), pc.graph, dc.graph};
  std::vector<std::int64_t> prompt = std::vector<std::int64_t>(16, 1);

  weights::BoundWeights bind(const ir::Graph& g) {
    weights::BindOptions o;
    o.load_as = DType::f32;
    o.cache = &cache;
    return weights::bind_weights(g, pc.weights.get(), o);
  }
};
}  // namespace

TEST(HostileInputs, DecodePositionBeyondTheKvCacheIsRefusedBeforeRunning) {
  TinyLlm m;
  // Prefill 16 + 50 new tokens: the 50th would need a decode step at position 64 of a 64-entry
  // cache. Free generation stops at the cache's end and says so.
  llm::Generation g = llm::generate_greedy(m.model, m.prompt, 50);
  EXPECT_EQ(g.stop, "cache_full");
  EXPECT_EQ(g.tokens.size(), 49u);
  // The teacher-forced check with references for 49 steps (positions 16..64) cannot stop early:
  // refused before anything runs.
  std::vector<std::int64_t> tokens(50, 1);
  Tensor plogits = Tensor::zeros(DType::f32, {1, 16, 1024}), dlogits = Tensor::zeros(DType::f32, {49, 1024});
  NPUSIM_EXPECT_ERROR(harness::check_generation(m.model, m.prompt, plogits, tokens, dlogits), "decode position beyond the KV cache",
                      "found 64");
  EXPECT_NO_THROW(llm::generate_greedy(m.model, m.prompt, 49));  // the last position that fits: 63
}

TEST(HostileInputs, ReferenceSizesThatDoNotMatchAreRefused) {
  TinyLlm m;
  std::vector<std::int64_t> tokens(4, 1);
  Tensor plogits = Tensor::zeros(DType::f32, {1, 16, 1024}), dlogits = Tensor::zeros(DType::f32, {4, 1024});
  NPUSIM_EXPECT_ERROR(harness::check_generation(m.model, m.prompt, plogits, tokens, dlogits), "tensor 'decode_tokens'",
                      "fewer reference decode tokens than decode steps + 1", "expected >= 5, found 4");
  tokens.push_back(1);
  Tensor too_many = Tensor::zeros(DType::f32, {1, 17, 1024});
  NPUSIM_EXPECT_ERROR(harness::check_generation(m.model, m.prompt, too_many, tokens, dlogits),
                      "reference logits do not match the programs' logits", "prefill [1, 17, 1024]");
}

TEST(HostileInputs, IndexCopyIndexOutOfRangeIsARuntimeError) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/index_copy_kv"));
  ref::InterpreterRunner r(c.graph, c.bind().tensors);
  std::vector<Tensor> in = c.inputs();
  in.at(1) = Tensor::from_values<std::int64_t>({3}, std::vector<std::int64_t>{0, 5, 16});  // the cache has 16 positions
  NPUSIM_EXPECT_ERROR(r.run(in), "npusim runtime error", "node 'index_copy'", "index_copy index out of range", "expected [-16, 15], found 16");
}

// ---- no partial outputs --------------------------------------------------------------------------

TEST(HostileInputs, SavingAProgramIsAtomic) {
  test::TempDir d;
  program::CompiledProgram p = compiled("ops/relu");
  const std::string target = d.file("p.npubin");
  test::write_text(target, "old contents");
  program::save(p, target);
  EXPECT_EQ(test::read_text(target), program::serialize(p));
  // The target is a directory: the error says so and names it, the directory is untouched, and
  // no temporary file is left behind.
  std::filesystem::create_directory(d.file("dir.npubin"));
  NPUSIM_EXPECT_ERROR(program::save(p, d.file("dir.npubin")), "npusim io error", "dir.npubin", "the output path is a directory");
  EXPECT_TRUE(std::filesystem::is_directory(d.file("dir.npubin")));
  // A failure before anything was written (no such directory).
  NPUSIM_EXPECT_ERROR(program::save(p, d.file("missing/p.npubin")), "npusim io error", "cannot create");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"dir.npubin", "p.npubin"}));
}

// ---- found by the fuzzers (docs/robustness.md, "Bugs found") --------------------------------------

namespace {
// A fixture's IR with the first node's attrs and output shape replaced.
ir::Graph edited_ir(const char* dir, const nlohmann::json& attrs, const Shape& out_shape) {
  auto j = nlohmann::json::parse(test::read_text(data(std::string(dir) + "/ir.json")));
  auto& n = j["nodes"][0];
  n["attrs"] = attrs;
  n["outputs"][0]["shape"] = out_shape;
  j["graph_outputs"][0]["shape"] = out_shape;
  return ir::read_ir_string(j.dump(), std::string(dir) + "/edited.json");
}
}  // namespace

TEST(FuzzIrJson, PoolingStrideZeroIsAnAttributeErrorNotADivisionByZero) {
  // fuzz_ir_json: avg_pool2d with stride [2, 0] divided by zero in shape inference.
  NPUSIM_EXPECT_ERROR(ops::check_graph(edited_ir("ops/avg_pool2d", {{"kernel_size", {3, 2}}, {"stride", {2, 0}}}, {1, 16, 4, 4})),
                      "npusim attr error", "node 'avg_pool2d'", "attribute 'stride' has a value npusim does not implement",
                      "expected values in [1, 2147483648], found [2, 0]");
  NPUSIM_EXPECT_ERROR(ops::check_graph(edited_ir("ops/max_pool2d_3x3_s2_p1", {{"kernel_size", 3}, {"padding", -1}}, {1, 8, 8, 8})),
                      "attribute 'padding'", "found [-1, -1]");
  NPUSIM_EXPECT_ERROR(ops::check_graph(edited_ir("ops/conv2d_3x3_bias", {{"padding", 4611686018427387904}}, {1, 8, 8, 8})),
                      "attribute 'padding'", "found [4611686018427387904, 4611686018427387904]");
  NPUSIM_EXPECT_ERROR(ops::check_graph(edited_ir("ops/adaptive_avg_pool2d_1", {{"output_size", {0, 1}}}, {1, 128, 0, 1})),
                      "attribute 'output_size'", "found [0, 1]");
  // An empty input plane divided by zero in the adaptive pooling kernel.
  ops::AdaptiveAvgPool2d::Attrs a;
  a.output_size = {1, 1};
  const std::vector<ops::TensorSpec> in{{{1, 4, 0, 7}, DType::f32}};
  NPUSIM_EXPECT_ERROR(ops::AdaptiveAvgPool2d::infer(a, in), "npusim shape error", "adaptive_avg_pool2d input has an empty spatial dimension",
                      "found [1, 4, 0, 7]");
}

TEST(FuzzIrJson, HugePoolingWindowVisitsOnlyTheInput) {
  // A 2^31 window padded by 2^30 on a 16x16 input is one output per plane; the reference kernel
  // used to walk all 2^62 taps of it.
  const std::int64_t k = std::int64_t{1} << 31, p = std::int64_t{1} << 30;
  ir::Graph g = edited_ir("ops/max_pool2d_3x3_s2_p1", {{"kernel_size", k}, {"padding", p}}, {1, 64, 1, 1});
  ops::check_graph(g);
  ASSERT_EQ(g.tensor(g.inputs.at(0)).shape, (Shape{1, 64, 16, 16}));
  ref::InterpreterRunner r(g, {});
  std::vector<float> x(64 * 256);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 1001);
  auto y = r.run(std::vector<Tensor>{Tensor::from_values<float>({1, 64, 16, 16}, std::span<const float>(x))});
  for (std::ptrdiff_t c = 0; c < 64; ++c)
    EXPECT_EQ(y.at(0).data<float>()[c], *std::max_element(x.begin() + c * 256, x.begin() + (c + 1) * 256)) << "plane " << c;
}

TEST(FuzzNpubin, NamesThatAreNotUtf8AreRejectedWhenRead) {
  // fuzz_npubin: a node name with byte 0x85 read fine, then `inspect --json` threw
  // nlohmann::json::type_error (invalid UTF-8) instead of an npusim::Error.
  program::CompiledProgram p = compiled("ops/relu");
  p.partitions.at(0).graph.nodes.at(0).name = "re\x85lu";
  NPUSIM_EXPECT_ERROR(program::deserialize(program::serialize(p), "utf8.npubin"), "npusim parse error", "utf8.npubin",
                      "malformed .npubin: string is not valid UTF-8");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})  // overlong, surrogate, > U+10FFFF, cut
    EXPECT_FALSE(program::npubin_detail::valid_utf8(bad)) << bad;
  for (const char* good : {"relu", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}) EXPECT_TRUE(program::npubin_detail::valid_utf8(good)) << good;
}

TEST(FuzzSynthManifest, NumberTooLargeForADoubleIsAParseError) {
  // fuzz_synth_manifest: "scale": 0.2165e991 made nlohmann throw json::out_of_range (406), which
  // the JSON reader did not convert; every JSON reader (IR, synth, safetensors header) shares it.
  NPUSIM_EXPECT_ERROR(weights::SynthManifest::parse(R"({"rule": "npusim-synth-v1", "tensors": {"w": {"offset": 0, "scale": 0.2165e991, "shape": [2], "dtype": "float32"}}})",
                                                    "s.json"),
                      "npusim parse error", "s.json", "invalid JSON: number overflow parsing '0.2165e991'");
  NPUSIM_EXPECT_ERROR(ir::read_ir_string(R"({"graph_inputs": [], "graph_outputs": [], "weights": [], "nodes": [], "x": -1e400})", "big.json"),
                      "big.json", "number overflow");
}

TEST(FuzzSafetensors, BoolTensorBytesMustBeZeroOrOne) {
  // fuzz_safetensors: a BOOL tensor holding byte 170 was read as a bool (undefined behaviour,
  // UBSan "load of value 170, which is not a valid value for type 'const bool'").
  const std::string h = R"({"m": {"dtype": "BOOL", "shape": [4], "data_offsets": [0, 4]}})";
  std::string bytes = safetensors_bytes(h, 4);
  bytes[bytes.size() - 2] = static_cast<char>(170);
  auto f = weights::SafetensorsFile::from_bytes(bytes, "mask.safetensors");
  NPUSIM_EXPECT_ERROR(f.tensor("m"), "npusim parse error", "mask.safetensors", "tensor 'm'", "BOOL tensor holds a byte that is not 0 or 1",
                      "expected 0 or 1, found 170");
  bytes[bytes.size() - 2] = 1;
  auto ok = weights::SafetensorsFile::from_bytes(bytes, "mask.safetensors");
  EXPECT_EQ(ok.tensor("m").to(DType::f32).span<float>()[2], 1.0f);
}
