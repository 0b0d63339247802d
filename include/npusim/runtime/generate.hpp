// Driving an LLM made of a prefill and a decode program (any target): the KV mapping binds their
// tensors, the input roles come from the IR's structure, and a Session keeps the KV caches between
// steps. Runners that update a KV input in place (the CPU target) return it without a copy, so
// passing it back costs nothing: the cache stays where it is.
//
// Prompts: shorter than the prefill length are right-padded (the padded positions are never
// attended to and are overwritten as decoding reaches them); longer ones are prefilled in full
// and the rest fed through decode steps. Nothing is truncated. Decoding stops at an EOS id or at
// the token budget; a budget the cache cannot hold is an error before anything runs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <span>

#include "npusim/config.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/runtime/sampling.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

// The two programs of a model and what the driver needs to know about their inputs. Roles come
// from the IR graphs (structure), and apply by name to whatever the runners execute.
struct LlmPrograms {
  Runner& prefill;
  Runner& decode;
  KvMapping map;
  Roles prefill_roles, decode_roles;

  LlmPrograms(Runner& p, Runner& d, KvMapping m, const ir::Graph& prefill_ir, const ir::Graph& decode_ir);
};

// The decode program's KV inputs for each layer, from the prefill outputs, then from each step.
class KvState {
 public:
  KvState(const ir::Graph& prefill, const ir::Graph& decode, const KvMapping& map);
  // A cache the decode runner carries on its device is seeded there (Runner::seed_carried: the
  // prefill's rows and zeros, no host tensor of the whole cache); the others are built here.
  void from_prefill(Runner& decode, const std::vector<Tensor>& outs);
  // Asks the decode runner to keep the cache where it is (device memory) between steps: the first
  // step passes the cache built from the prefill (nothing where from_prefill seeded it on the
  // device), later steps pass nothing for it (an empty tensor), and a defined tensor (set())
  // replaces what the runner carries.
  void carry_on(Runner& decode);
  void from_decode(const std::vector<Tensor>& outs);
  // Sets every cache to `fill(layer, is_value, shape)` (benchmarks, tests).
  void set(const ir::Graph& decode, const std::function<Tensor(std::size_t, bool, const Shape&)>& fill);
  const std::map<ir::TensorId, Tensor>& inputs() const { return cache_; }
  const std::set<ir::TensorId>& input_ids() const { return ids_; }

  // Positions the decode program can hold: the KV inputs' sequence length (the mapping's
  // max_cache_len when it maps no layer).
  std::int64_t capacity(const ir::Graph& decode) const;
  // Refuses, before anything runs, a decode step at a position the cache does not have: the
  // index_copy that writes the new K/V row would otherwise be the first to notice, mid-run.
  void check_position(const ir::Graph& decode, std::int64_t last_position) const;

 private:
  std::vector<std::size_t> pk_, pv_, dk_out_, dv_out_;
  std::vector<ir::TensorId> dk_in_, dv_in_;
  std::set<ir::TensorId> ids_;
  std::map<ir::TensorId, Tensor> cache_;
  KvMapping map_;
  bool carried_ = false;
};

class Session {
 public:
  using clock = std::chrono::steady_clock;

  explicit Session(LlmPrograms& m);

  std::int64_t position() const { return pos_; }       // next position to fill
  std::int64_t max_positions() const { return max_len_; }
  std::int64_t prefill_length() const { return prefill_len_; }
  double last_prefill_ms() const { return prefill_ms_; }
  double last_step_ms() const { return step_ms_; }

  // Runs the prompt; returns the logits at its last token.
  std::vector<float> prefill(std::span<const std::int64_t> prompt);

  // Feeds `token` at the next position; returns its logits.
  std::vector<float> step(std::int64_t token);

  // For benchmarks: jump to `position` with caches from `fill` (e.g. random K/V), or only move
  // the position (keeping the caches) when `fill` is empty.
  void seek(std::int64_t position, const std::function<Tensor(std::size_t, bool, const Shape&)>& fill = {});
  const KvState& kv() const { return kv_; }
  // Refuses a decode step at `last_position` or beyond before anything runs.
  void check_position(std::int64_t last_position) const { kv_.check_position(m_.decode.graph(), last_position); }

 private:
  // Logits row `r` of [.., S, V] (r < 0: the last row), as floats.
  static std::vector<float> row(const Tensor& logits, std::int64_t r);

  LlmPrograms& m_;
  KvState kv_;
  std::int64_t pos_ = 0, max_len_ = 0, prefill_len_ = 0;
  double prefill_ms_ = 0, step_ms_ = 0;
};

struct GenerateOptions {
  std::size_t max_new_tokens = 16;
  std::vector<std::int64_t> eos;  // stop after generating one of these
  Sampling sampling;
};

struct Generation {
  std::vector<std::int64_t> tokens;  // generated, the first from the prompt's last logits
  double prefill_ms = 0;             // time to first token
  std::vector<double> step_ms;
  std::string stop;                  // "eos", "max_new_tokens" or "cache_full" (the KV cache's last position was used)
};

Generation generate(LlmPrograms& m, std::span<const std::int64_t> prompt, const GenerateOptions& o,
                    const std::function<void(std::int64_t token, std::size_t index)>& on_token = {});

// Greedy generation (the fixtures' rule): kept for callers that want just that.
Generation generate_greedy(LlmPrograms& m, std::span<const std::int64_t> prompt, std::size_t new_tokens,
                           const std::function<void(std::int64_t, std::size_t)>& on_token = {});

}  // namespace npusim::inline NPUSIM_ABI::llm

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/generate_inl.hpp"
#endif
