// Minimal type-list utilities for the op / pattern / target registries.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI::meta {

template <class... Ts>
struct list {
  static constexpr std::size_t size = sizeof...(Ts);
};

template <class T, class List> struct contains;
template <class T, class... Ts>
struct contains<T, list<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {};
template <class T, class List>
inline constexpr bool contains_v = contains<T, List>::value;

template <class T, class List> struct index_of;
template <class T, class... Ts>
struct index_of<T, list<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool hits[] = {std::is_same_v<T, Ts>..., false};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
      if (hits[i]) return i;
    return sizeof...(Ts);
  }();
};
template <class T, class List>
inline constexpr std::size_t index_of_v = index_of<T, List>::value;

template <class... Ls> struct concat;
template <> struct concat<> { using type = list<>; };
template <class... As> struct concat<list<As...>> { using type = list<As...>; };
template <class... As, class... Bs, class... Rest>
struct concat<list<As...>, list<Bs...>, Rest...> : concat<list<As..., Bs...>, Rest...> {};
template <class... Ls>
using concat_t = typename concat<Ls...>::type;

// Calls f.template operator()<T>() for each T in the list, in order.
template <class... Ts, class F>
constexpr void for_each(list<Ts...>, F&& f) {
  (f.template operator()<Ts>(), ...);
}

// Runtime index -> type: calls f.template operator()<T_i>() and returns its result.
template <class R, class... Ts, class F>
R dispatch(list<Ts...>, std::size_t i, F&& f) {
  using Fn = R (*)(F&);
  static constexpr Fn table[] = {[](F& g) -> R { return g.template operator()<Ts>(); }...};
  return table[i](f);
}

template <class>
inline constexpr bool dependent_false = false;

}  // namespace npusim::inline NPUSIM_ABI::meta
