// Turns a target type (its op_list, pattern_list, dtypes, limits, fallback; target/policy.hpp checks
// them) into the plain partition::TargetInfo the compiler works with.
#pragma once

#include "npusim/partition/support.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/policy.hpp"

namespace npusim::inline NPUSIM_ABI {

template <class Target>
partition::TargetInfo describe_target() {
  static_assert(check_target_policy<Target>());
  partition::TargetInfo t;
  t.name = std::string(Target::name);
  t.ops.assign(ops::op_count, false);
  meta::for_each(typename Target::op_list{}, [&]<class Op>() { t.ops[ops::op_index_v<Op>] = true; });
  t.patterns = fusion::pattern_infos(typename Target::pattern_list{});
  if constexpr (requires { Target::refuse; }) t.refuse = &Target::refuse;
  t.dtypes.assign(std::begin(Target::dtypes), std::end(Target::dtypes));
  if constexpr (requires { Target::limits(); }) t.limits = Target::limits();
  t.fallback = std::string(target_name<typename Target::fallback>::value);  // empty for no_fallback
  if constexpr (requires { Target::weight_formats; })
    for (std::string_view f : Target::weight_formats) t.weight_formats.emplace_back(f);
  return t;
}

}  // namespace npusim::inline NPUSIM_ABI
