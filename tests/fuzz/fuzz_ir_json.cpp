// libFuzzer target: torch_ir JSON as `npusim run/compile` reads it. Reading (JSON depth guard,
// structure), op checks (attrs, shape inference against the IR), weight binding against a synth
// manifest, and, for small graphs, a run on the reference target.
#include "fuzz_util.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/ops/registry.hpp"

using namespace npusim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::only_npusim_errors([&] {
    ir::Graph g = ir::read_ir_string(fuzz::text(data, size), "fuzz-ir.json");
    ops::check_graph(g);
    fuzz::bind_and_run(g);
  });
  return 0;
}
