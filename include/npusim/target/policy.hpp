// The target contract for the policy struct (the executor side is ExecutableTarget in
// target/executor.hpp): what describe_target reads, as concepts, and check_target_policy<T>(),
// which names the first requirement a type misses in words instead of a page of template errors.
//
//   struct MyTarget {
//     static constexpr std::string_view name = "mine";                    // required
//     using op_list = meta::list<ops::Linear, ...>;                       // required: op policies
//     using pattern_list = meta::list<fusion::RmsNorm, ...>;              // required: fusion patterns
//     static constexpr DType dtypes[] = {DType::f32, DType::bf16};        // required: compute dtypes
//     using fallback = ReferenceTarget;                                   // required: a target type,
//                                                                         //   or no_fallback
//     static std::optional<std::string> refuse(const ir::Graph&, const ir::Node&);  // optional
//     static partition::TargetLimits limits();                                      // optional
//     static constexpr std::string_view weight_formats[] = {"q8_0"};                // optional
//   };
//
// The compiler never names a target: the fallback's name comes from the fallback type
// (describe_target), and a compiled program's partitions name targets only as describe_target
// wrote them.
#pragma once

#include <concepts>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "npusim/fusion/fuse.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/meta/type_list.hpp"
#include "npusim/npusim_fwd.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/partition/boundary.hpp"

namespace npusim::inline NPUSIM_ABI {

// `using fallback = no_fallback;`: nodes the target refuses are an error when compiling.
struct no_fallback {
  static constexpr std::string_view name = "";
};

namespace target_policy {

template <class L> struct is_list : std::false_type {};
template <class... Ts> struct is_list<meta::list<Ts...>> : std::true_type {};

template <class L> struct all_ops : std::false_type {};
template <class... Ops> struct all_ops<meta::list<Ops...>> : std::bool_constant<(ops::OpPolicy<Ops> && ...)> {};

template <class P>
concept Pattern = requires {
  { P::name } -> std::convertible_to<std::string_view>;
  { &P::match };
};
template <class L> struct all_patterns : std::false_type {};
template <class... Ps> struct all_patterns<meta::list<Ps...>> : std::bool_constant<(Pattern<Ps> && ...)> {};

template <class T>
concept Named = requires {
  { T::name } -> std::convertible_to<std::string_view>;
};
template <class T>
concept OpList = requires { typename T::op_list; } && all_ops<typename T::op_list>::value;
template <class T>
concept PatternList = requires { typename T::pattern_list; } && all_patterns<typename T::pattern_list>::value;
template <class T>
concept DTypes = requires {
  { std::begin(T::dtypes) } -> std::convertible_to<const DType*>;
  { std::size(T::dtypes) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept HasFallback = requires { typename T::fallback; };
// The fallback's name is known here: its type is complete, or npusim_fwd.hpp names it.
template <class T>
concept Fallback = HasFallback<T> && requires {
  { target_name<typename T::fallback>::value } -> std::convertible_to<std::string_view>;
};
template <class T>
concept RefuseOk = !requires { &T::refuse; } || requires(const ir::Graph& g, const ir::Node& n) {
  { T::refuse(g, n) } -> std::convertible_to<std::optional<std::string>>;
};
template <class T>
concept LimitsOk = !requires { &T::limits; } || requires {
  { T::limits() } -> std::convertible_to<partition::TargetLimits>;
};
template <class T>
concept WeightFormatsOk = !requires { T::weight_formats; } || requires {
  { *std::begin(T::weight_formats) } -> std::convertible_to<std::string_view>;
};
// A `fallback_name` left from the string contract must agree with the fallback type.
template <class T>
constexpr bool legacy_fallback_name_agrees() {
  if constexpr (requires { T::fallback_name; } && Fallback<T>) return T::fallback_name == target_name<typename T::fallback>::value;
  else return true;
}

}  // namespace target_policy

template <class T>
concept TargetPolicy = target_policy::Named<T> && target_policy::OpList<T> && target_policy::PatternList<T> && target_policy::DTypes<T> &&
                       target_policy::Fallback<T> && target_policy::RefuseOk<T> && target_policy::LimitsOk<T> &&
                       target_policy::WeightFormatsOk<T>;

// The same requirements one by one, each failing with its own message (use it in a static_assert).
template <class T>
consteval bool check_target_policy() {
  using namespace target_policy;
  static_assert(Named<T>, "NPUSIM: a target needs `static constexpr std::string_view name`");
  static_assert(OpList<T>, "NPUSIM: a target needs `using op_list = meta::list<...>` of op policies (ops/registry.hpp)");
  static_assert(PatternList<T>, "NPUSIM: a target needs `using pattern_list = meta::list<...>` of fusion patterns (fusion/patterns.hpp; may be empty)");
  static_assert(DTypes<T>, "NPUSIM: a target needs `static constexpr DType dtypes[]`, the compute dtypes it accepts");
  static_assert(HasFallback<T>, "NPUSIM: a target needs `using fallback = SomeTarget;` (a type with a name), or `using fallback = no_fallback;`");
  static_assert(!HasFallback<T> || Fallback<T>,
                "NPUSIM: Target::fallback's name is unknown here: it is incomplete and npusim_fwd.hpp does not name it (include the fallback's "
                "policy header npusim/target/<name>/<name>_target.hpp or the entry header npusim/<target>.hpp, or name it in npusim_fwd.hpp: a "
                "target's own headers cannot include another target's)");
  static_assert(RefuseOk<T>, "NPUSIM: Target::refuse must be `static std::optional<std::string> refuse(const ir::Graph&, const ir::Node&)`");
  static_assert(LimitsOk<T>, "NPUSIM: Target::limits must be `static partition::TargetLimits limits()`");
  static_assert(WeightFormatsOk<T>, "NPUSIM: Target::weight_formats must be an array of std::string_view");
  static_assert(legacy_fallback_name_agrees<T>(), "NPUSIM: Target::fallback_name (no longer needed) disagrees with Target::fallback::name");
  return TargetPolicy<T>;
}

}  // namespace npusim::inline NPUSIM_ABI
