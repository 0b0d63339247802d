// npusim::compiled: The OpenCL target (built when CMake finds OpenCL): its kernels and executor.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/opencl/impl/opencl_target_inl.hpp"
#include "npusim/target/opencl/impl/executor_inl.hpp"

namespace npusim::inline NPUSIM_ABI {
template partition::TargetInfo describe_target<OpenCLTarget>();
}  // namespace npusim::inline NPUSIM_ABI
