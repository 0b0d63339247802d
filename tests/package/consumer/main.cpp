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
  // The bundled NPU descriptions are installed with the headers and found by name.
  const auto npu = npusim::npu::find_description("ideal");
  const auto p = npusim::program::compile(c.graph, npusim::describe_target<npusim::ReferenceTarget>());
  const auto e = npusim::npu::estimate(p, npu.description, {npusim::DType::i8});
  std::printf("consumer: npu %s estimate %.3f us (%s)\n", e.npu.c_str(), e.latency_ns * 1e-3, npu.path.c_str());
  return r.pass && e.latency_ns > 0 ? 0 : 1;
}
