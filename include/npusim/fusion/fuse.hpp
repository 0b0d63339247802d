// The fusion pass: patterns (as runtime descriptors, in the target's priority order) claim node
// groups across the whole graph; every remaining node becomes a kernel of its own, and nodes
// that move no data (views, casts that leave the stored type unchanged, transposes of size-1
// dims) become zero-copy "view" kernels. Kernels are scheduled at their last member, in a
// topological order where a may_run_early pattern (pattern.hpp) runs before readers of its outputs
// that precede its last member.
#pragma once

#include <set>

#include "npusim/fusion/patterns.hpp"
#include "npusim/meta/type_list.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

struct PatternInfo {
  std::string_view name;
  std::optional<Match> (*match)(const GraphView&, std::int32_t);
  bool early = false;  // may_run_early<P>
};

template <class... Ps>
std::vector<PatternInfo> pattern_infos(meta::list<Ps...>) {
  return {PatternInfo{Ps::name, &Ps::match, may_run_early<Ps>}...};
}

// The default priority order (larger structures first; the reference target's list; the residual
// conv_add_relu after add_relu, so only a target that lists it first fuses a conv -> add -> relu into
// it; likewise conv_max_pool after conv_bn_relu, which leaves it only a conv feeding a max pool
// directly).
using default_patterns =
    meta::list<Moe, Attention, GqaMatmul, MaskedSoftmax, RmsNorm, SiluGate, Rotary, ConvBnRelu, ConvMaxPool, AddRelu, ConvAddRelu, MatmulTransB, EltwiseChain>;
// What a GEMV-based target runs as one launch (the OpenCL target's kernels; issue 41 moved them out
// of its executor), and the transposes its rotary and attention kernels absorb. A target that lists
// them puts them before attention, rmsnorm, silu_gate and rotary, whose ops they take; no other
// target gets them.
using launch_patterns = meta::list<LinearGroupRopeKv, RopeKv, LinearAdd, LinearSiluGate, LinearGroup, TransposedRotary, AttentionTransposed>;
// Every pattern npusim knows: what a program's kernels may name (program::validate) and the
// generated docs.
using all_patterns = meta::concat_t<default_patterns, launch_patterns>;

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
