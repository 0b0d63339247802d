// Threading for the CPU target: OpenMP, sized to the machine (or NPUSIM_THREADS / --threads).
// Kernels split work with parallel_for; small work runs on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls f(begin, end) over [0, n) in about-equal chunks, one per thread when the work is worth
// it (`min_chunk` items per thread at least).
template <class F>
void parallel_for(std::int64_t n, std::int64_t min_chunk, F&& f) {
  if (n <= 0) return;
  int threads = static_cast<int>(std::min<std::int64_t>(max_threads(), std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk))));
  if (threads <= 1) {
    f(std::int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) f(b, e);
  }
#else
  f(std::int64_t{0}, n);
#endif
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
