// Definitions for npusim/target/cpu/parallel.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <Eigen/Core>

#include "npusim/config.hpp"
#include "npusim/target/cpu/parallel.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC void set_threads(int n) {
  n = std::max(1, n);
  if (const int promised = detail::promised_threads().load(); promised > 0 && n > promised)
    throw Error(ErrorCode::resource, "cpu::set_threads: programs were already bound for fewer threads; set the thread count before creating runners",
                {.expected = "<= " + std::to_string(promised) + " threads", .found = std::to_string(n)});
  detail::pool_slot() = std::make_unique<ThreadPool>(n);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  Eigen::setNbThreads(n);
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
