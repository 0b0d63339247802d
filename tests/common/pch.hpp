// Precompiled header for the test binaries: the heavy third-party and npusim headers.
#pragma once
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/runtime/case.hpp"
#include "npusim/target/reference/reference_target.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/target/reference/program_runner.hpp"
#include "npusim/runtime/plan_runner.hpp"
#include "npusim/target/cpu/cpu_target.hpp"
