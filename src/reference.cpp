// npusim::compiled: The reference target: its kernels, interpreter and executor.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/reference/impl/reference_target_inl.hpp"
#include "npusim/target/reference/impl/interpreter_inl.hpp"
#include "npusim/target/reference/impl/executor_inl.hpp"

namespace npusim::inline NPUSIM_ABI {
template partition::TargetInfo describe_target<ReferenceTarget>();
}  // namespace npusim::inline NPUSIM_ABI
