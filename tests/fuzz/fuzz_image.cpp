// libFuzzer target: image files (`run --image`): the BMP reader of our own, and the glue around
// libpng and libjpeg-turbo (their longjmp error paths, the pixel budget, truncation rules). An
// accepted image must be as large as it says, within the pixel budget, and decode to the same
// pixels a second time.
#include <cstring>

#include "fuzz_util.hpp"
#include "npusim/runtime/image_decode.hpp"

using namespace npusim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::only_npusim_errors([&] {
    const runtime::RgbImage im = runtime::decode_image(fuzz::text(data, size), "fuzz.img");
    const auto pixels = static_cast<std::uint64_t>(im.width) * static_cast<std::uint64_t>(im.height);
    if (im.width < 1 || im.height < 1 || pixels > runtime::max_image_pixels || im.pixels.size() != pixels * 3) {
      std::fprintf(stderr, "fuzz: decoded %d x %d with %zu bytes of pixels\n", im.width, im.height, im.pixels.size());
      std::abort();
    }
    const runtime::RgbImage again = runtime::decode_image(fuzz::text(data, size), "fuzz.img");
    if (again.width != im.width || again.height != im.height || again.pixels != im.pixels) {
      std::fprintf(stderr, "fuzz: the same bytes decoded differently\n");
      std::abort();
    }
  });
  return 0;
}
