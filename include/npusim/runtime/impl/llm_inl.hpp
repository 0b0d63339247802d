// Definitions for npusim/runtime/llm.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/runtime/llm.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

NPUSIM_FUNC KvMapping KvMapping::parse(const std::string& text, const std::string& path) {
  ir::json j = ir::parse_json(text, path);
  if (!j.is_object()) throw Error(ErrorCode::parse, "a kv mapping must be a JSON object", {.file = path, .found = ir::json_type_name(j)});
  KvMapping m;
  auto field = [&](const ir::json& o, const char* k, const std::string& what) { return ir::get_string(ir::require_field(o, k, what, path), what, path); };
  // A decode-only mapping (e.g. models/qwen2.5_1.5b_decode_c32k) names no prefill outputs and
  // no prefill length: complete() takes them from the prefill graph.
  const bool has_prefill_len = j.contains("prefill_seq_len");
  if (has_prefill_len) m.prefill_seq_len = ir::get_int64(j["prefill_seq_len"], "prefill_seq_len", path);
  m.max_cache_len = ir::get_int64(ir::require_field(j, "max_cache_len", "kv mapping", path), "max_cache_len", path);
  if (m.max_cache_len < 1 || m.max_cache_len > max_kv_cache_len)
    throw Error(ErrorCode::resource, "kv mapping: max_cache_len outside the supported range", {.file = path,
                .expected = "1.." + std::to_string(max_kv_cache_len), .found = std::to_string(m.max_cache_len)});
  if (has_prefill_len && (m.prefill_seq_len < 1 || m.prefill_seq_len > m.max_cache_len))
    throw Error(ErrorCode::parse, "kv mapping: prefill_seq_len does not fit the KV cache", {.file = path,
                .expected = "1.." + std::to_string(m.max_cache_len) + " (max_cache_len)", .found = std::to_string(m.prefill_seq_len)});
  const ir::json& layers = ir::require_field(j, "layers", "kv mapping", path);
  if (!layers.is_array()) throw Error(ErrorCode::parse, "\"layers\" must be a list", {.file = path, .found = ir::json_type_name(layers)});
  if (j.contains("num_layers")) {
    const std::int64_t n = ir::get_int64(j["num_layers"], "num_layers", path);
    if (n != static_cast<std::int64_t>(layers.size()))
      throw Error(ErrorCode::parse, "kv mapping: num_layers disagrees with the layers listed", {.file = path,
                  .expected = std::to_string(layers.size()) + " (the layers listed)", .found = std::to_string(n)});
  }
  // Prefill and decode tensors live in different graphs: a name may repeat across them, not within one.
  std::map<std::string, std::size_t> seen_prefill, seen_decode;  // tensor name -> the layer that maps it
  auto once = [&](std::map<std::string, std::size_t>& seen, const char* graph, const std::string& name, std::size_t layer) {
    if (name.empty()) return;
    auto [it, fresh] = seen.emplace(name, layer);
    if (!fresh)
      throw Error(ErrorCode::parse, std::string("kv mapping maps one ") + graph + " tensor twice", {.file = path, .tensor = name,
                  .expected = "each tensor in one role of one layer", .found = "layers " + std::to_string(it->second) + " and " + std::to_string(layer)});
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const ir::json& l = layers[i];
    const std::string what = "layer " + std::to_string(i);
    if (!l.is_object()) throw Error(ErrorCode::parse, "kv mapping: " + what + " must be an object", {.file = path, .found = ir::json_type_name(l)});
    if (l.contains("layer")) {
      const std::int64_t idx = ir::get_int64(l["layer"], "\"layer\"", path);
      if (idx != static_cast<std::int64_t>(i))
        throw Error(ErrorCode::parse, "kv mapping: layers must be listed once each, in order", {.file = path,
                    .expected = "\"layer\": " + std::to_string(i), .found = std::to_string(idx)});
    }
    KvLayer k;
    if (l.contains("prefill_key_output") || l.contains("prefill_value_output")) {
      k.prefill_key_output = field(l, "prefill_key_output", what);
      k.prefill_value_output = field(l, "prefill_value_output", what);
    }
    k.decode_key_input = field(l, "decode_key_input", what);
    k.decode_value_input = field(l, "decode_value_input", what);
    k.decode_key_output = field(l, "decode_key_output", what);
    k.decode_value_output = field(l, "decode_value_output", what);
    for (const std::string* n : {&k.prefill_key_output, &k.prefill_value_output}) once(seen_prefill, "prefill", *n, i);
    for (const std::string* n : {&k.decode_key_input, &k.decode_value_input, &k.decode_key_output, &k.decode_value_output}) once(seen_decode, "decode", *n, i);
    m.layers.push_back(std::move(k));
  }
  return m;
}

