// Prefill + decode driving for the generate command: the teacher-forced check against the
// fixtures (prefill logits, per-step decode logits, greedy tokens) and free-running greedy
// generation. Works with any Runner; the KV cache travels between steps as host tensors.
#pragma once

#include <chrono>
#include <functional>

#include "npusim/runtime/compare.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

// The decode program's KV inputs for each layer, built from the prefill outputs.
class KvState {
 public:
  KvState(const ir::Graph& prefill, const ir::Graph& decode, const KvMapping& map) : map_(map) {
    for (const KvLayer& l : map.layers) {
      pk_.push_back(output_index(prefill, l.prefill_key_output));
      pv_.push_back(output_index(prefill, l.prefill_value_output));
      dk_in_.push_back(input_id(decode, l.decode_key_input));
      dv_in_.push_back(input_id(decode, l.decode_value_input));
      dk_out_.push_back(output_index(decode, l.decode_key_output));
      dv_out_.push_back(output_index(decode, l.decode_value_output));
    }
    for (auto t : dk_in_) ids_.insert(t);
    for (auto t : dv_in_) ids_.insert(t);
  }
  void from_prefill(const ir::Graph& decode, const std::vector<Tensor>& outs) {
    cache_.clear();
    for (std::size_t l = 0; l < pk_.size(); ++l) {
      cache_[dk_in_[l]] = place_in_cache(outs.at(pk_[l]), decode.tensor(dk_in_[l]).shape);
      cache_[dv_in_[l]] = place_in_cache(outs.at(pv_[l]), decode.tensor(dv_in_[l]).shape);
    }
  }
  void from_decode(const std::vector<Tensor>& outs) {
    for (std::size_t l = 0; l < dk_in_.size(); ++l) {
      cache_[dk_in_[l]] = outs.at(dk_out_[l]);
      cache_[dv_in_[l]] = outs.at(dv_out_[l]);
    }
  }
  const std::map<ir::TensorId, Tensor>& inputs() const { return cache_; }
  const std::set<ir::TensorId>& input_ids() const { return ids_; }

  // Positions the decode program can hold: the KV inputs' sequence length (the mapping's
  // max_cache_len when it maps no layer).
  std::int64_t capacity(const ir::Graph& decode) const {
    std::int64_t c = map_.max_cache_len;
    for (auto t : dk_in_) c = std::min(c, decode.tensor(t).shape.size() == 4 ? decode.tensor(t).shape[2] : 0);
    return c;
  }
  // Refuses, before anything runs, a decode step at a position the cache does not have: the
  // index_copy that writes the new K/V row would otherwise be the first to notice, mid-run.
  void check_position(const ir::Graph& decode, std::int64_t last_position) const {
    const std::int64_t c = capacity(decode);
    if (last_position >= c)
      throw Error(ErrorCode::resource, "decode position beyond the KV cache", {.file = decode.source,
                  .expected = "position < " + std::to_string(c) + " (the cache length)", .found = std::to_string(last_position)});
  }

 private:
  KvMapping map_;
  std::vector<std::size_t> pk_, pv_, dk_out_, dv_out_;
  std::vector<ir::TensorId> dk_in_, dv_in_;
  std::set<ir::TensorId> ids_;
  std::map<ir::TensorId, Tensor> cache_;
};

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

// Teacher-forced check: step s feeds decode_tokens[s] at position S + s and compares its logits
// with decode_logits[s] and its argmax with decode_tokens[s + 1].
// The two programs of a model and what the driver needs to know about their inputs. Roles come
// from the IR graphs (structure), and apply by name to whatever the runners execute.
struct LlmPrograms {
  Runner& prefill;
  Runner& decode;
  KvMapping map;
  Roles prefill_roles, decode_roles;

  LlmPrograms(Runner& p, Runner& d, KvMapping m, const ir::Graph& prefill_ir, const ir::Graph& decode_ir)
      : prefill(p), decode(d), map(std::move(m)) {
    prefill_roles = detect_roles(prefill_ir);
    std::set<ir::TensorId> kv;
    for (const auto& l : map.layers) kv.insert(input_id(decode_ir, l.decode_key_input)), kv.insert(input_id(decode_ir, l.decode_value_input));
    decode_roles = detect_roles(decode_ir, kv);
  }
};

