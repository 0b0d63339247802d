// Definitions for npusim/ops/registry.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

NPUSIM_FUNC std::optional<std::size_t> find_op(std::string_view op_type) {
  auto it = std::lower_bound(op_name_table.begin(), op_name_table.end(), op_type,
                             [](const detail::NameEntry& e, std::string_view n) { return e.name < n; });
  if (it == op_name_table.end() || it->name != op_type) return std::nullopt;
  return it->index;
}

NPUSIM_FUNC const std::array<OpInfo, op_count>& op_infos() {
  static const auto infos = detail::build_infos(all_ops{});
  return infos;
}

NPUSIM_FUNC const OpInfo& op_info(std::size_t index) { return op_infos().at(index); }

NPUSIM_FUNC std::size_t require_op(const ir::Node& n) {
  if (auto i = find_op(n.op_type)) return *i;
  throw Error(ErrorCode::unknown_op, "unknown op type '" + n.op_type + "': npusim has no definition for it",
              {.node = n.name, .expected = "one of the " + std::to_string(op_count) + " registered ops (npusim ops lists them)",
               .found = n.op_type});
}

NPUSIM_FUNC void check_node(const ir::Graph& g, const ir::Node& n) {
  try {
    std::size_t idx = require_op(n);
    const OpInfo& info = op_info(idx);
    Specs in;
    in.reserve(n.inputs.size());
    for (auto t : n.inputs) in.push_back({g.tensor(t).shape, g.tensor(t).dtype});
    Specs out = info.infer(n.attrs, n.op_type, in);
    if (out.size() != n.outputs.size())
      throw Error(ErrorCode::graph, "output count differs from the op's semantics",
                  {.expected = std::to_string(out.size()), .found = std::to_string(n.outputs.size())});
    for (std::size_t i = 0; i < out.size(); ++i) {
      const ir::TensorInfo& t = g.tensor(n.outputs[i]);
      bool dtype_ok = info.output_dtype_from_ir ? is_floating(t.dtype) : t.dtype == out[i].dtype;
      if (t.shape != out[i].shape || !dtype_ok)
        throw Error(ErrorCode::shape, "IR output metadata disagrees with the op's shape/dtype inference",
                    {.tensor = t.name, .expected = to_string(out[i]), .found = std::string(dtype_name(t.dtype)) + to_string(t.shape)});
    }
  } catch (Error& e) {
    throw e.with_node(n.name).with_file(g.source);
  }
}

NPUSIM_FUNC void check_known_ops(const ir::Graph& g) {
  struct Unknown {
    std::string op, first;
    std::size_t count = 0;
  };
  std::vector<Unknown> unknown;
  for (const ir::Node& n : g.nodes) {
    if (find_op(n.op_type)) continue;
    auto it = std::find_if(unknown.begin(), unknown.end(), [&](const Unknown& u) { return u.op == n.op_type; });
    if (it == unknown.end()) unknown.push_back({n.op_type, n.name, 1});
    else ++it->count;
  }
  if (unknown.empty()) return;
  std::string list;
  for (const Unknown& u : unknown)
    list += (list.empty() ? "" : ", ") + u.op + " (" + std::to_string(u.count) + (u.count == 1 ? " node" : " nodes") + ", first '" + u.first + "')";
  throw Error(ErrorCode::unknown_op,
              "the model uses " + std::to_string(unknown.size()) + " op type(s) npusim has no definition for: " + list,
              {.file = g.source, .node = unknown.front().first,
               .expected = "ops among the " + std::to_string(op_count) + " registered (npusim ops lists them)", .found = unknown.front().op});
}

NPUSIM_FUNC void check_graph(const ir::Graph& g) {
  check_known_ops(g);
  for (const ir::Node& n : g.nodes) check_node(g, n);
}

}  // namespace npusim::inline NPUSIM_ABI::ops
