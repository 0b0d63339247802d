// Umbrella header: core, IR, ops, weights, the reference target and the runtime helpers.
// Other targets are included on request (e.g. npusim/target/cpu/cpu_target.hpp).
#pragma once

#include "npusim/core/dtype.hpp"
#include "npusim/core/error.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/runtime/case.hpp"
#include "npusim/runtime/compare.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/target/reference/runner.hpp"
#include "npusim/version.hpp"
#include "npusim/weights/binding.hpp"
