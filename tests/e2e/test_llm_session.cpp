// The LLM driver: prompts of any length against the fixtures (short prompts = PyTorch's prefill
// rows; prompts longer than the prefill program = the teacher-forced decode steps), sampling, stop
// conditions, and the KV cache staying in place between steps.
#include "../common/test_util.hpp"
#include "../common/tiny_llm.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/cpu.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

struct Tiny : npusim::test::TinyLlm {
  std::vector<std::int64_t> prompt, tokens;

  explicit Tiny(DType dt = DType::f32, bool one_row = false) : TinyLlm(dt, one_row) {
    Tensor ids = pc.io->tensor("input_ids"), tok = dc.io->tensor("decode_tokens");
    prompt.assign(ids.span<std::int64_t>().begin(), ids.span<std::int64_t>().end());
    tokens.assign(tok.span<std::int64_t>().begin(), tok.span<std::int64_t>().end());
  }
  Tensor ref_row(const char* file_key, std::int64_t row) {
    Tensor t = (std::string(file_key) == "linear_14" ? pc : dc).io->tensor(file_key).to(DType::f32);
    const std::int64_t V = t.shape().back();
    return Tensor::wrap(DType::f32, {V}, t.data<float>() + row * V, t.owner());
  }
};

Tensor as_tensor(const std::vector<float>& v) { return Tensor::from_values<float>({static_cast<std::int64_t>(v.size())}, v); }

}  // namespace

TEST(LlmSession, ShortPromptMatchesPyTorchPrefillRow) {
  Tiny t;
  llm::Session s(*t.m);
  std::vector<float> logits = s.prefill(std::span(t.prompt).first(10));
  EXPECT_EQ(s.position(), 10);
  EXPECT_LE(harness::compare(as_tensor(logits), t.ref_row("linear_14", 9)).rel_l2, 1e-4);
  // The padded positions 10..15 are masked out and overwritten: the next token's logits match row 10.
  logits = s.step(t.prompt[10]);
  EXPECT_LE(harness::compare(as_tensor(logits), t.ref_row("linear_14", 10)).rel_l2, 1e-4);
}

// generate's prefill (passes::select_output_row): the logits of the prompt's last row only, the
// row a graph input. The same rows as the full prefill's, for short and full prompts, and the same
// caches after it.
TEST(LlmSession, OneRowPrefillGivesThePromptsLastRow) {
  Tiny one(DType::f32, true), all;
  ASSERT_EQ(one.m->prefill_roles.output_row, "logits_row");
  const ir::TensorInfo& logits = one.pg.tensor(one.pg.outputs[0]);
  EXPECT_EQ(logits.shape, (Shape{1, 1, 1024}));
  for (std::size_t n : {std::size_t{1}, std::size_t{10}, one.prompt.size()}) {
    SCOPED_TRACE(n);
    llm::Session s(*one.m), f(*all.m);
    std::vector<float> a = s.prefill(std::span(one.prompt).first(n)), b = f.prefill(std::span(one.prompt).first(n));
    EXPECT_LE(harness::compare(as_tensor(a), as_tensor(b)).rel_l2, 1e-6);
    EXPECT_LE(harness::compare(as_tensor(a), one.ref_row("linear_14", static_cast<std::int64_t>(n) - 1)).rel_l2, 1e-4);
    if (n == 10) {
      EXPECT_LE(harness::compare(as_tensor(s.step(one.prompt[10])), one.ref_row("linear_14", 10)).rel_l2, 1e-4);
    }
  }
  llm::GenerateOptions o;
  o.max_new_tokens = 9;
  EXPECT_EQ(llm::generate(*one.m, one.prompt, o).tokens, one.tokens);
  // The row input is checked against the tokens given.
  NPUSIM_EXPECT_ERROR(llm::build_inputs(one.pg, one.m->prefill_roles, one.prompt, 0, {}, 16), "output row past the tokens", "< 16");
}

TEST(LlmSession, PromptLongerThanThePrefillProgramIsNotTruncated) {
  Tiny t;
  std::vector<std::int64_t> p = t.prompt;
  p.insert(p.end(), t.tokens.begin(), t.tokens.begin() + 4);  // 20 tokens for a 16-token prefill program
  llm::Session s(*t.m);
  std::vector<float> logits = s.prefill(p);
  EXPECT_EQ(s.position(), 20);
  // The last 4 went through decode steps: the result is the fixture's teacher-forced step 3.
  EXPECT_LE(harness::compare(as_tensor(logits), t.ref_row("decode_logits", 3)).rel_l2, 1e-4);
}