inline GenerateCheck check_generation(LlmPrograms& m, std::span<const std::int64_t> prompt, const Tensor& prefill_logits_ref,
                                      std::span<const std::int64_t> decode_tokens, const Tensor& decode_logits_ref,
                                      const GenerateCallbacks& cb = {}) {
  using clock = std::chrono::steady_clock;
  Runner &prefill = m.prefill, &decode = m.decode;
  const ir::Graph &pg = prefill.graph(), &dg = decode.graph();
  KvState kv(pg, dg, m.map);
  const Roles &pr = m.prefill_roles, &dr = m.decode_roles;
  GenerateCheck res;
  // The references come from a file: check their sizes before indexing with them.
  const auto steps = static_cast<std::size_t>(decode_logits_ref.shape().empty() ? 0 : decode_logits_ref.shape()[0]);
  if (decode_tokens.size() < steps + 1)
    throw Error(ErrorCode::shape, "fewer reference decode tokens than decode steps + 1",
                {.tensor = "decode_tokens", .expected = ">= " + std::to_string(steps + 1), .found = std::to_string(decode_tokens.size())});
  if (steps > 0) kv.check_position(dg, static_cast<std::int64_t>(prompt.size() + steps - 1));

  auto t0 = clock::now();
  std::vector<Tensor> pout = prefill.run(build_inputs(pg, pr, prompt, 0, {}));
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
  auto last = std::span<const float>(logits.data<float>() + (S - 1) * V, static_cast<std::size_t>(V));
  Tensor ref_f = prefill_logits_ref.to(DType::f32);
  res.prefill_top1 = argmax(last);
  res.prefill_top1_ref = argmax(std::span<const float>(ref_f.data<float>() + (keep - 1) * V, static_cast<std::size_t>(V)));
  if (cb.on_prefill) cb.on_prefill(res);

  kv.from_prefill(dg, pout);
  pout.clear();
  Tensor dref = decode_logits_ref.to(DType::f32);
  for (std::size_t s = 0; s < steps; ++s) {
    StepCheck sc;
    sc.position = static_cast<std::int64_t>(prompt.size() + s);
    std::int64_t tok = decode_tokens[s];
    auto t1 = clock::now();
    std::vector<Tensor> dout = decode.run(build_inputs(dg, dr, std::span<const std::int64_t>(&tok, 1), sc.position, kv.inputs()));
    sc.ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
    std::vector<float> row = last_row(dout.at(0));
    Tensor want = Tensor::wrap(DType::f32, {V}, dref.data<float>() + static_cast<std::int64_t>(s) * V, dref.owner());
    sc.metrics = compare(Tensor::from_values<float>({V}, std::span<const float>(row)), want);
    sc.token = argmax(row);
    sc.token_ref = decode_tokens[s + 1];
    res.token_matches += sc.token == sc.token_ref;
    kv.from_decode(dout);
    res.steps.push_back(sc);
    if (cb.on_step) cb.on_step(sc, s, steps);
  }
  return res;
}

// Free-running greedy generation: prefill on the prompt, then feed each argmax back.
struct Generation {
  std::vector<std::int64_t> tokens;  // first = argmax of the prefill's last position
  double prefill_ms = 0;
  std::vector<double> step_ms;
};

inline Generation generate_greedy(LlmPrograms& m, std::span<const std::int64_t> prompt, std::size_t new_tokens,
                                  const std::function<void(std::int64_t, std::size_t)>& on_token = {}) {
  using clock = std::chrono::steady_clock;
  Runner &prefill = m.prefill, &decode = m.decode;
  const ir::Graph &pg = prefill.graph(), &dg = decode.graph();
  KvState kv(pg, dg, m.map);
  const Roles &pr = m.prefill_roles, &dr = m.decode_roles;
  if (new_tokens > 1) kv.check_position(dg, static_cast<std::int64_t>(prompt.size() + new_tokens - 2));
  Generation g;
  auto t0 = clock::now();
  std::vector<Tensor> pout = prefill.run(build_inputs(pg, pr, prompt, 0, {}));
  g.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  g.tokens.push_back(argmax(last_row(pout.at(0))));
  if (on_token) on_token(g.tokens.back(), 0);
  kv.from_prefill(dg, pout);
  pout.clear();
  for (std::size_t s = 1; s < new_tokens; ++s) {
    auto pos = static_cast<std::int64_t>(prompt.size() + s - 1);
    std::int64_t tok = g.tokens.back();
    auto t1 = clock::now();
    std::vector<Tensor> dout = decode.run(build_inputs(dg, dr, std::span<const std::int64_t>(&tok, 1), pos, kv.inputs()));
    g.step_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t1).count());
    g.tokens.push_back(argmax(last_row(dout.at(0))));
    if (on_token) on_token(g.tokens.back(), s);
    kv.from_decode(dout);
  }
  return g;
}

}  // namespace npusim::inline NPUSIM_ABI::llm
