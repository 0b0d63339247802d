// libFuzzer target: .npy bytes (magic, version, header length, the header literal, dtype, shape
// against the data size). An accepted array is read in full, written back with npy_bytes and
// must parse to the same dtype, shape and bytes; when it is floating-point or integer it is also
// put through conform_tensor into the other width of its family, as `--input` does.
#include <cstring>

#include "fuzz_util.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/runtime/tensor_files.hpp"

using namespace npusim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::only_npusim_errors([&] {
    Tensor t = parse_npy(fuzz::text(data, size), "fuzz.npy");
    Tensor back = parse_npy(npy_bytes(t), "roundtrip.npy");
    if (back.dtype() != t.dtype() || back.shape() != t.shape() || std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0) {
      std::fprintf(stderr, "fuzz: .npy round trip changed the array\n");
      std::abort();
    }
    if (t.numel() <= (1 << 16) && t.dtype() != DType::boolean)
      runtime::conform_tensor(t, {"x", is_floating(t.dtype()) ? DType::f32 : DType::i32, t.shape()}, "fuzz.npy");
  });
  return 0;
}
