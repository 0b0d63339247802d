// The fusion pass: patterns (as runtime descriptors, in the target's priority order) claim node
// groups across the whole graph; every remaining node becomes a kernel of its own, and nodes
// that move no data (views, casts that leave the stored type unchanged, transposes of size-1
// dims) become zero-copy "view" kernels. Kernels are scheduled at their last member.
#pragma once

#include <set>

#include "npusim/fusion/patterns.hpp"
#include "npusim/meta/type_list.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

struct PatternInfo {
  std::string_view name;
  std::optional<Match> (*match)(const GraphView&, std::int32_t);
};

template <class... Ps>
std::vector<PatternInfo> pattern_infos(meta::list<Ps...>) {
  return {PatternInfo{Ps::name, &Ps::match}...};
}

// Every pattern npusim knows, in the default priority order (larger structures first; the
// residual conv_add_relu after add_relu, so only a target that lists it first fuses a
// conv -> add -> relu into it; likewise conv_max_pool after conv_bn_relu, which leaves it only a
// conv feeding a max pool directly).
using all_patterns =
    meta::list<Attention, GqaMatmul, MaskedSoftmax, RmsNorm, SiluGate, Rotary, ConvBnRelu, ConvMaxPool, AddRelu, ConvAddRelu, MatmulTransB, EltwiseChain>;

// A transpose/permute that only moves size-1 dims keeps the memory order: a view.
inline bool permutation_is_view(const Shape& in, const ops::Ints& perm) {
  std::int64_t last = -1;
  for (auto p : perm) {
    if (in[static_cast<std::size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

inline bool is_view_node(const GraphView& v, std::int32_t n, const passes::DTypePolicy& pol) {
  const auto& info = ops::op_info(v.op(n));
  const ir::Node& node = v.node(n);
  if (info.op_class == ops::OpClass::view) return true;
  if (v.is<ops::ToDtype>(n)) return pol.storage(v.tensor(node.inputs[0]).dtype) == pol.storage(v.tensor(node.outputs[0]).dtype);
  if (v.is<ops::Transpose>(n))
    return permutation_is_view(v.tensor(node.inputs[0]).shape, ops::Transpose::perm(v.attrs<ops::Transpose>(n), v.tensor(node.inputs[0]).shape.size()));
  if (v.is<ops::Permute>(n))
    return permutation_is_view(v.tensor(node.inputs[0]).shape, ops::Permute::perm(v.attrs<ops::Permute>(n), v.tensor(node.inputs[0]).shape.size()));
  if (v.is<ops::Expand>(n)) return v.tensor(node.inputs[0]).shape == v.tensor(node.outputs[0]).shape;
  return false;
}

struct FuseOptions {
  std::set<std::string, std::less<>> disabled;  // pattern names to skip
};

inline std::vector<Kernel> fuse(const ir::Graph& g, std::span<const PatternInfo> patterns, const passes::DTypePolicy& pol,
                                const FuseOptions& opt = {}) {
  GraphView v(g);
  std::vector<Kernel> ks;
  for (const PatternInfo& p : patterns) {
    if (opt.disabled.count(p.name)) continue;
    for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
      if (v.taken(i)) continue;
      auto m = p.match(v, i);
      if (!m) continue;
      auto k = finalize(v, std::move(*m), p.name);
      if (!k) continue;
      v.take(k->nodes);
      ks.push_back(std::move(*k));
    }
  }
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
    if (v.taken(i)) continue;
    Kernel k;
    k.kind = is_view_node(v, i, pol) ? "view" : std::string(ops::op_info(v.op(i)).id);
    k.nodes = {i};
    for (TensorId t : v.node(i).inputs)
      if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
    k.outputs = v.node(i).outputs;
    ks.push_back(std::move(k));
  }
  std::sort(ks.begin(), ks.end(), [](const Kernel& a, const Kernel& b) { return a.nodes.back() < b.nodes.back(); });
  return ks;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
