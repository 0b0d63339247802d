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
    meta::list<Moe, Attention, GqaMatmul, MaskedSoftmax, RmsNorm, SiluGate, Rotary, ConvBnRelu, ConvMaxPool, AddRelu, ConvAddRelu, MatmulTransB, EltwiseChain>;

// A transpose/permute that only moves size-1 dims keeps the memory order: a view.
bool permutation_is_view(const Shape& in, const ops::Ints& perm);

bool is_view_node(const GraphView& v, std::int32_t n, const passes::DTypePolicy& pol);

struct FuseOptions {
  std::set<std::string, std::less<>> disabled;  // pattern names to skip
};

std::vector<Kernel> fuse(const ir::Graph& g, std::span<const PatternInfo> patterns, const passes::DTypePolicy& pol,
                         const FuseOptions& opt = {});

}  // namespace npusim::inline NPUSIM_ABI::fusion

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/fusion/impl/fuse_inl.hpp"
#endif
