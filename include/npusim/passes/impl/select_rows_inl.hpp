// Definitions for npusim/passes/select_rows.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <map>

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/select_rows.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

namespace detail {

// Whether node `n` computes each row (dim 1) of its one output from the same row of its inputs.
inline bool works_row_by_row(const ir::Graph& g, const ir::Node& n, std::optional<std::size_t> op) {
  if (!op || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const Shape& out = g.tensor(n.outputs[0]).shape;
  if (out.size() < 2) return false;
  const ops::OpClass cls = ops::op_info(*op).op_class;
  const Shape& x = g.tensor(n.inputs[0]).shape;
  auto after_rows = [&](std::int64_t d) { return normalize_dim(d, static_cast<std::int64_t>(x.size())) >= 2; };
  if (cls == ops::OpClass::elementwise) return true;
  if (*op == ops::op_index_v<ops::Alias> || *op == ops::op_index_v<ops::Contiguous> || *op == ops::op_index_v<ops::Dropout>) return x == out;
  if (*op == ops::op_index_v<ops::Linear>) return x.size() == out.size();
  if (*op == ops::op_index_v<ops::Mean> || *op == ops::op_index_v<ops::Sum> || *op == ops::op_index_v<ops::Amax> ||
      *op == ops::op_index_v<ops::Amin>) {
    const auto a = ops::read_attrs<ops::Mean::Attrs>(n.attrs, n.op_type);  // the same fields for the four
    if (!a.dim || a.dim->empty()) return false;                            // all dims: rows are summed together
    for (auto d : *a.dim)
      if (!after_rows(d)) return false;
    return true;
  }
  if (*op == ops::op_index_v<ops::Softmax> || *op == ops::op_index_v<ops::LogSoftmax>)
    return after_rows(ops::read_attrs<ops::Softmax::Attrs>(n.attrs, n.op_type).dim);
  if (*op == ops::op_index_v<ops::LayerNorm>)
    return ops::read_attrs<ops::LayerNorm::Attrs>(n.attrs, n.op_type).normalized_shape.size() + 2 <= x.size();
  return false;
}

// Where operand `i` of a row-by-row node `n` has the rows: its dim (right-aligned against the
// output for pointwise ops, dim 1 of the data input otherwise), or -1 where it is the same for
// every row (a weight, a broadcast operand).
inline int row_dim(const ir::Graph& g, const ir::Node& n, std::size_t i, std::optional<std::size_t> op) {
  const Shape& t = g.tensor(n.inputs[i]).shape;
  if (ops::op_info(*op).op_class == ops::OpClass::elementwise) {
    const auto rd = 1 - (static_cast<std::int64_t>(g.tensor(n.outputs[0]).shape.size()) - static_cast<std::int64_t>(t.size()));
    return rd >= 0 && t[static_cast<std::size_t>(rd)] != 1 ? static_cast<int>(rd) : -1;
  }
  return i == 0 ? 1 : -1;
}

}  // namespace detail

NPUSIM_FUNC RowSelection select_output_row(ir::Graph& g, std::size_t output, const std::string& input) {
  if (output >= g.outputs.size())
    throw Error(ErrorCode::graph, "no such graph output to select rows of", {.file = g.source, .expected = "< " + std::to_string(g.outputs.size()),
                                                                             .found = std::to_string(output)});
  const TensorId target = g.outputs[output];
  const ir::TensorInfo& ti = g.tensor(target);
  if (ti.shape.size() < 2)
    throw Error(ErrorCode::graph, "selecting rows needs an output of rank >= 2 ([B, S, ...], rows along dim 1)",
                {.file = g.source, .tensor = ti.name, .found = to_string(ti.shape)});
  const std::int64_t rows = ti.shape[1];
  RowSelection r;
  if (rows == 1) return r;
  const std::int32_t start = ti.producer;
  std::vector<std::optional<std::size_t>> op(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) op[i] = ops::find_op(g.nodes[i].op_type);
  auto is_assert = [&](std::int32_t c) {
    const ir::Node& n = g.nodes[static_cast<std::size_t>(c)];
    return n.outputs.empty() && op[static_cast<std::size_t>(c)] && ops::op_info(*op[static_cast<std::size_t>(c)]).op_class == ops::OpClass::noop;
  };
  if (start < 0 || !detail::works_row_by_row(g, g.nodes[static_cast<std::size_t>(start)], op[static_cast<std::size_t>(start)]))
    throw Error(ErrorCode::graph, "cannot select rows of this output: its producer does not compute it row by row",
                {.file = g.source, .node = start >= 0 ? g.nodes[static_cast<std::size_t>(start)].name : "", .tensor = ti.name,
                 .expected = "a pointwise op, linear, a reduction or norm over dims after 1"});
  const auto readers = consumers(g);
  const auto is_output = graph_output_mask(g);
  // Readers of a tensor other than metadata asserts; `target` may be read by nothing else.
  for (auto c : readers[static_cast<std::size_t>(target)])
    if (!is_assert(c))
      throw Error(ErrorCode::graph, "cannot select rows of an output that other nodes read", {.file = g.source, .tensor = ti.name});
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i] == target && i != output)
      throw Error(ErrorCode::graph, "cannot select rows of a tensor returned twice", {.file = g.source, .tensor = ti.name});

  // The region, backwards from the producer: a node joins when it works row by row, has the rows
  // along dim 1, and every reader of its output is in the region and reads the rows there.
  std::vector<bool> in(g.nodes.size(), false);
  in[static_cast<std::size_t>(start)] = true;
  for (std::int32_t i = start - 1; i >= 0; --i) {
    const ir::Node& n = g.nodes[static_cast<std::size_t>(i)];
    if (!detail::works_row_by_row(g, n, op[static_cast<std::size_t>(i)])) continue;
    const TensorId o = n.outputs[0];
    if (is_output[static_cast<std::size_t>(o)] || g.tensor(o).shape[1] != rows) continue;
    bool ok = false;
    for (auto c : readers[static_cast<std::size_t>(o)]) {
      if (is_assert(c)) continue;
      const ir::Node& cn = g.nodes[static_cast<std::size_t>(c)];
      ok = in[static_cast<std::size_t>(c)];
      for (std::size_t k = 0; ok && k < cn.inputs.size(); ++k)
        if (cn.inputs[k] == o) ok = detail::row_dim(g, cn, k, op[static_cast<std::size_t>(c)]) == 1;
      if (!ok) break;
    }
    in[static_cast<std::size_t>(i)] = ok;
  }

  // The row index, and one index_select per (tensor, dim) entering the region, placed just before
  // the first region node that reads it.
  const TensorId row = g.add_tensor({fresh_name(g, input), {1}, DType::i64, ir::TensorKind::input, -1, 0, {}});
  g.inputs.push_back(row);
  r.input = g.tensor(row).name;
  std::map<std::pair<TensorId, int>, TensorId> selected;
  std::vector<ir::Node> nodes;
  nodes.reserve(g.nodes.size() + 8);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node n = g.nodes[i];
    if (is_assert(static_cast<std::int32_t>(i))) {
      bool reads_region = false;
      for (TensorId t : n.inputs) {
        const auto p = g.tensor(t).producer;
        reads_region = reads_region || (p >= 0 && in[static_cast<std::size_t>(p)]);
      }
      if (reads_region) continue;  // it asserts the shape this pass changes
    }
    if (in[i]) {
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const TensorId t = n.inputs[k];
        const auto p = g.tensor(t).producer;
        const int d = detail::row_dim(g, g.nodes[i], k, op[i]);
        if (d < 0 || (p >= 0 && in[static_cast<std::size_t>(p)])) continue;
        auto [it, fresh] = selected.try_emplace({t, d}, ir::no_tensor);
        if (fresh) {
          const ir::TensorInfo src = g.tensor(t);
          Shape s = src.shape;
          s[static_cast<std::size_t>(d)] = 1;
          it->second = g.add_tensor({fresh_name(g, src.name + "_row"), s, src.dtype, ir::TensorKind::intermediate, -1, 0, {}});
          ir::Node sel{g.tensor(it->second).name, "aten.index_select.default", {t, row}, {it->second}, {}};
          sel.attrs.set("dim", ir::AttrValue(static_cast<std::int64_t>(d)));
          nodes.push_back(std::move(sel));
          ++r.selects;
        }
        n.inputs[k] = it->second;
      }
      g.tensor(n.outputs[0]).shape[1] = 1;
      ++r.nodes;
    }
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  renumber_producers(g);
  verify(g, "select_output_row");
  return r;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
