// minimal: compile a model for the CPU target, load its weights, run it on the fixture's inputs.
//   minimal tests/data/models/resnet18
#include <algorithm>
#include <cstdio>
#include <npusim/npusim.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) return std::fprintf(stderr, "usage: minimal MODEL_DIR (with ir.json, synth.json, io.safetensors)\n"), 2;
  const std::string dir = argv[1];
  npusim::Pipeline<npusim::CpuTarget, npusim::F32> model(dir + "/ir.json");  // compile
  model.load_weights(npusim::weights::SynthSource::read(dir + "/synth.json"));
  auto io = npusim::weights::SafetensorsFile::open(dir + "/io.safetensors");
  std::vector<npusim::Tensor> inputs;
  for (const auto& in : model.program().inputs) inputs.push_back(io.tensor(in.name));
  npusim::Tensor out = model.run(inputs).at(0).to(npusim::DType::f32);
  auto v = out.span<float>();
  std::printf("output %s: %.5f %.5f %.5f ...\n", npusim::to_string(out.shape()).c_str(), v[0], v[1], v[2]);
  std::printf("top-1: %td\n", std::max_element(v.begin(), v.end()) - v.begin());
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
