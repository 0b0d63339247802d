// The teacher-forced check of an LLM's prefill and decode programs against reference logits
// (`npusim generate --check`, the tests): prefill logits at every stored position, then each
// decode step fed the reference token, its logits and greedy token compared. Test and tool
// plumbing, not part of the installed library.
#pragma once

#include <chrono>
#include <functional>

#include "npusim/harness/compare.hpp"
#include "npusim/runtime/generate.hpp"

namespace npusim::inline NPUSIM_ABI::harness {

struct StepCheck {
  std::int64_t position = 0;
  Metrics metrics;
  std::int64_t token = 0, token_ref = 0;
  double ms = 0;
};

struct GenerateCheck {
  Metrics prefill;
  std::int64_t prefill_top1 = 0, prefill_top1_ref = 0;
  double prefill_ms = 0;
  std::vector<StepCheck> steps;
  int token_matches = 0;
};

struct GenerateCallbacks {
  std::function<void(const GenerateCheck&)> on_prefill;
  std::function<void(const StepCheck&, std::size_t step, std::size_t steps)> on_step;
};

// Teacher-forced check against the fixtures: prefill logits (all stored positions), then step s
// feeds decode_tokens[s] at position S + s; its logits are compared with decode_logits[s] and its
// argmax with decode_tokens[s + 1].
inline GenerateCheck check_generation(llm::LlmPrograms& m, std::span<const std::int64_t> prompt, const Tensor& prefill_logits_ref,
                                      std::span<const std::int64_t> decode_tokens, const Tensor& decode_logits_ref,
                                      const GenerateCallbacks& cb = {}) {
  using clock = std::chrono::steady_clock;
  const ir::Graph& pg = m.prefill.graph();
  GenerateCheck res;
  const ir::Graph& dg = m.decode.graph();
  llm::KvState kv(pg, dg, m.map);
  // The references come from a file: check their sizes before indexing with them.
  const auto steps = static_cast<std::size_t>(decode_logits_ref.shape().empty() ? 0 : decode_logits_ref.shape()[0]);
  if (decode_tokens.size() < steps + 1)
    throw Error(ErrorCode::shape, "fewer reference decode tokens than decode steps + 1",
                {.tensor = "decode_tokens", .expected = ">= " + std::to_string(steps + 1), .found = std::to_string(decode_tokens.size())});
  if (steps > 0) kv.check_position(dg, static_cast<std::int64_t>(prompt.size() + steps - 1));

  // The prefill run is made here directly: all its logits rows are compared, not just the last.
  auto t0 = clock::now();
  std::vector<Tensor> pout = m.prefill.run(llm::build_inputs(pg, m.prefill_roles, prompt, 0, {}));
  res.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  Tensor logits = pout.at(0).to(DType::f32);
  // Compare the positions the reference stores (all of them, or only the last).
  const std::int64_t V = logits.shape().empty() ? 0 : logits.shape().back(), S = V ? logits.numel() / V : 0;
  const std::int64_t keep = V ? prefill_logits_ref.numel() / V : 0;
  if (V == 0 || keep < 1 || keep > S || prefill_logits_ref.numel() != keep * V || decode_logits_ref.numel() != static_cast<std::int64_t>(steps) * V)
    throw Error(ErrorCode::shape, "reference logits do not match the programs' logits",
                {.expected = "rows of " + std::to_string(V) + " (prefill up to " + std::to_string(S) + " rows, decode " + std::to_string(steps) + ")",
                 .found = "prefill " + to_string(prefill_logits_ref.shape()) + ", decode " + to_string(decode_logits_ref.shape())});
  Tensor tail = Tensor::wrap(DType::f32, {keep, V}, logits.data<float>() + (S - keep) * V, logits.owner());
  res.prefill = compare(tail, prefill_logits_ref);
  Tensor ref_f = prefill_logits_ref.to(DType::f32);
  res.prefill_top1 = llm::argmax_index(std::span<const float>(logits.data<float>() + (S - 1) * V, static_cast<std::size_t>(V)));
  res.prefill_top1_ref = llm::argmax_index(std::span<const float>(ref_f.data<float>() + (keep - 1) * V, static_cast<std::size_t>(V)));
  if (cb.on_prefill) cb.on_prefill(res);

  kv.carry_on(m.decode);
  kv.from_prefill(m.decode, pout);
  pout.clear();
  Tensor dref = decode_logits_ref.to(DType::f32);
  for (std::size_t s = 0; s < steps; ++s) {
    StepCheck sc;
    sc.position = static_cast<std::int64_t>(prompt.size() + s);
    std::int64_t tok = decode_tokens[s];
    auto t1 = clock::now();
    std::vector<Tensor> dout = m.decode.run(llm::build_inputs(m.decode.graph(), m.decode_roles, std::span<const std::int64_t>(&tok, 1), sc.position, kv.inputs()));
    sc.ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
    std::vector<float> row = llm::last_row(dout.at(0));
    Tensor want = Tensor::wrap(DType::f32, {V}, dref.data<float>() + static_cast<std::int64_t>(s) * V, dref.owner());
    sc.metrics = compare(Tensor::from_values<float>({V}, std::span<const float>(row)), want);
    sc.token = llm::argmax_index(row);
    sc.token_ref = decode_tokens[s + 1];
    res.token_matches += sc.token == sc.token_ref;
    kv.from_decode(dout);
    res.steps.push_back(sc);
    if (cb.on_step) cb.on_step(sc, s, steps);
  }
  return res;
}

}  // namespace npusim::inline NPUSIM_ABI::harness
