// LLM plumbing shared by every target: the KV mapping between a prefill and a decode program
// (kv_mapping.json), the roles of the other inputs (found from the graph's structure, not from
// tensor names), and the standard inputs (causal masks, positions).
#pragma once

#include <algorithm>

#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "npusim/core/file.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/ir/json.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

struct KvLayer {
  std::string prefill_key_output, prefill_value_output;
  std::string decode_key_input, decode_value_input;
  std::string decode_key_output, decode_value_output;
};

struct KvMapping {
  std::int64_t prefill_seq_len = 0;
  std::int64_t max_cache_len = 0;
  std::vector<KvLayer> layers;

  static KvMapping read(const std::string& path) {
    ir::json j = ir::parse_json(read_file(path, 64u << 20), path);
    KvMapping m;
    auto field = [&](const ir::json& o, const char* k, const std::string& what) { return ir::get_string(ir::require_field(o, k, what, path), what, path); };
    // A decode-only mapping (e.g. models/qwen2.5_1.5b_decode_c32k) names no prefill outputs and
    // no prefill length: complete() takes them from the prefill graph.
    if (j.is_object() && j.contains("prefill_seq_len"))
      m.prefill_seq_len = ir::get_int64(j["prefill_seq_len"], "prefill_seq_len", path);
    m.max_cache_len = ir::get_int64(ir::require_field(j, "max_cache_len", "kv mapping", path), "max_cache_len", path);
    const ir::json& layers = ir::require_field(j, "layers", "kv mapping", path);
    if (!layers.is_array()) throw Error(ErrorCode::parse, "\"layers\" must be a list", {.file = path});
    for (const ir::json& l : layers) {
      KvLayer k;
      if (l.is_object() && (l.contains("prefill_key_output") || l.contains("prefill_value_output"))) {
        k.prefill_key_output = field(l, "prefill_key_output", "layer");
        k.prefill_value_output = field(l, "prefill_value_output", "layer");
      }
      k.decode_key_input = field(l, "decode_key_input", "layer");
      k.decode_value_input = field(l, "decode_value_input", "layer");
      k.decode_key_output = field(l, "decode_key_output", "layer");
      k.decode_value_output = field(l, "decode_value_output", "layer");
      m.layers.push_back(std::move(k));
    }
    if (m.max_cache_len <= 0 || m.prefill_seq_len < 0 || m.max_cache_len < m.prefill_seq_len)
      throw Error(ErrorCode::parse, "kv mapping lengths are inconsistent", {.file = path,
                  .expected = "0 <= prefill_seq_len <= max_cache_len, max_cache_len > 0",
                  .found = std::to_string(m.prefill_seq_len) + ", " + std::to_string(m.max_cache_len)});
    return m;
  }

  // Fills what a decode-only mapping leaves out from the prefill graph, whose outputs are the
  // logits, then K and V per layer ([1, kv_heads, S, head_dim]; the fixtures' convention). A
  // mapping that names them is left as it is.
  void complete(const ir::Graph& prefill) {
    const bool named = std::all_of(layers.begin(), layers.end(), [](const KvLayer& l) { return !l.prefill_key_output.empty(); });
    if (!named) {
      if (prefill.outputs.size() != 1 + 2 * layers.size())
        throw Error(ErrorCode::graph, "the KV mapping names no prefill outputs, and the prefill graph's outputs are not logits then K, V per layer",
                    {.file = prefill.source, .expected = std::to_string(1 + 2 * layers.size()) + " outputs", .found = std::to_string(prefill.outputs.size())});
      for (std::size_t l = 0; l < layers.size(); ++l) {
        layers[l].prefill_key_output = prefill.tensor(prefill.outputs[1 + 2 * l]).name;
        layers[l].prefill_value_output = prefill.tensor(prefill.outputs[2 + 2 * l]).name;
      }
    }
    if (prefill_seq_len == 0 && !layers.empty()) {
      const ir::TensorInfo& k = prefill.tensor(prefill.outputs.at(1));
      if (k.shape.size() != 4)
        throw Error(ErrorCode::shape, "prefill K output is not [1, kv_heads, S, head_dim]", {.file = prefill.source, .tensor = k.name, .found = to_string(k.shape)});
      prefill_seq_len = k.shape[2];
      if (prefill_seq_len <= 0 || prefill_seq_len > max_cache_len)
        throw Error(ErrorCode::shape, "prefill length does not fit the KV cache", {.file = prefill.source, .tensor = k.name,
                    .expected = "1.." + std::to_string(max_cache_len), .found = std::to_string(prefill_seq_len)});
    }
  }
};

// Which graph input is what. Found structurally: token ids feed an embedding's index operand,
// position ids feed the rotary op, cache positions are the 1-D integer input, the mask is the
// remaining rank-4 float input that is not a KV buffer.
// Roles are kept by tensor name, so they apply to any program compiled from the graph.
struct Roles {
  std::string input_ids, attention_mask, position_ids, cache_position;
};

// Whether an embedding reads a graph input (the token ids): the graph is an LLM's.
inline bool has_token_input(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "aten.embedding.default" && n.inputs.size() == 2 && g.tensor(n.inputs[1]).kind == ir::TensorKind::input) return true;
  return false;
}

