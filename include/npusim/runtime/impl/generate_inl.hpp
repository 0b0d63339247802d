// Definitions for npusim/runtime/generate.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>

#include "npusim/config.hpp"
#include "npusim/core/range.hpp"
#include "npusim/runtime/generate.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

NPUSIM_FUNC LlmPrograms::LlmPrograms(Runner& p, Runner& d, KvMapping m, const ir::Graph& prefill_ir,
                                     const ir::Graph& decode_ir) : prefill(p), decode(d), map(std::move(m)) {
  map.complete(prefill_ir);
  check_kv_mapping(map, prefill_ir, decode_ir);
  prefill_roles = detect_roles(prefill_ir);
  std::set<ir::TensorId> kv;
  for (const auto& l : map.layers) kv.insert(input_id(decode_ir, l.decode_key_input)), kv.insert(input_id(decode_ir, l.decode_value_input));
  decode_roles = detect_roles(decode_ir, kv);
}

NPUSIM_FUNC KvState::KvState(const ir::Graph& prefill, const ir::Graph& decode, const KvMapping& map) : map_(map) {
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

NPUSIM_FUNC void KvState::from_prefill(Runner& decode, const std::vector<Tensor>& outs) {
  cache_.clear();
  const ir::Graph& g = decode.graph();
  auto seed = [&](ir::TensorId in, const Tensor& kv) {
    cache_[in] = carried_ && decode.seed_carried(g.tensor(in).name, kv) ? Tensor() : place_in_cache(kv, g.tensor(in).shape);
  };
  for (std::size_t l = 0; l < pk_.size(); ++l) seed(dk_in_[l], outs.at(pk_[l])), seed(dv_in_[l], outs.at(pv_[l]));
}

NPUSIM_FUNC void KvState::carry_on(Runner& decode) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const KvLayer& l : map_.layers) pairs.push_back({l.decode_key_output, l.decode_key_input}), pairs.push_back({l.decode_value_output, l.decode_value_input});
  carried_ = decode.carry(pairs);
}

NPUSIM_FUNC void KvState::from_decode(const std::vector<Tensor>& outs) {
  if (carried_) {
    for (auto& [_, t] : cache_) t = Tensor();
    return;
  }
  for (std::size_t l = 0; l < dk_in_.size(); ++l) {
    cache_[dk_in_[l]] = outs.at(dk_out_[l]);
    cache_[dv_in_[l]] = outs.at(dv_out_[l]);
  }
}

NPUSIM_FUNC void KvState::set(const ir::Graph& decode, const std::function<Tensor(std::size_t, bool, const Shape&)>& fill) {
  for (std::size_t l = 0; l < dk_in_.size(); ++l) {
    cache_[dk_in_[l]] = fill(l, false, decode.tensor(dk_in_[l]).shape);
    cache_[dv_in_[l]] = fill(l, true, decode.tensor(dv_in_[l]).shape);
  }
}

NPUSIM_FUNC std::int64_t KvState::capacity(const ir::Graph& decode) const {
  std::int64_t c = map_.max_cache_len;
  for (auto t : dk_in_) c = std::min(c, decode.tensor(t).shape.size() == 4 ? decode.tensor(t).shape[2] : 0);
  return c;
}

NPUSIM_FUNC void KvState::check_position(const ir::Graph& decode, std::int64_t last_position) const {
  const std::int64_t c = capacity(decode);
  if (last_position >= c)
    throw Error(ErrorCode::resource, "decode position beyond the KV cache", {.file = decode.source,
                .expected = "position < " + std::to_string(c) + " (the cache length)", .found = std::to_string(last_position)});
}

NPUSIM_FUNC Session::Session(LlmPrograms& m) : m_(m), kv_(m.prefill.graph(), m.decode.graph(), m.map) {
  kv_.carry_on(m.decode);
  max_len_ = kv_.capacity(m.decode.graph());
  prefill_len_ = m.map.prefill_seq_len;
}

NPUSIM_FUNC std::vector<float> Session::prefill(std::span<const std::int64_t> prompt) {
  if (prompt.empty()) throw Error(ErrorCode::attr, "empty prompt");
  const std::int64_t n = static_cast<std::int64_t>(prompt.size());
  if (n > max_len_)
    throw Error(ErrorCode::resource, "prompt longer than the KV cache", {.expected = "<= " + std::to_string(max_len_) + " tokens",
                                                                         .found = std::to_string(n)});
  const std::int64_t first = std::min(n, prefill_len_);
  std::vector<std::int64_t> padded(prompt.begin(), prompt.begin() + first);
  padded.resize(static_cast<std::size_t>(prefill_len_), 0);  // right padding: never attended to
  const ir::Graph& pg = m_.prefill.graph();
  auto t0 = clock::now();
  std::vector<Tensor> out = m_.prefill.run(build_inputs(pg, m_.prefill_roles, padded, 0, {}, first - 1));
  // A prefill with an output-row input computed that one row only.
  std::vector<float> logits = row(out.at(0), m_.prefill_roles.output_row.empty() ? first - 1 : 0);
  kv_.from_prefill(m_.decode, out);
  out.clear();
  pos_ = first;
  for (std::int64_t i = first; i < n; ++i) logits = step(prompt[static_cast<std::size_t>(i)]);  // the rest, one token at a time
  prefill_ms_ = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  return logits;
}

