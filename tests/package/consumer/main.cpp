// Built against the *installed* npusim: read a case, run it on the reference target, compare.
#include <cstdio>
#include <npusim/npusim.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto c = npusim::runtime::Case::open(argv[1]);
  npusim::weights::BindOptions bo;
  bo.load_as = npusim::DType::f32;
  auto w = c.bind(bo);
  npusim::ref::ReferenceRunner runner(c.graph, w.tensors);
  auto r = npusim::runtime::check_case(c, runner);
  std::printf("consumer: rel_l2 %.3g %s\n", r.outputs.at(0).metrics.rel_l2, r.pass ? "PASS" : "FAIL");
  return r.pass ? 0 : 1;
}