inline Roles detect_roles(const ir::Graph& g, const std::set<ir::TensorId>& kv_inputs = {}) {
  struct {
    ir::TensorId input_ids = ir::no_tensor, attention_mask = ir::no_tensor, position_ids = ir::no_tensor, cache_position = ir::no_tensor;
  } r;
  auto is_input = [&](ir::TensorId t) { return g.tensor(t).kind == ir::TensorKind::input; };
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "aten.embedding.default" && n.inputs.size() == 2 && is_input(n.inputs[1])) r.input_ids = n.inputs[1];
    if (n.op_type == "wrap_with_set_grad_enabled" && n.inputs.size() == 2 && is_input(n.inputs[1])) r.position_ids = n.inputs[1];
  }
  for (ir::TensorId t : g.inputs) {
    const ir::TensorInfo& info = g.tensor(t);
    if (t == r.input_ids || t == r.position_ids || kv_inputs.count(t)) continue;
    if (is_integral(info.dtype) && info.shape.size() == 1 && r.cache_position == ir::no_tensor) r.cache_position = t;
    else if (is_integral(info.dtype) && info.shape.size() == 2 && r.position_ids == ir::no_tensor) r.position_ids = t;
    else if (is_floating(info.dtype) && info.shape.size() == 4 && r.attention_mask == ir::no_tensor) r.attention_mask = t;
  }
  if (r.input_ids == ir::no_tensor)
    throw Error(ErrorCode::graph, "cannot find the token-id input (no embedding reads a graph input)", {.file = g.source});
  auto name = [&](ir::TensorId t) { return t == ir::no_tensor ? std::string() : g.tensor(t).name; };
  return {name(r.input_ids), name(r.attention_mask), name(r.position_ids), name(r.cache_position)};
}

inline double lowest_finite(DType t) {
  switch (t) {
    case DType::f16: return -65504.0;
    case DType::bf16: return -3.3895313892515355e38;
    case DType::f64: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

// Additive causal mask [1, 1, q_len, kv_len]: 0 where key <= q_start + query, else the dtype's
// lowest finite value (HF's convention), stored as float32 values exactly representable in `dtype`.
inline Tensor causal_mask(DType dtype, std::int64_t q_len, std::int64_t kv_len, std::int64_t q_start) {
  Tensor m = Tensor::empty(DType::f32, {1, 1, q_len, kv_len});
  const float low = static_cast<float>(lowest_finite(dtype));
  for (std::int64_t i = 0; i < q_len; ++i)
    for (std::int64_t j = 0; j < kv_len; ++j) m.data<float>()[i * kv_len + j] = j <= q_start + i ? 0.0f : low;
  return m;
}

inline Tensor positions(Shape shape, std::int64_t start) {
  Tensor t = Tensor::empty(DType::i64, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::int64_t>()[i] = start + i;
  return t;
}

// Builds the graph inputs for tokens at positions start..start+len-1, given the tensors for the
// remaining inputs (KV buffers) by id in `g`.
inline std::vector<Tensor> build_inputs(const ir::Graph& g, const Roles& r, std::span<const std::int64_t> tokens, std::int64_t start,
                                        const std::map<ir::TensorId, Tensor>& others) {
  std::vector<Tensor> in;
  const auto len = static_cast<std::int64_t>(tokens.size());
  for (ir::TensorId t : g.inputs) {
    const ir::TensorInfo& info = g.tensor(t);
    if (info.name == r.input_ids) {
      if (numel(info.shape) != len)
        throw Error(ErrorCode::shape, "token count does not match the program's sequence length", {.file = g.source, .tensor = info.name,
                    .expected = std::to_string(numel(info.shape)) + " tokens", .found = std::to_string(len)});
      in.push_back(Tensor::from_values<std::int64_t>(info.shape, tokens));
    } else if (!info.name.empty() && (info.name == r.position_ids || info.name == r.cache_position)) {
      in.push_back(positions(info.shape, start));
    } else if (!info.name.empty() && info.name == r.attention_mask) {
      in.push_back(causal_mask(info.dtype, info.shape[2], info.shape[3], start));
    } else if (auto it = others.find(t); it != others.end()) {
      in.push_back(it->second);
    } else {
      throw Error(ErrorCode::graph, "no value for this graph input", {.file = g.source, .tensor = info.name});
    }
  }
  return in;
}

inline std::size_t output_index(const ir::Graph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    if (g.tensor(g.outputs[i]).name == name) return i;
  throw Error(ErrorCode::graph, "kv mapping names a tensor that is not a graph output", {.file = g.source, .tensor = name});
}
inline ir::TensorId input_id(const ir::Graph& g, const std::string& name) {
  auto id = g.find(name);
  if (!id || g.tensor(*id).kind != ir::TensorKind::input)
    throw Error(ErrorCode::graph, "kv mapping names a tensor that is not a graph input", {.file = g.source, .tensor = name});
  return *id;
}

// Copies a prefill K/V output [B, H, S, D] into positions 0..S-1 of a zeroed cache [B, H, max, D].
inline Tensor place_in_cache(const Tensor& kv, const Shape& cache_shape) {
  Tensor src = kv.to(DType::f32);
  Tensor c = Tensor::zeros(DType::f32, cache_shape);
  const std::int64_t BH = cache_shape[0] * cache_shape[1], S = src.shape()[2], D = cache_shape[3], M = cache_shape[2];
  if (src.shape()[0] * src.shape()[1] != BH || src.shape()[3] != D || S > M)
    throw Error(ErrorCode::shape, "prefill K/V does not fit the decode cache", {.expected = to_string(cache_shape), .found = to_string(src.shape())});
  for (std::int64_t i = 0; i < BH; ++i)
    std::memcpy(c.data<float>() + i * M * D, src.data<float>() + i * S * D, static_cast<std::size_t>(S * D) * sizeof(float));
  return c;
}

}  // namespace npusim::inline NPUSIM_ABI::llm
