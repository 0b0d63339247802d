// Definitions for npusim/runtime/sampling.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>

#include "npusim/config.hpp"
#include "npusim/runtime/sampling.hpp"

namespace npusim::inline NPUSIM_ABI::llm {

NPUSIM_FUNC void Sampling::validate() const {
  if (temperature < 0 || !std::isfinite(temperature))
    throw Error(ErrorCode::attr, "temperature must be a finite number >= 0", {.found = std::to_string(temperature)});
  if (top_k < 0) throw Error(ErrorCode::attr, "top-k must be >= 0", {.found = std::to_string(top_k)});
  if (!(top_p > 0 && top_p <= 1)) throw Error(ErrorCode::attr, "top-p must be in (0, 1]", {.found = std::to_string(top_p)});
}

NPUSIM_FUNC std::vector<float> last_row(const Tensor& t) {
  Tensor f = t.to(DType::f32);
  std::int64_t n = t.rank() ? t.shape().back() : 1;
  auto s = f.span<float>();
  return std::vector<float>(s.end() - n, s.end());
}

NPUSIM_FUNC std::int64_t argmax_index(std::span<const float> logits) {
  std::int64_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<std::size_t>(best)]) best = static_cast<std::int64_t>(i);
  return best;
}

NPUSIM_FUNC std::int64_t Sampler::pick(std::span<const float> logits) {
  if (logits.empty()) throw Error(ErrorCode::runtime, "no logits to sample from");
  if (s_.greedy()) return argmax_index(logits);
  idx_.resize(logits.size());
  std::iota(idx_.begin(), idx_.end(), 0);
  std::size_t keep = logits.size();
  if (s_.top_k > 0 && static_cast<std::size_t>(s_.top_k) < keep) keep = static_cast<std::size_t>(s_.top_k);
  std::partial_sort(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(keep), idx_.end(),
                    [&](std::int32_t a, std::int32_t b) { return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)]; });
  // Softmax over the kept candidates at the temperature (in double).
  p_.resize(keep);
  const double m = logits[static_cast<std::size_t>(idx_[0])];
  double z = 0;
  for (std::size_t i = 0; i < keep; ++i) z += (p_[i] = std::exp((logits[static_cast<std::size_t>(idx_[i])] - m) / s_.temperature));
  double acc = 0;
  std::size_t n = keep;
  for (std::size_t i = 0; i < keep; ++i) {
    p_[i] /= z;
    acc += p_[i];
    if (acc >= s_.top_p) {
      n = i + 1;
      break;
    }
  }
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += p_[i];
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (std::size_t i = 0; i < n; ++i) {
    r -= p_[i];
    if (r <= 0) return idx_[i];
  }
  return idx_[n - 1];
}

}  // namespace npusim::inline NPUSIM_ABI::llm
