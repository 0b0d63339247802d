// npusim::compiled: the CPU target: its thread pool, executor, the kernels' dispatch, indexing and
// data movement.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/cpu/impl/cpu_target_inl.hpp"
#include "npusim/target/cpu/impl/executor_inl.hpp"
#include "npusim/target/cpu/impl/parallel_inl.hpp"
#include "npusim/target/cpu/kernels/impl/misc_inl.hpp"
#include "npusim/target/cpu/kernels/impl/moe_inl.hpp"
#include "npusim/target/cpu/kernels/impl/movement_inl.hpp"

namespace npusim::inline NPUSIM_ABI {
template partition::TargetInfo describe_target<CpuTarget>();
}  // namespace npusim::inline NPUSIM_ABI
