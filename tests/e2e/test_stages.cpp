// Pipeline stages (--stages, docs/scale-out.md): the compiler cuts a graph into contiguous stages
// (an LLM between layers, each layer's KV cache with it), every stage its own partitions with
// transfers between them; a staged program gives the one-stage outputs, in one process and in
// several "processes" (threads joined by an in-memory StageLink, the contract MpiLink implements).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "../common/test_util.hpp"
#include "../common/tiny_llm.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/cpu.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

program::CompiledProgram compile_cpu(const ir::Graph& g, int stages, const char* force = "") {
  program::CompileOptions o;
  o.evaluator = evaluator_for<CpuTarget>();
  o.stages = stages;
  o.force = partition::ForceFallback::parse(force);
  return program::compile(g, describe_target<CpuTarget>(), o);
}

std::vector<Tensor> run_cpu(const program::CompiledProgram& p, const runtime::ModelDir& c) {
  runtime::ProgramRunner r(p, c.weights.get(), runtime::factories_for<CpuTarget>());
  return r.run(test::any_inputs(c));
}

// Every weight key a stage's partitions bind, by stage.
std::vector<std::set<std::string>> weight_keys(const program::CompiledProgram& p) {
  std::vector<std::set<std::string>> k(static_cast<std::size_t>(program::stage_count(p)));
  for (const auto& part : p.partitions)
    for (auto w : part.graph.weights) k[static_cast<std::size_t>(part.stage)].insert(part.graph.tensor(w).weight_key);
  return k;
}

// Which stages read (inputs) or make (outputs) a tensor.
std::set<int> stages_touching(const program::CompiledProgram& p, const std::string& name, bool outputs) {
  std::set<int> s;
  for (const auto& part : p.partitions)
    for (auto t : outputs ? part.graph.outputs : part.graph.inputs)
      if (part.graph.tensor(t).name == name) s.insert(part.stage);
  return s;
}

// Ranks as threads: messages by (from, to, tag) in order, commands from rank 0 to each other rank.
struct Wire {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::tuple<int, int, int>, std::deque<Tensor>> box;
  std::map<int, std::deque<int>> commands;
};

class ThreadLink final : public runtime::StageLink {
 public:
  ThreadLink(Wire& w, int rank, int ranks) : w_(w), rank_(rank), ranks_(ranks) {}
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void send(int to, int tag, const Tensor& t) override {
    std::lock_guard l(w_.m);
    w_.box[{rank_, to, tag}].push_back(t.defined() ? t.clone() : Tensor());
    if (t.defined()) bytes_sent += t.nbytes();
    w_.cv.notify_all();
  }
  Tensor receive(int from, int tag) override {
    std::unique_lock l(w_.m);
    auto& q = w_.box[{from, rank_, tag}];
    w_.cv.wait(l, [&] { return !q.empty(); });
    Tensor t = std::move(q.front());
    q.pop_front();
    if (t.defined()) bytes_received += t.nbytes();
    return t;
  }
  void finish_sends() override {}
  int command(int cmd) override {
    std::unique_lock l(w_.m);
    if (rank_ == 0) {
      for (int r = 1; r < ranks_; ++r) w_.commands[r].push_back(cmd);
      w_.cv.notify_all();
      return cmd;
    }
    auto& q = w_.commands[rank_];
    w_.cv.wait(l, [&] { return !q.empty(); });
    const int c = q.front();
    q.pop_front();
    return c;
  }

 private:
  Wire& w_;
  int rank_, ranks_;
};

// A cut can split what one stage would fuse (a convolution and the residual add after it), which
// may round differently: the same outputs within float32 rounding.
void expect_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LE(harness::compare(a[i], b[i]).rel_l2, 1e-5) << "output " << i;
}

void expect_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << "output " << i;
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << "output " << i;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << "output " << i;
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i << " differs";
  }
}

}  // namespace