NPUSIM_FUNC std::vector<float> Session::step(std::int64_t token) {
  check_position(pos_);
  const ir::Graph& dg = m_.decode.graph();
  auto t0 = clock::now();
  std::vector<Tensor> out = m_.decode.run(build_inputs(dg, m_.decode_roles, std::span<const std::int64_t>(&token, 1), pos_, kv_.inputs()));
  step_ms_ = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  kv_.from_decode(out);
  ++pos_;
  return row(out.at(0), -1);
}

NPUSIM_FUNC void Session::seek(std::int64_t position, const std::function<Tensor(std::size_t, bool, const Shape&)>& fill) {
  if (position < 0 || position >= max_len_)
    throw Error(ErrorCode::resource, "position outside the KV cache", {.expected = "[0, " + std::to_string(max_len_) + ")", .found = std::to_string(position)});
  if (fill) kv_.set(m_.decode.graph(), fill);
  pos_ = position;
}

// Row r of the logits (r < 0: the last) as float32, converting only that row (a prefill's logits
// are [1, S, V]: 39 MB of bf16 for Qwen2.5-1.5B at S = 128, of which one row is wanted).
NPUSIM_FUNC std::vector<float> Session::row(const Tensor& logits, std::int64_t r) {
  const std::int64_t V = logits.shape().empty() ? 0 : logits.shape().back(), rows = V ? logits.numel() / V : 0;
  if (r < 0) r = rows - 1;
  if (r < 0 || r >= rows)
    throw Error(ErrorCode::shape, "logits row out of range", {.expected = "a row of " + to_string(logits.shape()), .found = std::to_string(r)});
  std::vector<float> out(static_cast<std::size_t>(V));
  convert_elements(logits.dtype(), static_cast<const std::byte*>(logits.raw()) + static_cast<std::size_t>(r * V) * dtype_size(logits.dtype()), DType::f32,
                   out.data(), V);
  return out;
}

NPUSIM_FUNC Generation generate(LlmPrograms& m, std::span<const std::int64_t> prompt, const GenerateOptions& o,
                                const std::function<void(std::int64_t token, std::size_t index)>& on_token) {
  Session s(m);
  Sampler sampler(o.sampling);
  Generation g;
  std::vector<float> logits = s.prefill(prompt);
  g.prefill_ms = s.last_prefill_ms();
  for (;;) {
    // NaN or Inf logits (weights or rotary figures out of range, an overflowing half dtype) would
    // pick token 0 forever: refused, with the step and position where they first appear.
    if (auto bad = std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); }); bad != logits.end())
      throw Error(ErrorCode::runtime, "the model's logits are not finite at generation step " + std::to_string(g.tokens.size()) + " (position " +
                                          std::to_string(s.position() - 1) + "): the weights, their dtype or the rotary figures overflow",
                  {.file = (g.tokens.empty() ? m.prefill : m.decode).graph().source, .expected = "finite logits",
                   .found = NumberRange::format(*bad) + " for token id " + std::to_string(bad - logits.begin())});
    const std::int64_t t = sampler.pick(logits);
    g.tokens.push_back(t);
    if (on_token) on_token(t, g.tokens.size() - 1);
    if (std::find(o.eos.begin(), o.eos.end(), t) != o.eos.end()) {
      g.stop = "eos";
      break;
    }
    if (g.tokens.size() >= o.max_new_tokens) {
      g.stop = "max_new_tokens";
      break;
    }
    // The token just picked would go to a position the KV cache does not have: stop there, and
    // say so (stop reason "cache_full"; the caller reports it).
    if (s.position() >= s.max_positions()) {
      g.stop = "cache_full";
      break;
    }
    logits = s.step(t);
    g.step_ms.push_back(s.last_step_ms());
  }
  return g;
}

NPUSIM_FUNC Generation generate_greedy(LlmPrograms& m, std::span<const std::int64_t> prompt, std::size_t new_tokens,
                                       const std::function<void(std::int64_t, std::size_t)>& on_token) {
  GenerateOptions o;
  o.max_new_tokens = new_tokens;
  return generate(m, prompt, o, on_token);
}

}  // namespace npusim::inline NPUSIM_ABI::llm
