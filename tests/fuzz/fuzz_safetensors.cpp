// libFuzzer target: safetensors bytes (header length, JSON header, dtypes, shapes, data_offsets).
// Every tensor the reader accepts is read in full (a view past the data would be an ASan report)
// and bound to a graph that uses it, converting every dtype to float32.
#include "fuzz_util.hpp"

using namespace npusim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::only_npusim_errors([&] {
    weights::SafetensorsFile f = weights::SafetensorsFile::from_bytes(fuzz::text(data, size), "fuzz.safetensors");
    volatile unsigned char sink = 0;
    ir::Graph g;
    for (const auto& e : f.entries()) {
      Tensor t = f.tensor(e);
      const auto* p = static_cast<const unsigned char*>(t.raw());
      for (std::size_t i = 0; i < t.nbytes(); ++i) sink = sink ^ p[i];
      // A float32 weight of the same shape, read by one node: binding must cast it.
      auto id = g.add_tensor({"w" + std::to_string(g.tensors.size()), e.shape, DType::f32, ir::TensorKind::weight, -1, 0, e.name});
      g.weights.push_back(id);
      g.nodes.push_back({"use_" + std::to_string(id), "aten.alias.default", {id}, {}, {}});
    }
    weights::SafetensorsSource src(std::move(f));
    weights::BindOptions o;
    o.allow_cast = true;
    weights::bind_weights(g, &src, o);
  });
  return 0;
}
