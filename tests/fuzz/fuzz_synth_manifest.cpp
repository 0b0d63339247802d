// libFuzzer target: npusim-synth-v1 manifests (synth.json). Parsing, alias resolution, and
// generation of every tensor and literal up to 64k elements (larger ones only through meta()).
#include "fuzz_util.hpp"

using namespace npusim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::only_npusim_errors([&] {
    weights::SynthManifest m = weights::SynthManifest::parse(fuzz::text(data, size), "fuzz-synth.json");
    std::vector<std::string> keys;
    for (const auto& [k, v] : m.tensors) keys.push_back(k);
    for (const auto& [k, v] : m.literals) keys.push_back(k);
    for (const auto& [k, v] : m.aliases) keys.push_back(k);
    for (const auto& k : keys) {
      fuzz::only_npusim_errors([&] {
        if (!m.contains(k)) return;
        auto [shape, dtype] = m.meta(k);
        if (numel(shape) <= (std::int64_t{1} << 16)) m.generate(k);
      });
    }
  });
  return 0;
}
