// Token selection from logits: greedy argmax, or seeded sampling with temperature, top-k and
// top-p (nucleus), the usual order: temperature scales, top-k keeps the k best, top-p keeps the
// smallest set whose probability reaches p, then one draw from what is left.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

struct Sampling {
  double temperature = 0.0;  // 0: greedy
  std::int64_t top_k = 0;    // 0: no limit
  double top_p = 1.0;        // 1: no limit
  std::uint64_t seed = 0;

  void validate() const;
  bool greedy() const { return temperature == 0.0; }
};

// Last row (over the last dim) of a tensor as float32: the logits of the last position.
std::vector<float> last_row(const Tensor& t);

std::int64_t argmax_index(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(Sampling s) : s_(s), rng_(s.seed) { s_.validate(); }

  std::int64_t pick(std::span<const float> logits);

 private:
  Sampling s_;
  std::mt19937_64 rng_;
  std::vector<std::int32_t> idx_;
  std::vector<double> p_;
};

}  // namespace npusim::inline NPUSIM_ABI::llm

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/sampling_inl.hpp"
#endif