NPUSIM_FUNC void KvMapping::complete(const ir::Graph& prefill) {
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

NPUSIM_FUNC bool has_token_input(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "aten.embedding.default" && n.inputs.size() == 2 && g.tensor(n.inputs[1]).kind == ir::TensorKind::input) return true;
  return false;
}

NPUSIM_FUNC Roles detect_roles(const ir::Graph& g, const std::set<ir::TensorId>& kv_inputs) {
  struct {
    ir::TensorId input_ids = ir::no_tensor, attention_mask = ir::no_tensor, position_ids = ir::no_tensor, cache_position = ir::no_tensor,
                 output_row = ir::no_tensor;
  } r;
  auto is_input = [&](ir::TensorId t) { return g.tensor(t).kind == ir::TensorKind::input; };
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "aten.embedding.default" && n.inputs.size() == 2 && is_input(n.inputs[1])) r.input_ids = n.inputs[1];
    if (n.op_type == "wrap_with_set_grad_enabled" && n.inputs.size() == 2 && is_input(n.inputs[1])) r.position_ids = n.inputs[1];
    if (n.op_type == "aten.index_select.default" && n.inputs.size() == 2 && is_input(n.inputs[1]) &&
        g.tensor(n.inputs[1]).name.starts_with(logits_row_input))
      r.output_row = n.inputs[1];
  }
  for (ir::TensorId t : g.inputs) {
    const ir::TensorInfo& info = g.tensor(t);
    if (t == r.input_ids || t == r.position_ids || t == r.output_row || kv_inputs.count(t)) continue;
    if (is_integral(info.dtype) && info.shape.size() == 1 && r.cache_position == ir::no_tensor) r.cache_position = t;
    else if (is_integral(info.dtype) && info.shape.size() == 2 && r.position_ids == ir::no_tensor) r.position_ids = t;
    else if (is_floating(info.dtype) && info.shape.size() == 4 && r.attention_mask == ir::no_tensor) r.attention_mask = t;
  }
  if (r.input_ids == ir::no_tensor)
    throw Error(ErrorCode::graph, "not a language model: no embedding reads a graph input, so the graph takes no token ids "
                "(generate and bench-llm take a causal LM's prefill and decode cases)", {.file = g.source, .expected = "an aten.embedding reading a graph input"});
  auto name = [&](ir::TensorId t) { return t == ir::no_tensor ? std::string() : g.tensor(t).name; };
  return {name(r.input_ids), name(r.attention_mask), name(r.position_ids), name(r.cache_position), name(r.output_row)};
}

