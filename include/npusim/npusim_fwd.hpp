// Names only: forward declarations of npusim's main types and tags, for headers that mention them
// without needing their definitions.
#pragma once

#include <cstdint>

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
namespace ir {
struct Graph;
struct Node;
}  // namespace ir
namespace meta {
template <class... Ts> struct list;
}  // namespace meta
}  // namespace npusim::inline NPUSIM_ABI
