// The op registry: one type list of policies, a constexpr (sorted, uniqueness-checked) table from
// ATen op strings to list indices, and plain runtime data derived from it (OpInfo), so that passes,
// the partitioner and serialisers are ordinary code. Adding an op = one policy + one entry here.
#pragma once

#include <algorithm>
#include <array>
#include <optional>

#include "npusim/ir/graph.hpp"
#include "npusim/meta/type_list.hpp"
#include "npusim/ops/attention.hpp"
#include "npusim/ops/conv.hpp"
#include "npusim/ops/creation.hpp"
#include "npusim/ops/elementwise.hpp"
#include "npusim/ops/index.hpp"
#include "npusim/ops/linalg.hpp"
#include "npusim/ops/norm.hpp"
#include "npusim/ops/pool.hpp"
#include "npusim/ops/reduce.hpp"
#include "npusim/ops/rotary.hpp"
#include "npusim/ops/shape.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

using unary_ops = meta::list<Relu, Silu, Neg, Abs, Rsqrt, Sqrt, Reciprocal, Cos, Sin, Exp, Log, Tanh, Erf, Sigmoid, Gelu,
                             Hardtanh, Hardswish, Hardsigmoid, LeakyRelu, Clamp, ClampMin, PowScalar>;
using binary_ops = meta::list<Add, Sub, Rsub, Mul, Div, Maximum, Minimum, Gt, Lt, Ge, Le, Eq, Ne>;
using view_ops = meta::list<View, Reshape, Flatten, Unflatten, Unsqueeze, Squeeze, Alias, Contiguous, Dropout, GetItem>;
using movement_ops = meta::list<Transpose, TransposeT, Permute, Expand, Slice, Select, Cat, Chunk, Split, Unbind>;
using other_ops = meta::list<Where, AssertMetadata, ToDtype, Linear, Matmul, Addmm, Conv2d, MaxPool2d, AvgPool2d,
                             AdaptiveAvgPool2d, BatchNorm, LayerNorm, Mean, Sum, Amax, Amin, Argmax, Argmin, Softmax,
                             LogSoftmax, Embedding, IndexCopy, IndexSelect, ScaledDotProductAttention, Full, Zeros, Ones,
                             Arange, ScalarTensor, RotaryHop>;
using all_ops = meta::concat_t<unary_ops, binary_ops, view_ops, movement_ops, other_ops>;

template <class Op>
concept OpPolicy = requires {
  { Op::id } -> std::convertible_to<std::string_view>;
  { Op::aten.size() } -> std::convertible_to<std::size_t>;
  { Op::op_class } -> std::convertible_to<OpClass>;
  typename Op::Attrs;
};

template <class Op>
inline constexpr std::size_t op_index_v = meta::index_of_v<Op, all_ops>;

namespace detail {

struct NameEntry {
  std::string_view name;
  std::size_t index;
};

template <class... Ops>
consteval std::size_t count_names(meta::list<Ops...>) {
  static_assert((OpPolicy<Ops> && ...), "NPUSIM: every entry of all_ops must be an op policy (id, aten, op_class, Attrs)");
  return (Ops::aten.size() + ...);
}

template <class... Ops>
consteval auto build_name_table(meta::list<Ops...> l) {
  std::array<NameEntry, count_names(l)> t{};
  std::size_t at = 0, idx = 0;
  (
      [&] {
        for (auto n : Ops::aten) t[at++] = {n, idx};
        ++idx;
      }(),
      ...);
  std::sort(t.begin(), t.end(), [](const NameEntry& a, const NameEntry& b) { return a.name < b.name; });
  return t;
}

template <class... Ops>
consteval bool ids_unique(meta::list<Ops...>) {
  std::array<std::string_view, sizeof...(Ops)> ids{Ops::id...};
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

}  // namespace detail

inline constexpr auto op_name_table = detail::build_name_table(all_ops{});
static_assert(std::adjacent_find(op_name_table.begin(), op_name_table.end(),
                                 [](const auto& a, const auto& b) { return a.name == b.name; }) == op_name_table.end(),
              "NPUSIM: two op policies claim the same ATen name");
static_assert(detail::ids_unique(all_ops{}), "NPUSIM: two op policies share an id");

inline constexpr std::size_t op_count = all_ops::size;

inline std::optional<std::size_t> find_op(std::string_view op_type) {
  auto it = std::lower_bound(op_name_table.begin(), op_name_table.end(), op_type,
                             [](const detail::NameEntry& e, std::string_view n) { return e.name < n; });
  if (it == op_name_table.end() || it->name != op_type) return std::nullopt;
  return it->index;
}

// Calls f.template operator()<Op>() for the op at `index`.
template <class R, class F>
R dispatch_op(std::size_t index, F&& f) {
  return meta::dispatch<R>(all_ops{}, index, f);
}

// Runtime facts about an op, as plain data.
struct OpInfo {
  std::string_view id;
  std::span<const std::string_view> aten;
  OpClass op_class;
  bool output_dtype_from_ir;
  Specs (*infer)(const ir::AttrMap&, std::string_view op_type, InSpecs);
  std::vector<std::pair<std::string, std::string>> (*attr_schema)();
};

namespace detail {
template <class Op>
Specs infer_from_map(const ir::AttrMap& m, std::string_view op_type, InSpecs in) {
  return Op::infer(read_attrs<typename Op::Attrs>(m, op_type), in);
}
template <class... Ops>
constexpr auto build_infos(meta::list<Ops...>) {
  return std::array<OpInfo, sizeof...(Ops)>{OpInfo{
      Ops::id, std::span<const std::string_view>(Ops::aten.data(), Ops::aten.size()), Ops::op_class,
      [] {
        if constexpr (requires { Ops::output_dtype_from_ir; }) return Ops::output_dtype_from_ir;
        else return false;
      }(),
      &infer_from_map<Ops>, &describe_attrs<typename Ops::Attrs>}...};
}
}  // namespace detail

inline const std::array<OpInfo, op_count>& op_infos() {
  static const auto infos = detail::build_infos(all_ops{});
  return infos;
}
inline const OpInfo& op_info(std::size_t index) { return op_infos().at(index); }

// Looks an op up by its node, with the error a user needs when it is not there.
inline std::size_t require_op(const ir::Node& n) {
  if (auto i = find_op(n.op_type)) return *i;
  throw Error(ErrorCode::unknown_op, "unknown op type '" + n.op_type + "': npusim has no definition for it",
              {.node = n.name, .expected = "one of the " + std::to_string(op_count) + " registered ops (npusim ops lists them)",
               .found = n.op_type});
}

// Shape/dtype inference for a node against the IR's own output metadata: the IR and the op's
// semantics must agree, or the node (or our understanding of it) is wrong.
inline void check_node(const ir::Graph& g, const ir::Node& n) {
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

// Every op type of the graph must be registered: one error lists all the unknown ones (op type,
// node count, first node), not only the first met.
inline void check_known_ops(const ir::Graph& g) {
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

inline void check_graph(const ir::Graph& g) {
  check_known_ops(g);
  for (const ir::Node& n : g.nodes) check_node(g, n);
}

}  // namespace npusim::inline NPUSIM_ABI::ops
