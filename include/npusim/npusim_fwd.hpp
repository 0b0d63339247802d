// Names only: forward declarations of npusim's main types and tags, for headers that mention them
// without needing their definitions.
#pragma once

#include <cstdint>
#include <string_view>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI {
enum class DType : std::uint8_t;
class Tensor;
class Error;
struct F32;
struct F16;
struct Bf16;
struct ReferenceTarget;
template <class Op, class Target> struct kernel;
// A target's name where its type may be incomplete: a target names its fallback by type, and its
// headers cannot include the fallback's (targets never include each other). T::name when T is
// complete; the targets declared here spell their name here, once (their `name` reads it).
template <class T> struct target_name {};
template <class T>
  requires requires { T::name; }
struct target_name<T> {
  static constexpr std::string_view value = T::name;
};
template <> struct target_name<ReferenceTarget> {
  static constexpr std::string_view value = "reference";
};
namespace ir {
struct Graph;
struct Node;
}  // namespace ir
namespace meta {
template <class... Ts> struct list;
}  // namespace meta
}  // namespace npusim::inline NPUSIM_ABI