NPUSIM_FUNC double lowest_finite(DType t) {
  switch (t) {
    case DType::f16: return -65504.0;
    case DType::bf16: return -3.3895313892515355e38;
    case DType::f64: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

NPUSIM_FUNC Tensor causal_mask(DType dtype, std::int64_t q_len, std::int64_t kv_len, std::int64_t q_start) {
  Tensor m = Tensor::empty(DType::f32, {1, 1, q_len, kv_len});
  const float low = static_cast<float>(lowest_finite(dtype));
  for (std::int64_t i = 0; i < q_len; ++i)
    for (std::int64_t j = 0; j < kv_len; ++j) m.data<float>()[i * kv_len + j] = j <= q_start + i ? 0.0f : low;
  return m;
}

NPUSIM_FUNC Tensor positions(Shape shape, std::int64_t start) {
  Tensor t = Tensor::empty(DType::i64, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::int64_t>()[i] = start + i;
  return t;
}

NPUSIM_FUNC std::vector<Tensor> build_inputs(const ir::Graph& g, const Roles& r, std::span<const std::int64_t> tokens, std::int64_t start,
                                             const std::map<ir::TensorId, Tensor>& others, std::int64_t output_row) {
  std::vector<Tensor> in;
  const auto len = static_cast<std::int64_t>(tokens.size());
  if (output_row >= len)
    throw Error(ErrorCode::shape, "output row past the tokens", {.file = g.source, .tensor = r.output_row,
                .expected = "< " + std::to_string(len), .found = std::to_string(output_row)});
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
    } else if (!info.name.empty() && info.name == r.output_row) {
      in.push_back(Tensor::from_values<std::int64_t>(info.shape, std::vector<std::int64_t>{output_row < 0 ? len - 1 : output_row}));
    } else if (auto it = others.find(t); it != others.end()) {
      in.push_back(it->second);
    } else {
      throw Error(ErrorCode::graph, "no value for this graph input", {.file = g.source, .tensor = info.name});
    }
  }
  return in;
}

NPUSIM_FUNC std::size_t output_index(const ir::Graph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    if (g.tensor(g.outputs[i]).name == name) return i;
  throw Error(ErrorCode::graph, "kv mapping names a tensor that is not a graph output", {.file = g.source, .tensor = name});
}

NPUSIM_FUNC ir::TensorId input_id(const ir::Graph& g, const std::string& name) {
  auto id = g.find(name);
  if (!id || g.tensor(*id).kind != ir::TensorKind::input)
    throw Error(ErrorCode::graph, "kv mapping names a tensor that is not a graph input", {.file = g.source, .tensor = name});
  return *id;
}

NPUSIM_FUNC void check_kv_mapping(const KvMapping& m, const ir::Graph& prefill, const ir::Graph& decode) {
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const KvLayer& k = m.layers[l];
    const std::pair<const std::string*, const std::string*> kv[] = {{&k.decode_key_input, &k.prefill_key_output},
                                                                     {&k.decode_value_input, &k.prefill_value_output}};
    for (auto [in, pre] : kv) {
      const ir::TensorInfo& cache = decode.tensor(input_id(decode, *in));
      const std::string layer = "layer " + std::to_string(l);
      if (cache.shape.size() != 4 || cache.shape[2] != m.max_cache_len)
        throw Error(ErrorCode::shape, "kv mapping: " + layer + ": the decode graph's KV cache input disagrees with max_cache_len",
                    {.file = decode.source, .tensor = *in, .expected = "[B, H, " + std::to_string(m.max_cache_len) + ", D]", .found = to_string(cache.shape)});
      if (pre->empty()) continue;
      const ir::TensorInfo& p = prefill.tensor(prefill.outputs[output_index(prefill, *pre)]);
      if (p.shape.size() != 4 || p.shape[0] != cache.shape[0] || p.shape[1] != cache.shape[1] || p.shape[3] != cache.shape[3] || p.shape[2] > cache.shape[2])
        throw Error(ErrorCode::shape, "kv mapping: " + layer + ": the prefill K/V output does not fit the decode graph's KV cache",
                    {.file = prefill.source, .tensor = *pre, .expected = "[" + std::to_string(cache.shape[0]) + ", " + std::to_string(cache.shape[1]) +
                     ", <= " + std::to_string(cache.shape[2]) + ", " + std::to_string(cache.shape[3]) + "]", .found = to_string(p.shape)});
      // The prefill length is the prefill graph's: its K/V outputs hold that many positions.
      if (p.shape[2] != m.prefill_seq_len)
        throw Error(ErrorCode::shape, "kv mapping: prefill_seq_len disagrees with the prefill graph's K/V outputs", {.file = prefill.source,
                    .tensor = *pre, .expected = std::to_string(p.shape[2]) + " positions", .found = "prefill_seq_len " + std::to_string(m.prefill_seq_len)});
    }
    // The updated caches the decode step returns have the caches' shapes (the next step takes them back).
    const std::pair<const std::string*, const std::string*> io[] = {{&k.decode_key_output, &k.decode_key_input},
                                                                     {&k.decode_value_output, &k.decode_value_input}};
    for (auto [out, in] : io) {
      const ir::TensorInfo& o = decode.tensor(decode.outputs[output_index(decode, *out)]);
      const ir::TensorInfo& i = decode.tensor(input_id(decode, *in));
      if (o.shape != i.shape || o.dtype != i.dtype)
        throw Error(ErrorCode::shape, "kv mapping: layer " + std::to_string(l) + ": the decode step's updated cache differs from the cache it reads",
                    {.file = decode.source, .tensor = *out, .expected = std::string(dtype_name(i.dtype)) + to_string(i.shape) + " (as '" + *in + "')",
                     .found = std::string(dtype_name(o.dtype)) + to_string(o.shape)});
    }
  }
  // Every decode input is fed: a mapped KV cache, or one of the roles the driver builds.
  std::set<ir::TensorId> kv;
  for (const KvLayer& k : m.layers) kv.insert(input_id(decode, k.decode_key_input)), kv.insert(input_id(decode, k.decode_value_input));
  const Roles r = detect_roles(decode, kv);
  for (ir::TensorId t : decode.inputs) {
    const std::string& name = decode.tensor(t).name;
    if (!kv.count(t) && name != r.input_ids && name != r.attention_mask && name != r.position_ids && name != r.cache_position)
      throw Error(ErrorCode::graph, "kv mapping: a decode graph input is neither a mapped KV cache nor a token, mask or position input",
                  {.file = decode.source, .tensor = name, .expected = std::to_string(m.layers.size()) + " mapped layer(s) covering every KV input"});
  }
}

NPUSIM_FUNC Tensor place_in_cache(const Tensor& kv, const Shape& cache_shape) {
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