TEST(LlmSession, LongPromptAndEmptyPromptAreErrorsAndGenerationStopsAtTheCacheEnd) {
  Tiny t;
  llm::Session s(*t.m);
  std::vector<std::int64_t> huge(65, 1);
  NPUSIM_EXPECT_ERROR(s.prefill(huge), "prompt longer than the KV cache", "<= 64 tokens", "found 65");
  NPUSIM_EXPECT_ERROR(s.prefill({}), "empty prompt");
  llm::GenerateOptions o;
  o.max_new_tokens = 1000;
  // A budget past the cache stops at its end, with the reason: positions 0..63 are filled, and
  // the last token comes from position 63's logits.
  llm::Generation g = llm::generate(*t.m, t.prompt, o);
  EXPECT_EQ(g.stop, "cache_full");
  EXPECT_EQ(static_cast<std::int64_t>(t.prompt.size() + g.tokens.size()), 64 + 1);
  o.max_new_tokens = 64 - t.prompt.size() + 1;  // the last one that fits: positions up to 63
  g = llm::generate(*t.m, t.prompt, o);
  EXPECT_EQ(g.stop, "max_new_tokens");
  EXPECT_EQ(static_cast<std::int64_t>(t.prompt.size() + g.tokens.size()), 64 + 1);
}

TEST(LlmSession, GreedyStopsAtEosAndBudget) {
  Tiny t;
  llm::GenerateOptions o;
  o.max_new_tokens = 9;
  llm::Generation g = llm::generate(*t.m, t.prompt, o);
  EXPECT_EQ(g.tokens, t.tokens);
  EXPECT_EQ(g.stop, "max_new_tokens");
  o.eos = {t.tokens[3]};
  g = llm::generate(*t.m, t.prompt, o);
  EXPECT_EQ(g.tokens.size(), 4u);
  EXPECT_EQ(g.stop, "eos");
}

TEST(LlmSession, KvCacheStaysInPlaceOnTheCpuTarget) {
  // The decode program updates its KV inputs in place and returns them without copies: the
  // tensors handed back for the next step are the same buffers.
  Tiny t;
  llm::Session s(*t.m);
  s.prefill(t.prompt);
  llm::KvState kv(t.m->prefill.graph(), t.m->decode.graph(), t.m->map);
  std::vector<Tensor> first = t.m->decode.run(llm::build_inputs(t.m->decode.graph(), t.m->decode_roles, std::span(t.tokens).first(1), 16, [&] {
    std::map<ir::TensorId, Tensor> z;
    for (auto id : kv.input_ids()) z[id] = Tensor::zeros(DType::f32, t.m->decode.graph().tensor(id).shape);
    return z;
  }()));
  kv.from_decode(first);
  std::vector<Tensor> second = t.m->decode.run(llm::build_inputs(t.m->decode.graph(), t.m->decode_roles, std::span(t.tokens).first(1), 17, kv.inputs()));
  for (std::size_t i = 1; i < second.size(); ++i) EXPECT_EQ(second[i].raw(), first[i].raw()) << "output " << i;
}

TEST(Sampling, SeededTopKTopP) {
  std::vector<float> logits{0.1f, 2.0f, 1.5f, -1.0f, 1.9f};
  llm::Sampler greedy({});
  EXPECT_EQ(greedy.pick(logits), 1);
  llm::Sampler k1({.temperature = 1.0, .top_k = 1, .top_p = 1.0, .seed = 3});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(k1.pick(logits), 1);
  llm::Sampler p_small({.temperature = 1.0, .top_k = 0, .top_p = 0.01, .seed = 3});
  EXPECT_EQ(p_small.pick(logits), 1);
  // Seeded: the same sequence twice; every pick within the top 3 when top_k = 3.
  llm::Sampler a({.temperature = 0.7, .top_k = 3, .top_p = 1.0, .seed = 42}), b({.temperature = 0.7, .top_k = 3, .top_p = 1.0, .seed = 42});
  std::map<std::int64_t, int> seen;
  for (int i = 0; i < 200; ++i) {
    auto x = a.pick(logits);
    EXPECT_EQ(x, b.pick(logits));
    ++seen[x];
  }
  for (auto& [tok, n] : seen) EXPECT_TRUE(tok == 1 || tok == 2 || tok == 4) << tok;
  EXPECT_GT(seen.size(), 1u);
  NPUSIM_EXPECT_ERROR(llm::Sampler({.temperature = -1.0}), "temperature");
  NPUSIM_EXPECT_ERROR(llm::Sampler({.temperature = 1.0, .top_k = 0, .top_p = 0.0}), "top-p");
}
