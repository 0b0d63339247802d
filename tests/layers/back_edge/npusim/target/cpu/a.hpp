// Test tree for ctest layers.detects_back_edges: one target including another.
#pragma once
#include "npusim/target/reference/b.hpp"
