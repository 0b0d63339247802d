// Precompiled header for the test binaries: the heavy third-party and npusim headers.
#pragma once
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "npusim/cpu.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/harness/llm_check.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/reference.hpp"
#include "npusim/runtime/program_runner.hpp"
#include "npusim/weights/binding.hpp"
