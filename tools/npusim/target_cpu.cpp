// The CPU target's entry in the CLI's registry, and its thread count (--threads).
#include "npusim/cpu.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "targets.hpp"

namespace npusim::cli {

TargetEntry cpu_target_entry() {
  return {"cpu", "SIMD CPU target (xsimd, own thread pool; weights packed in their storage type)", [] { return describe_target<CpuTarget>(); },
          executor_for<CpuTarget>::factory(), &implementations_for<CpuTarget>::of, "NPUSIM_CPU_SKIP"};
}

void set_cpu_threads(int n) { cpu::set_threads(n); }
int cpu_threads() { return cpu::max_threads(); }
void check_thread_env() { (void)cpu::threads_from_env(); }

}  // namespace npusim::cli