TEST(Stages, LlmIsCutBetweenLayersWithItsKvCache) {
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  const program::CompiledProgram p = compile_cpu(dc.graph, 2);
  ASSERT_EQ(program::stage_count(p), 2);
  for (std::size_t k = 1; k < p.partitions.size(); ++k) EXPECT_GE(p.partitions[k].stage, p.partitions[k - 1].stage);
  // Layer 0's cache (kv_0, kv_1) is read and rewritten in stage 0, layer 1's in stage 1.
  const llm::KvMapping map = llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json"));
  for (std::size_t i = 0; i < map.layers.size(); ++i) {
    const auto& l = map.layers[i];
    const int s = static_cast<int>(i);
    EXPECT_EQ(stages_touching(p, l.decode_key_input, false), std::set<int>{s}) << l.decode_key_input;
    EXPECT_EQ(stages_touching(p, l.decode_value_input, false), std::set<int>{s}) << l.decode_value_input;
    EXPECT_EQ(stages_touching(p, l.decode_key_output, true), std::set<int>{s}) << l.decode_key_output;
  }
  // Each stage binds its own layer's weights only.
  const auto keys = weight_keys(p);
  for (int s = 0; s < 2; ++s)
    for (const auto& k : keys[static_cast<std::size_t>(s)]) {
      const auto layer = partition::layer_of_key(k);
      if (layer >= 0) {
        EXPECT_EQ(layer, s) << k << " is bound in stage " << s;
      }
    }
  // The hidden state crosses from stage 0 to stage 1, listed with its size, and inspect shows it.
  std::int64_t crossing = 0;
  for (const auto& t : p.transfers)
    if (t.from >= 0 && t.to >= 0 && p.partitions[static_cast<std::size_t>(t.from)].stage == 0 && p.partitions[static_cast<std::size_t>(t.to)].stage == 1)
      crossing += t.bytes;
  EXPECT_GE(crossing, 128 * 4);  // at least the [1, 1, 128] hidden state in f32
  const std::string text = program::inspect_text(p);
  EXPECT_NE(text.find("(stage 0 -> 1)"), std::string::npos);
  EXPECT_NE(text.find("stage 1: partition"), std::string::npos);
  // Stages survive the .npubin round trip, and the outputs are the one-stage program's.
  EXPECT_EQ(program::serialize(program::deserialize(program::serialize(p))), program::serialize(p));
  EXPECT_EQ(program::stage_count(program::deserialize(program::serialize(p))), 2);
  expect_equal(run_cpu(p, dc), run_cpu(compile_cpu(dc.graph, 1), dc));
}

TEST(Stages, ResNetStagesBalanceAndGiveTheSameOutputs) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/resnet18"));
  const auto one = run_cpu(compile_cpu(c.graph, 1), c);
  for (int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " stages");
    const program::CompiledProgram p = compile_cpu(c.graph, n);
    ASSERT_EQ(program::stage_count(p), n);
    // Balanced: each stage's share of the weights plus its share of the FLOPs near 2/n (ResNet's
    // early layers are FLOPs with few weights, its late ones weights with few FLOPs).
    const auto st = program::stage_summaries(p);
    std::vector<double> flops(st.size(), 0);
    for (const auto& part : p.partitions)
      for (const auto& node : part.graph.nodes) flops[static_cast<std::size_t>(part.stage)] += partition::node_flops(part.graph, node);
    double W = 0, F = 0;
    for (std::size_t s = 0; s < st.size(); ++s) W += static_cast<double>(st[s].weight_bytes), F += flops[s];
    for (std::size_t s = 0; s < st.size(); ++s) {
      const double share = static_cast<double>(st[s].weight_bytes) / W + flops[s] / F;
      EXPECT_GT(share, 0.6 * 2.0 / n) << "stage " << s;
      EXPECT_LT(share, 1.4 * 2.0 / n) << "stage " << s;
    }
    expect_close(run_cpu(p, c), one);
  }
  // With a forced fallback too: no partition spans two stages, same outputs.
  const program::CompiledProgram p = compile_cpu(c.graph, 2, "max_pool2d");
  EXPECT_GE(p.partitions.size(), 4u);
  for (const auto& part : p.partitions)
    for (const auto& node : part.graph.nodes) EXPECT_EQ(part.fallback, node.op_type.find("max_pool2d") != std::string::npos) << node.name;
  expect_close(run_cpu(p, c), one);
}

