// Entry header of the reference target: Pipeline<npusim::ReferenceTarget, D> and everything it
// needs (the target's executor, the runtime that runs compiled programs), plus the interpreter
// that runs a raw IR graph (ref::InterpreterRunner).
//
//   #include <npusim/reference.hpp>
//   npusim::Pipeline<npusim::ReferenceTarget, npusim::F32> p("model/ir.json");
#pragma once

#include "npusim/pipeline.hpp"
#include "npusim/target/reference/executor.hpp"
#include "npusim/target/reference/interpreter.hpp"
