// LLM plumbing shared by every target: the KV mapping between a prefill and a decode program
// (kv_mapping.json), the roles of the other inputs (found from the graph's structure, not from
// tensor names), and the standard inputs (causal masks, positions).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

struct KvLayer {
  std::string prefill_key_output, prefill_value_output;
  std::string decode_key_input, decode_value_input;
  std::string decode_key_output, decode_value_output;
};

// The longest KV cache a mapping may declare (positions): 2^24, 512x Qwen2.5's 32k. Checked when
// read; the decode graph's KV inputs must then have exactly that length (check_kv_mapping).
inline constexpr std::int64_t max_kv_cache_len = std::int64_t{1} << 24;

struct KvMapping {
  std::int64_t prefill_seq_len = 0;
  std::int64_t max_cache_len = 0;
  std::vector<KvLayer> layers;

  static KvMapping read(const std::string& path) { return parse(read_file(path, 64u << 20), path); }

  // kv_mapping.json's text (`path` names it in errors). Refused: lengths outside
  // 1 <= prefill_seq_len <= max_cache_len <= max_kv_cache_len (prefill_seq_len may be left out),
  // a num_layers other than the number of layers listed, a "layer" index out of order or repeated,
  // and a tensor mapped twice.
  static KvMapping parse(const std::string& text, const std::string& path);

  // Fills what a decode-only mapping leaves out from the prefill graph, whose outputs are the
  // logits, then K and V per layer ([1, kv_heads, S, head_dim]; the fixtures' convention). A
  // mapping that names them is left as it is.
  void complete(const ir::Graph& prefill);
};

// Which graph input is what. Found structurally: token ids feed an embedding's index operand,
// position ids feed the rotary op, cache positions are the 1-D integer input, the mask is the
// remaining rank-4 float input that is not a KV buffer, the output row is the integer input named
// logits_row... that an index_select reads as its index (passes::select_output_row, given that
// name by the driver: a prefill that computes the logits of one row; the name keeps a model's own
// index_select of an input from being taken for it).
// Roles are kept by tensor name, so they apply to any program compiled from the graph.
struct Roles {
  std::string input_ids, attention_mask, position_ids, cache_position, output_row;
};

// The name a driver gives the row input of a prefill that computes one row of logits.
inline constexpr const char* logits_row_input = "logits_row";

// Whether an embedding reads a graph input (the token ids): the graph is an LLM's.
bool has_token_input(const ir::Graph& g);

Roles detect_roles(const ir::Graph& g, const std::set<ir::TensorId>& kv_inputs = {});

double lowest_finite(DType t);

// Additive causal mask [1, 1, q_len, kv_len]: 0 where key <= q_start + query, else the dtype's
// lowest finite value (HF's convention), stored as float32 values exactly representable in `dtype`.
Tensor causal_mask(DType dtype, std::int64_t q_len, std::int64_t kv_len, std::int64_t q_start);

Tensor positions(Shape shape, std::int64_t start);

// Builds the graph inputs for tokens at positions start..start+len-1, given the tensors for the
// remaining inputs (KV buffers) by id in `g`. A graph with an output-row input gets `output_row`
// (-1: the last token's row).
std::vector<Tensor> build_inputs(const ir::Graph& g, const Roles& r, std::span<const std::int64_t> tokens, std::int64_t start,
                                 const std::map<ir::TensorId, Tensor>& others, std::int64_t output_row = -1);

std::size_t output_index(const ir::Graph& g, const std::string& name);
ir::TensorId input_id(const ir::Graph& g, const std::string& name);

// The mapping against its two graphs: every tensor it names exists in the role it names, and each
// decode KV input is [B, H, max_cache_len, D] with the prefill's K/V outputs of the same B, H, D
// and at most that many positions. Called once the mapping is complete (LlmPrograms).
void check_kv_mapping(const KvMapping& m, const ir::Graph& prefill, const ir::Graph& decode);

// Copies a prefill K/V output [B, H, S, D] into positions 0..S-1 of a zeroed cache [B, H, max, D].
Tensor place_in_cache(const Tensor& kv, const Shape& cache_shape);

}  // namespace npusim::inline NPUSIM_ABI::llm

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/llm_inl.hpp"
#endif
