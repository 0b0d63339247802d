// The PyTorch op fixtures (tests/data/ops): one list for every test binary that walks them (the
// reference, CPU and OpenCL fixture tests, the conformance suite's coverage check).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace npusim::test {

// The fixture folders' names, sorted; with half_only, those exported in f16 or bf16.
inline std::vector<std::string> op_fixtures(bool half_only = false) {
  std::vector<std::string> r;
  for (auto& e : std::filesystem::directory_iterator(data("ops"))) {
    std::string n = e.path().filename().string();
    if (!half_only || n.ends_with("fp16") || n.ends_with("bf16")) r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace npusim::test
