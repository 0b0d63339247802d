// Entry header of the OpenCL target (link npusim::opencl): Pipeline<npusim::OpenCLTarget, D> and
// everything it needs (the target's executor, its fallback's, the runtime that runs compiled
// programs over both). runner_for<OpenCLTarget>::make(program, weights, bind, {.device = "..."})
// picks a device; Pipeline uses NPUSIM_OPENCL_DEVICE or the first GPU.
//
//   #include <npusim/opencl.hpp>
//   npusim::Pipeline<npusim::OpenCLTarget, npusim::Bf16> p("model/ir.json");
#pragma once

#include "npusim/pipeline.hpp"
#include "npusim/target/opencl/executor.hpp"
#include "npusim/target/reference/executor.hpp"
