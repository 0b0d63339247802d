// Test tree for ctest layers.detects_back_edges.
#pragma once
