// Definitions for ir/reader.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "npusim/core/file.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/ir/reader.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

namespace detail {

struct MetaJson {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  std::optional<std::string> producer;
  std::int64_t producer_idx = 0;
};

inline MetaJson parse_meta(const json& j, const std::string& what, const std::string& src) {
  MetaJson m;
  m.name = get_string(require_field(j, "name", what, src), what + " name", src);
  if (m.name.empty()) throw Error(ErrorCode::parse, what + " has an empty name", {.file = src});
  const std::string w = what + " '" + m.name + "'";
  const json& shape = require_field(j, "shape", w, src);
  if (!shape.is_array()) throw Error(ErrorCode::parse, w + " shape must be a list", {.file = src, .found = json_type_name(shape)});
  for (const json& d : shape) {
    std::int64_t v = get_int64(d, w + " shape entry", src);
    if (v < 0) throw Error(ErrorCode::shape, w + " has a negative dimension", {.file = src, .found = std::to_string(v)});
    m.shape.push_back(v);
  }
  try {
    checked_numel(m.shape);
  } catch (Error& e) {
    throw e.with_file(src).with_tensor(m.name);
  }
  const json& dt = require_field(j, "dtype", w, src);
  std::string ds = get_string(dt, w + " dtype", src);
  auto parsed = parse_dtype(ds);
  if (!parsed)
    throw Error(ErrorCode::dtype, "unsupported dtype '" + ds + "'", {.file = src, .tensor = m.name,
                .expected = "float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8 or bool"});
  m.dtype = *parsed;
  try {
    checked_nbytes(m.shape, m.dtype);  // every later size computation (planner, arena) stays in range
  } catch (Error& e) {
    throw e.with_file(src).with_tensor(m.name);
  }
  if (auto it = j.find("producer_node"); it != j.end() && !it->is_null()) {
    m.producer = get_string(*it, w + " producer_node", src);
    if (auto jt = j.find("producer_output_idx"); jt != j.end()) m.producer_idx = get_int64(*jt, w + " producer_output_idx", src);
  }
  return m;
}

inline AttrValue to_attr(const json& j, const std::string& what, const std::string& src) {
  switch (j.type()) {
    case json::value_t::null: return AttrValue(nullptr);
    case json::value_t::boolean: return AttrValue(j.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return AttrValue(get_int64(j, what, src));
    case json::value_t::number_float: return AttrValue(j.get<double>());
    case json::value_t::string: return AttrValue(j.get<std::string>());
    case json::value_t::array: {
      AttrList l;
      l.reserve(j.size());
      for (const json& e : j) l.push_back(to_attr(e, what, src));
      return AttrValue(std::move(l));
    }
    default:
      throw Error(ErrorCode::attr, what + ": unsupported JSON value of type " + json_type_name(j), {.file = src});
  }
}

// Nested list -> flat values, checking that the nesting matches `shape`.
inline void flatten_constant(const json& j, const Shape& shape, std::size_t dim, std::vector<double>& out,
                             const std::string& what, const std::string& src) {
  if (dim == shape.size()) {
    out.push_back(get_number(j, what, src));
    return;
  }
  if (!j.is_array() || static_cast<std::int64_t>(j.size()) != shape[dim])
    throw Error(ErrorCode::shape, what + ": nested data does not match the declared shape " + to_string(shape), {.file = src});
  for (const json& e : j) flatten_constant(e, shape, dim + 1, out, what, src);
}

// The steps of read_ir_json, in file order.

inline void read_graph_inputs(Graph& g, const json& jinputs, const std::string& src) {
  for (const json& ji : jinputs) {
    MetaJson m = parse_meta(ji, "graph input", src);
    if (g.find(m.name)) throw Error(ErrorCode::graph, "duplicate graph input name", {.file = src, .tensor = m.name});
    g.inputs.push_back(g.add_tensor({m.name, m.shape, m.dtype, TensorKind::input, -1, 0, {}}));
  }
}

// The "weights" list (state_dict keys, returned by key) and the placeholders weight_name_mapping
// gives them; a weight with no placeholder is named by its key (older exporters).
inline std::unordered_map<std::string, MetaJson> read_weights(Graph& g, const json& root, const json& jweights, const std::string& src) {
  std::unordered_map<std::string, MetaJson> weight_meta;
  std::vector<std::string> weight_order;
  for (const json& jw : jweights) {
    MetaJson m = parse_meta(jw, "weight", src);
    if (weight_meta.count(m.name)) throw Error(ErrorCode::graph, "duplicate weight", {.file = src, .tensor = m.name});
    weight_order.push_back(m.name);
    weight_meta.emplace(m.name, std::move(m));
  }
  std::vector<std::pair<std::string, std::string>> mapping;  // placeholder -> key, file order
  if (auto it = root.find("weight_name_mapping"); it != root.end() && !it->is_null()) {
    if (!it->is_object()) throw Error(ErrorCode::parse, "weight_name_mapping must be an object", {.file = src});
    for (auto& [ph, key] : it->items()) mapping.emplace_back(ph, get_string(key, "weight_name_mapping['" + ph + "']", src));
  }
  std::unordered_set<std::string> mapped_keys;
  for (auto& [ph, key] : mapping) {
    auto wm = weight_meta.find(key);
    if (wm == weight_meta.end())
      throw Error(ErrorCode::graph, "weight_name_mapping names a state_dict key that is not in \"weights\"",
                  {.file = src, .tensor = ph, .expected = "a key listed in weights", .found = key});
    if (g.find(ph)) throw Error(ErrorCode::graph, "weight placeholder name clashes with a graph input", {.file = src, .tensor = ph});
    TensorKind kind = ph.starts_with("c_") ? TensorKind::constant : TensorKind::weight;
    g.weights.push_back(g.add_tensor({ph, wm->second.shape, wm->second.dtype, kind, -1, 0, key}));
    mapped_keys.insert(key);
  }
  for (const std::string& key : weight_order) {
    if (mapped_keys.count(key) || g.find(key)) continue;
    const MetaJson& m = weight_meta.at(key);
    g.weights.push_back(g.add_tensor({key, m.shape, m.dtype, TensorKind::weight, -1, 0, key}));
  }
  return weight_meta;
}

// Lifted constants with their values ("constants", each also listed in "weights").
inline void read_constants(Graph& g, const json& root, const std::unordered_map<std::string, MetaJson>& weight_meta, const std::string& src) {
  auto it = root.find("constants");
  if (it == root.end() || it->is_null()) return;
  if (!it->is_object()) throw Error(ErrorCode::parse, "constants must be an object", {.file = src});
  for (auto& [key, jc] : it->items()) {
    const std::string what = "constant '" + key + "'";
    auto wm = weight_meta.find(key);
    if (wm == weight_meta.end()) throw Error(ErrorCode::graph, "constant is not listed in \"weights\"", {.file = src, .tensor = key});
    DType dt = parse_dtype_or_throw(get_string(require_field(jc, "dtype", what, src), what + " dtype", src), what);
    std::vector<double> vals;
    flatten_constant(require_field(jc, "data", what, src), wm->second.shape, 0, vals, what, src);
    Tensor f64 = Tensor::from_values<double>(wm->second.shape, std::span<const double>(vals));
    g.constants[key] = f64.to(dt);
  }
}

// What read_node needs to resolve a node's inputs: every node's index by name (so that a forward
// reference can be told from a missing one), the graph inputs' names and the node list.
struct NodeScope {
  std::unordered_map<std::string, std::size_t> node_index;
  std::unordered_set<std::string> input_names;
  const json* jnodes = nullptr;
};

inline NodeScope index_nodes(const Graph& g, const json& jnodes, const std::string& src) {
  NodeScope sc;
  sc.jnodes = &jnodes;
  for (std::size_t i = 0; i < jnodes.size(); ++i) {
    std::string nm = get_string(require_field(jnodes[i], "name", "node #" + std::to_string(i), src), "node name", src);
    if (!sc.node_index.emplace(nm, i).second) throw Error(ErrorCode::graph, "duplicate node name", {.file = src, .node = nm});
  }
  for (TensorId t : g.inputs) sc.input_names.insert(g.tensor(t).name);
  return sc;
}

// Input m of node ni: the tensor it names, checked against its producer link (a graph input or an
// earlier node's output) or, without one, an existing graph input, weight placeholder or output.
inline TensorId resolve_node_input(const Graph& g, const MetaJson& m, std::size_t ni, const NodeScope& sc, const std::string& src) {
  std::optional<TensorId> id = g.find(m.name);
  if (m.producer) {
    bool is_input = sc.input_names.count(*m.producer) > 0;
    auto pn = sc.node_index.find(*m.producer);
    if (!is_input && pn == sc.node_index.end())
      throw Error(ErrorCode::graph, "input '" + m.name + "' names a producer that does not exist",
                  {.tensor = m.name, .expected = "a node or graph input", .found = *m.producer});
    if (!is_input && pn->second >= ni)
      throw Error(ErrorCode::graph, "input '" + m.name + "' is produced by a later node: nodes are not in topological order",
                  {.tensor = m.name, .found = "producer '" + *m.producer + "'"});
    if (is_input) {
      if (m.producer_idx != 0 || !id || g.tensor(*id).kind != TensorKind::input)
        throw Error(ErrorCode::graph, "input names graph input '" + *m.producer + "' inconsistently", {.tensor = m.name});
    } else {
      const Node& prod = g.nodes[pn->second];
      if (m.producer_idx < 0 || m.producer_idx >= static_cast<std::int64_t>(prod.outputs.size()))
        throw Error(ErrorCode::graph, "producer_output_idx out of range for producer '" + prod.name + "'",
                    {.tensor = m.name, .expected = "< " + std::to_string(prod.outputs.size()), .found = std::to_string(m.producer_idx)});
      TensorId want = prod.outputs[static_cast<std::size_t>(m.producer_idx)];
      if (g.tensor(want).name != m.name)
        throw Error(ErrorCode::graph, "producer link does not match the producer's output name",
                    {.tensor = m.name, .expected = g.tensor(want).name, .found = m.name});
      id = want;
    }
  } else if (!id || g.tensor(*id).kind == TensorKind::intermediate) {
    if (!id && sc.node_index.count(m.name) == 0) {
      const json& jnodes = *sc.jnodes;
      bool later = false;
      for (std::size_t k = ni; k < jnodes.size() && !later; ++k)
        if (auto outs = jnodes[k].is_object() ? jnodes[k].find("outputs") : jnodes[k].end(); outs != jnodes[k].end() && outs->is_array())
          for (const json& jo : *outs)
            if (jo.is_object() && ir::get_string_or(jo, "name", "", "output", src) == m.name) later = true;
      throw Error(ErrorCode::graph,
                  later ? "input '" + m.name + "' is produced by a later node: nodes are not in topological order"
                        : "input '" + m.name + "' has no producer: it is not a graph input, a weight placeholder or an earlier node's output",
                  {.tensor = m.name});
    }
    if (!id) throw Error(ErrorCode::graph, "input '" + m.name + "' cannot be resolved", {.tensor = m.name});
  }
  const TensorInfo& t = g.tensor(*id);
  if (t.shape != m.shape || t.dtype != m.dtype)
    throw Error(ErrorCode::graph, "input '" + m.name + "' metadata disagrees with its source",
                {.tensor = m.name, .expected = std::string(dtype_name(t.dtype)) + " " + to_string(t.shape),
                 .found = std::string(dtype_name(m.dtype)) + " " + to_string(m.shape)});
  return *id;
}

// Node ni: its op type, inputs (resolved), outputs (new tensors) and attributes; errors name it.
inline Node read_node(Graph& g, std::size_t ni, const NodeScope& sc, const std::string& src) {
  const json& jn = (*sc.jnodes)[ni];
  Node node;
  node.name = jn["name"].get<std::string>();
  const std::string what = "node '" + node.name + "'";
  try {
    node.op_type = get_string(require_field(jn, "op_type", what, src), "op_type", src);
    const json& jin = require_field(jn, "inputs", what, src);
    const json& jout = require_field(jn, "outputs", what, src);
    if (!jin.is_array() || !jout.is_array()) throw Error(ErrorCode::parse, "inputs and outputs must be lists");
    for (const json& ji : jin) node.inputs.push_back(resolve_node_input(g, parse_meta(ji, "input", src), ni, sc, src));
    for (const json& jo : jout) {
      MetaJson m = parse_meta(jo, "output", src);
      if (g.find(m.name)) throw Error(ErrorCode::graph, "output name is already used by another tensor", {.tensor = m.name});
      node.outputs.push_back(g.add_tensor({m.name, m.shape, m.dtype, TensorKind::intermediate, static_cast<std::int32_t>(ni),
                                           static_cast<std::int32_t>(node.outputs.size()), {}}));
    }
    if (auto it = jn.find("attrs"); it != jn.end() && !it->is_null()) {
      if (!it->is_object()) throw Error(ErrorCode::parse, "attrs must be an object", {.found = json_type_name(*it)});
      for (auto& [k, v] : it->items()) node.attrs.items.emplace_back(k, to_attr(v, "attr '" + k + "'", src));
    }
  } catch (Error& e) {
    throw e.with_node(node.name).with_file(src);
  }
  return node;
}

inline void read_graph_outputs(Graph& g, const json& joutputs, const std::string& src) {
  for (const json& jo : joutputs) {
    MetaJson m = parse_meta(jo, "graph output", src);
    auto id = g.find(m.name);
    if (!id) throw Error(ErrorCode::graph, "graph output is not produced by any node or input", {.file = src, .tensor = m.name});
    const TensorInfo& t = g.tensor(*id);
    if (t.shape != m.shape || t.dtype != m.dtype)
      throw Error(ErrorCode::graph, "graph output metadata disagrees with its producer",
                  {.file = src, .tensor = m.name, .expected = std::string(dtype_name(t.dtype)) + " " + to_string(t.shape),
                   .found = std::string(dtype_name(m.dtype)) + " " + to_string(m.shape)});
    g.outputs.push_back(*id);
  }
}

}  // namespace detail

NPUSIM_FUNC Graph read_ir_json(const json& root, const std::string& src) {
  using namespace detail;
  if (!root.is_object()) throw Error(ErrorCode::parse, "IR root must be a JSON object", {.file = src, .found = json_type_name(root)});
  Graph g;
  g.source = src;
  if (auto it = root.find("model_name"); it != root.end() && it->is_string()) g.model_name = it->get<std::string>();
  if (auto it = root.find("pytorch_version"); it != root.end() && it->is_string()) g.pytorch_version = it->get<std::string>();
  auto require_array = [&](const char* key) -> const json& {
    const json& a = require_field(root, key, "IR", src);
    if (!a.is_array()) throw Error(ErrorCode::parse, std::string("IR field \"") + key + "\" must be a list", {.file = src, .found = json_type_name(a)});
    return a;
  };
  const json& jinputs = require_array("graph_inputs");
  const json& joutputs = require_array("graph_outputs");
  const json& jweights = require_array("weights");
  const json& jnodes = require_array("nodes");

  read_graph_inputs(g, jinputs, src);
  const auto weight_meta = read_weights(g, root, jweights, src);
  read_constants(g, root, weight_meta, src);
  const NodeScope scope = index_nodes(g, jnodes, src);
  g.nodes.reserve(jnodes.size());
  for (std::size_t ni = 0; ni < jnodes.size(); ++ni) g.nodes.push_back(read_node(g, ni, scope, src));
  read_graph_outputs(g, joutputs, src);
  return g;
}

NPUSIM_FUNC Graph read_ir_string(std::string_view text, const std::string& source, const ReadOptions& opt) {
  json root = parse_json(text, source, opt.max_json_depth);
  return read_ir_json(root, source);
}

NPUSIM_FUNC Graph read_ir_file(const std::string& path, const ReadOptions& opt) {
  std::string text = read_file(path, opt.max_file_bytes);
  return read_ir_string(text, path, opt);
}

}  // namespace npusim::inline NPUSIM_ABI::ir
