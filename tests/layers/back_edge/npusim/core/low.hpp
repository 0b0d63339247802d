// Test tree for ctest layers.detects_back_edges: a core header that includes the runtime.
#pragma once
#include "npusim/runtime/high.hpp"