TEST(Stages, RefusesMoreStagesThanTheGraphCanGive) {
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  NPUSIM_EXPECT_ERROR(compile_cpu(dc.graph, 3), "more stages than the graph has layers", "--stages <= 2 (2 layers)", "--stages 3");
  NPUSIM_EXPECT_ERROR(compile_cpu(dc.graph, 0), "one stage or more", "found 0");
  EXPECT_EQ(partition::layer_of_key("model.layers.12.mlp.up_proj.weight"), 12);
  EXPECT_EQ(partition::layer_of_key("transformer.h.3.attn.c_attn.weight"), 3);
  EXPECT_EQ(partition::layer_of_key("model.embed_tokens.weight"), -1);
  EXPECT_EQ(partition::layer_of_key("layer4.0.conv1.weight"), -1);
}

TEST(Stages, TwoRanksGiveTheOneProcessOutputs) {
  runtime::ModelDir c = runtime::ModelDir::open(data("models/resnet18"));
  const program::CompiledProgram p = compile_cpu(c.graph, 2);
  Wire w;
  ThreadLink l0(w, 0, 2), l1(w, 1, 2);
  std::thread serve([&] {
    runtime::ProgramRunner r(p, c.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l1, 0, {}});
    runtime::ProgramRunner* const programs[] = {&r};
    runtime::serve_stages(l1, programs);
  });
  std::vector<Tensor> out;
  {
    runtime::ProgramRunner r(p, c.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l0, 0, {}});
    out = r.run(test::any_inputs(c));
    EXPECT_EQ(r.describe().find("2 stages in 2 processes") != std::string::npos, true) << r.describe();
    l0.command(runtime::StageLink::stop_command);
  }
  serve.join();
  expect_equal(out, run_cpu(compile_cpu(c.graph, 1), c));
  EXPECT_GT(l0.bytes_sent, 0u);
  EXPECT_GT(l1.bytes_sent, 0u);
  // One stage per process: a 2-stage program refuses 3 ranks.
  ThreadLink three(w, 0, 3);
  NPUSIM_EXPECT_ERROR((runtime::ProgramRunner(p, c.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&three, 0, {}})), "one stage per process",
                      "expected 2 processes", "found 3 processes");
}

TEST(Stages, TwoRanksGenerateTheOneProcessTokensWithTheCacheKeptWhereItsLayerIs) {
  test::TinyLlm one;
  const auto prompt_t = one.pc.io->tensor("input_ids");
  const std::vector<std::int64_t> prompt(prompt_t.span<std::int64_t>().begin(), prompt_t.span<std::int64_t>().end());
  const auto expected = llm::generate_greedy(*one.m, prompt, 8).tokens;

  const auto map = llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json"));
  const program::CompiledProgram pp = compile_cpu(one.pc.graph, 2), dp = compile_cpu(one.dc.graph, 2);
  Wire w;
  ThreadLink l0(w, 0, 2), l1(w, 1, 2);
  std::thread serve([&] {
    runtime::ProgramRunner pre(pp, one.pc.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l1, 0, {}});
    runtime::ProgramRunner dec(dp, one.pc.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l1, 1, {}});
    llm::LlmPrograms m(pre, dec, map, one.pc.graph, one.dc.graph);
    llm::Session keeps_kv(m);
    runtime::ProgramRunner* const programs[] = {&pre, &dec};
    runtime::serve_stages(l1, programs);
  });
  std::vector<std::int64_t> got;
  std::uint64_t after_prefill = 0, per_step = 0;
  {
    runtime::ProgramRunner pre(pp, one.pc.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l0, 0, {}});
    runtime::ProgramRunner dec(dp, one.pc.weights.get(), runtime::factories_for<CpuTarget>(), {}, {&l0, 1, {}});
    llm::LlmPrograms m(pre, dec, map, one.pc.graph, one.dc.graph);
    llm::Session s(m);
    std::vector<float> logits = s.prefill(prompt);
    after_prefill = l0.bytes_sent;
    for (int i = 0; i < 8; ++i) {
      const auto tok = static_cast<std::int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      got.push_back(tok);
      const std::uint64_t before = l0.bytes_sent;
      logits = s.step(tok);
      if (i >= 2) per_step = l0.bytes_sent - before;
    }
    l0.command(runtime::StageLink::stop_command);
  }
  serve.join();
  EXPECT_EQ(got, expected);
  // After the first step (which ships layer 1's cache from the prefill once), a step sends only
  // the step's inputs and hidden state to rank 1, never the 2 x 16 KiB of layer 1's cache.
  EXPECT_LT(per_step, 4096u) << "bytes rank 0 sent per decode step";
  EXPECT_GT(after_prefill, 0u);
}
