// libFuzzer target: .npubin programs as `npusim inspect` and Pipeline::load read them. Each input
// is read twice: as is (magic, version, length, checksum) and with its frame repaired (length and
// checksum recomputed over bytes 20..size-8), so that mutations reach the msgpack payload and the
// program checks behind the checksum. A program that reads back must inspect, re-serialise to
// bytes that read back identically, and, when small, run on the reference target.
#include "fuzz_util.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/reference.hpp"

using namespace npusim;

namespace {

void use(const program::CompiledProgram& p) {
  program::inspect_text(p);
  program::inspect_json(p);
  const std::string again = program::serialize(p);
  std::string twice;
  try {
    twice = program::serialize(program::deserialize(again, "reserialised.npubin"));
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz: a program that was read does not read back after serialize: %s\n", e.what());
    std::abort();
  }
  if (twice != again) {
    std::fprintf(stderr, "fuzz: serialize(deserialize(serialize(p))) differs from serialize(p)\n");
    std::abort();
  }
  if (!fuzz::small_program(p)) return;
  weights::SynthSource src = fuzz::synth_for_program(p);
  runtime::ProgramRunner runner(p, &src, runtime::factories_for<ReferenceTarget>());
  runner.run(fuzz::inputs_for_program(p));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw = fuzz::text(data, size);
  fuzz::only_npusim_errors([&] { use(program::deserialize(raw, "fuzz.npubin")); });
  // A weights section: index, ranges, checksums; every tensor it serves.
  fuzz::only_npusim_errors([&] {
    if (auto w = program::NpubinWeights::from_bytes(raw, "fuzz.npubin"))
      for (const auto& e : w->entries()) w->load(e.key);
  });
  constexpr std::size_t header = 20, trailer = 8;
  if (size < header + trailer) return 0;
  std::string framed(raw);
  const std::string_view payload = raw.substr(header, size - header - trailer);
  const std::uint64_t len = payload.size(), sum = program::npubin_detail::fnv1a(payload);
  for (int i = 0; i < 8; ++i) framed[12 + static_cast<std::size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  for (int i = 0; i < 8; ++i) framed[size - trailer + static_cast<std::size_t>(i)] = static_cast<char>((sum >> (8 * i)) & 0xff);
  if (framed != raw) fuzz::only_npusim_errors([&] { use(program::deserialize(framed, "fuzz.npubin")); });
  return 0;
}
