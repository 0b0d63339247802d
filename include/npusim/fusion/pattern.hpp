// What fusion patterns are made of. A pattern is a policy struct:
//
//   struct RmsNorm {
//     static constexpr std::string_view name = "rmsnorm";
//     static std::optional<fusion::Match> match(const fusion::GraphView& v, std::int32_t node);
//   };
//
// match() looks at the graph around `node` (any node of the pattern may be the anchor) and
// returns the member nodes, the kernel inputs in the order its kernels expect, and parameters.
// finalize() then applies the rules every fusion must obey: members not yet fused, internal
// tensors read only inside the kernel, and every outside reader of a kernel output placed after
// the kernel's last member (the kernel runs there), which keeps the schedule a topological order.
// A pattern whose members read nothing from outside produced after its first member may say
// `static constexpr bool may_run_early = true;`: outside readers of its outputs may then come
// before its last member (q/k/v projections whose views are read before the last projection), and
// fuse() schedules kernels in a topological order instead (the kernel runs before those readers).
#pragma once

#include <optional>

#include "npusim/config.hpp"
#include "npusim/fusion/kernel.hpp"
#include "npusim/ops/registry.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

using ir::TensorId;

struct Match {
  std::vector<std::int32_t> nodes;
  std::vector<TensorId> inputs;
  ir::AttrMap params;
};

class GraphView {
 public:
  explicit GraphView(const ir::Graph& g);

  const ir::Graph& graph() const { return g_; }
  const ir::Node& node(std::int32_t i) const { return g_.nodes[static_cast<std::size_t>(i)]; }
  std::size_t op(std::int32_t i) const { return ops_[static_cast<std::size_t>(i)]; }
  template <class Op>
  bool is(std::int32_t i) const {
    return i >= 0 && static_cast<std::size_t>(i) < ops_.size() && ops_[static_cast<std::size_t>(i)] == ops::op_index_v<Op>;
  }
  template <class Op>
  typename Op::Attrs attrs(std::int32_t i) const {
    return ops::read_attrs<typename Op::Attrs>(node(i).attrs, node(i).op_type);
  }
  const ir::TensorInfo& tensor(TensorId t) const { return g_.tensor(t); }
  std::int32_t producer(TensorId t) const { return g_.tensor(t).producer; }
  const std::vector<std::int32_t>& consumers(TensorId t) const { return uses_[static_cast<std::size_t>(t)]; }
  bool is_graph_output(TensorId t) const { return outs_[static_cast<std::size_t>(t)]; }
  // The one node reading `t` (and `t` is not a graph output), or -1.
  std::int32_t only_consumer(TensorId t) const;
  TensorId out(std::int32_t i, std::size_t k = 0) const { return node(i).outputs.at(k); }
  TensorId in(std::int32_t i, std::size_t k) const { return node(i).inputs.at(k); }
  bool taken(std::int32_t i) const { return taken_[static_cast<std::size_t>(i)]; }
  void take(const std::vector<std::int32_t>& nodes);
  std::size_t size() const { return g_.nodes.size(); }
  bool is_param(TensorId t) const;
  // A scalar `other` attribute on a one-input binary node, if present.
  std::optional<double> scalar_other(std::int32_t i) const;

 private:
  const ir::Graph& g_;
  std::vector<std::size_t> ops_;
  std::vector<std::vector<std::int32_t>> uses_;
  std::vector<bool> outs_;
  std::vector<bool> taken_;
};

// Node n moves no data whatever the storage types: a view op, a transpose/permute that moves only
// size-1 dims (the memory order kept), or an expand to its own shape. fusion::is_view_node adds the
// casts the storage policy makes no-ops.
bool moves_no_data(const GraphView& v, std::int32_t n);

// `early`: the pattern's may_run_early (above).
std::optional<Kernel> finalize(const GraphView& v, Match m, std::string_view kind, bool early = false);

template <class P>
inline constexpr bool may_run_early = requires { requires P::may_run_early; };

}  // namespace npusim::inline NPUSIM_ABI::fusion

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/fusion/impl/pattern_inl.hpp"
#endif
