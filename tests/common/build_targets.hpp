// The targets of this build, as a type list for tests that run a case on every one (the
// conformance suite, the MoE tests). A new target: one entry here.
#pragma once

#include "npusim/cpu.hpp"
#include "npusim/reference.hpp"
#if NPUSIM_WITH_OPENCL
#include "npusim/opencl.hpp"
#endif

namespace npusim::test {

using build_targets = meta::list<ReferenceTarget, CpuTarget
#if NPUSIM_WITH_OPENCL
                                 ,
                                 OpenCLTarget
#endif
                                 >;

}  // namespace npusim::test
