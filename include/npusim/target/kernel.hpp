// kernel<Op, Target>: the primary template says "no kernel" as data; a target specialises it per op
// (or per op family with a constrained partial specialisation). check_target() proves at compile
// time that every op a target lists has a kernel.
#pragma once

#include "npusim/meta/type_list.hpp"

namespace npusim::inline NPUSIM_ABI {

template <class Op, class Target>
struct kernel {
  static constexpr bool provided = false;
};

template <class Op, class Target>
inline constexpr bool has_kernel_v = kernel<Op, Target>::provided;

namespace detail {
template <class Target, class Op>
consteval bool require_kernel() {
  static_assert(has_kernel_v<Op, Target>, "NPUSIM: an op listed in Target::op_list has no kernel<Op, Target> specialisation");
  return true;
}
}  // namespace detail

template <class Target, class... Ops>
consteval bool check_target(meta::list<Ops...>) {
  return (detail::require_kernel<Target, Ops>() && ...);
}

}  // namespace npusim::inline NPUSIM_ABI
