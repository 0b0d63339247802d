// The op registry: one type list of policies, a constexpr (sorted, uniqueness-checked) table from
// ATen op strings to list indices, and plain runtime data derived from it (OpInfo), so that passes,
// the partitioner and serialisers are ordinary code. Adding an op = one policy + one entry here.
#pragma once

#include <algorithm>
#include <array>
#include <optional>

#include "npusim/ir/graph.hpp"
#include "npusim/meta/type_list.hpp"
#include "npusim/ops/aliases.hpp"
#include "npusim/ops/attention.hpp"
#include "npusim/ops/conv.hpp"
#include "npusim/ops/creation.hpp"
#include "npusim/ops/einsum.hpp"
#include "npusim/ops/elementwise.hpp"
#include "npusim/ops/index.hpp"
#include "npusim/ops/linalg.hpp"
#include "npusim/ops/moe.hpp"
#include "npusim/ops/norm.hpp"
#include "npusim/ops/pool.hpp"
#include "npusim/ops/quantized.hpp"
#include "npusim/ops/reduce.hpp"
#include "npusim/ops/rotary.hpp"
#include "npusim/ops/shape.hpp"
#include "npusim/ops/window.hpp"
#include "npusim/ops/writes.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

using unary_ops = meta::list<Relu, Silu, Neg, Abs, Rsqrt, Sqrt, Reciprocal, Cos, Sin, Exp, Log, Tanh, Erf, Sigmoid, Gelu,
                             Hardtanh, Hardswish, Hardsigmoid, LeakyRelu, Clamp, ClampMin, PowScalar>;
using binary_ops = meta::list<Add, Sub, Rsub, Mul, Div, Maximum, Minimum, Gt, Lt, Ge, Le, Eq, Ne>;
using view_ops = meta::list<View, Reshape, Flatten, Unflatten, Unsqueeze, Squeeze, Alias, Contiguous, Dropout, GetItem>;
using movement_ops = meta::list<Transpose, TransposeT, Permute, Expand, Slice, Select, Cat, Chunk, Split, Unbind>;
using other_ops = meta::list<Where, AssertMetadata, ToDtype, Linear, Matmul, Addmm, Conv2d, MaxPool2d, AvgPool2d,
                             AdaptiveAvgPool2d, BatchNorm, LayerNorm, Mean, Sum, Amax, Amin, Argmax, Argmin, Softmax,
                             LogSoftmax, Embedding, IndexCopy, IndexSelect, ScaledDotProductAttention, Full, Zeros, Ones,
                             Arange, ScalarTensor, RotaryHop, QuantizePerTensor, DequantizePerTensor, QConv2d,
                             QLinear, QAdd, QMaxPool2d, QCat, TopK, ZerosLike, IndexAdd>;
// The ops the model-zoo sweep found missing (swin, maxvit, Gemma: issue 40).
using zoo_ops = meta::list<Einsum, IndexTensor, Pad, ReflectionPad, ReplicationPad, CircularPad, Roll, LinalgVectorNorm, MaskedFill, Swapaxes, ExpandAs, TypeAs, NewZeros, RepeatInterleave, Copy,
                           Zero, Fill, SliceScatter>;
using all_ops = meta::concat_t<unary_ops, binary_ops, view_ops, movement_ops, other_ops, zoo_ops>;

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

std::optional<std::size_t> find_op(std::string_view op_type);

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

const std::array<OpInfo, op_count>& op_infos();
const OpInfo& op_info(std::size_t index);

// Looks an op up by its node, with the error a user needs when it is not there.
std::size_t require_op(const ir::Node& n);

// Shape/dtype inference for a node against the IR's own output metadata: the IR and the op's
// semantics must agree, or the node (or our understanding of it) is wrong.
void check_node(const ir::Graph& g, const ir::Node& n);

// Every op type of the graph must be registered: one error lists all the unknown ones (op type,
// node count, first node), not only the first met.
void check_known_ops(const ir::Graph& g);

void check_graph(const ir::Graph& g);

}  // namespace npusim::inline NPUSIM_ABI::ops

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/ops/impl/registry_inl.hpp"
#endif
