// What partitioning decides beyond the node verdicts, as plain data the compiled program keeps: a
// target's limits (which shape the graph passes give it) and the tensors that cross from one
// partition to a later one.
#pragma once

#include <cstdint>
#include <string>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

// Below the op level, what a target asks of the graph before it is partitioned.
struct TargetLimits {
  std::int64_t channel_alignment_bytes = 0;  // 0: no channel padding
  friend bool operator==(const TargetLimits&, const TargetLimits&) = default;
};

// A tensor crossing from one partition to a later one (by name), with its size.
struct Transfer {
  std::string tensor;
  std::int32_t from = -1, to = -1;  // partition indices; -1 = the caller (graph input / output)
  std::int64_t bytes = 0;
  friend bool operator==(const Transfer&, const Transfer&) = default;
};

}  // namespace npusim::inline NPUSIM_ABI::partition
