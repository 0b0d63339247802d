// Built against the *installed* npusim: open an exported model folder, run it on the reference
// target (the interpreter) and on the CPU target through Pipeline, and compare both with the
// PyTorch outputs the folder stores.
#include <cmath>
#include <cstdio>
#include <npusim/npusim.hpp>

namespace {
double rel_l2(const npusim::Tensor& got, const npusim::Tensor& want) {
  const npusim::Tensor g = got.to(npusim::DType::f32), w = want.to(npusim::DType::f32);
  double d = 0, n = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const double x = g.data<float>()[i], y = w.data<float>()[i];
    d += (x - y) * (x - y), n += y * y;
  }
  return std::sqrt(d / n);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto m = npusim::runtime::ModelDir::open(argv[1]);
  npusim::weights::BindOptions bo;
  bo.load_as = npusim::DType::f32;
  auto w = m.bind(bo);
  npusim::ref::InterpreterRunner runner(m.graph, w.tensors);
  const auto inputs = m.inputs();
  const npusim::Tensor want = m.io->tensor(m.graph.tensor(m.graph.outputs.at(0)).name);
  const double e_ref = rel_l2(runner.run(inputs).at(0), want);
  npusim::Pipeline<npusim::CpuTarget, npusim::F32> cpu(std::string(argv[1]) + "/ir.json");
  cpu.load_weights(*m.weights);
  const double e_cpu = rel_l2(cpu.run(inputs).at(0), want);
  const bool pass = e_ref < 1e-4 && e_cpu < 1e-4;
  std::printf("consumer: reference rel_l2 %.3g, cpu rel_l2 %.3g %s\n", e_ref, e_cpu, pass ? "PASS" : "FAIL");
  // The bundled NPU descriptions are installed with the headers and found by name.
  const auto npu = npusim::npu::find_description("ideal");
  const auto p = npusim::program::compile(m.graph, npusim::describe_target<npusim::ReferenceTarget>());
  const auto e = npusim::npu::estimate(p, npu.description, {npusim::DType::i8});
  std::printf("consumer: npu %s estimate %.3f us (%s)\n", e.npu.c_str(), e.latency_ns * 1e-3, npu.path.c_str());
  return pass && e.latency_ns > 0 ? 0 : 1;
}
