// Entry header of the CPU target: Pipeline<npusim::CpuTarget, D> and everything it needs (the
// target's executor, its fallback's, the runtime that runs compiled programs over both).
//
//   #include <npusim/cpu.hpp>
//   npusim::Pipeline<npusim::CpuTarget, npusim::Bf16> p("model/ir.json");
#pragma once

#include "npusim/pipeline.hpp"
#include "npusim/target/cpu/executor.hpp"
#include "npusim/target/reference/executor.hpp"
