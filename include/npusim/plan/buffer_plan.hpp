// Buffer planning over a kernel schedule: every tensor a kernel writes for others gets a place in
// one arena, sized by liveness (first write to last read) and packed greedily by size; views share
// their source's bytes; a pointwise kernel may write over an input that dies with it (in place).
// Reports the peak next to the naive one-buffer-per-tensor total and the liveness lower bound.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/fusion/kernel.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::plan {

enum class Place : std::uint8_t {
  none,      // unused, or internal to a fused kernel (never stored)
  input,     // graph input, bound by the caller
  weight,    // weight or constant, bound at load
  arena,     // in the arena at `offset`
  view,      // shares the bytes of `root`
};

const char* place_name(Place p);

struct TensorPlan {
  Place place = Place::none;
  DType storage = DType::f32;
  std::int64_t bytes = 0;   // storage bytes (unrounded)
  std::int64_t offset = 0;  // arena offset (arena tensors and views of them)
  ir::TensorId root = ir::no_tensor;  // the tensor whose storage this one uses (itself if it owns it)
  std::int32_t first = -1, last = -1;  // kernel indices: written, last read
  friend bool operator==(const TensorPlan&, const TensorPlan&) = default;
};

struct BufferPlan {
  std::vector<TensorPlan> tensors;  // per graph tensor
  std::int64_t arena_bytes = 0;
  std::int64_t naive_bytes = 0;        // one buffer per intermediate
  std::int64_t lower_bound_bytes = 0;  // max over time of live bytes (after sharing)
  int in_place = 0;                    // kernels writing over their dying input
  friend bool operator==(const BufferPlan&, const BufferPlan&) = default;
};

inline constexpr std::int64_t arena_alignment = 64;
inline std::int64_t align_up(std::int64_t x, std::int64_t a = arena_alignment) { return (x + a - 1) / a * a; }  // x <= max_tensor_bytes
// Totals over many tensors (statistics) saturate instead of overflowing.
inline std::int64_t sat_add(std::int64_t a, std::int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

// Kinds whose kernels read and write element i only at index i, with one full-shape output.
bool pointwise_kind(std::string_view kind);
// Kinds whose index_copy members write a KV cache input in place (planned as views of it).
bool writes_cache_in_place(std::string_view kind);

BufferPlan plan_buffers(const ir::Graph& g, const std::vector<Kernel>& ks, const passes::DTypePolicy& pol);

}  // namespace npusim::inline NPUSIM_ABI::plan

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/plan/impl/buffer_plan_inl.hpp"
#endif
