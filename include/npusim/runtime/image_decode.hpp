// Image files to 8-bit RGB, for classifiers' --image and quantize's image folders. Images come from
// users and the web, so the decoders are the hardened, continuously fuzzed ones of the system:
// PNG through libpng, JPEG through libjpeg(-turbo), both strict (a truncated file, a CRC error or a
// corrupt entropy segment is an error, never zero-filled pixels); BMP through a small reader of
// npusim's own that checks every size against the file. Every other format is refused by name (GIF,
// WebP, PNM, TGA, TIFF, ...), and width x height is checked against max_image_pixels before any
// pixel is allocated. libpng and libjpeg report errors by longjmp: each call into them sits in a
// C-style function with no C++ object alive, and the C++ side throws afterwards.
//
// A build without libpng and libjpeg (CMake option NPUSIM_IMAGE_CODECS, off when they are not
// found) still reads BMP and refuses PNG and JPEG with an error that says so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"

// 1 where CMake found libpng and libjpeg (NPUSIM_IMAGE_CODECS; npusim::npusim defines it).
#ifndef NPUSIM_WITH_IMAGE_CODECS
#define NPUSIM_WITH_IMAGE_CODECS 0
#endif

namespace npusim::inline NPUSIM_ABI::runtime {

// 8-bit RGB, rows top to bottom, pixels interleaved (R, G, B).
struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;

  // Checks width x height against max_image_pixels and the allocation limit first.
  static RgbImage blank(int width, int height);
  std::uint8_t* row(int y) { return pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * 3; }
  const std::uint8_t* row(int y) const { return pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * 3; }
  std::uint8_t at(int x, int y, int c) const { return row(y)[x * 3 + c]; }
};

// The pixel budget of one decoded image: 64 Mpixel (e.g. 8192 x 8192), whatever the machine's
// memory; a file declaring more is refused before its pixels are decoded.
inline constexpr std::uint64_t max_image_pixels = std::uint64_t{1} << 26;

// Whether this build decodes PNG and JPEG (libpng and libjpeg were found).
bool image_codecs_available();

// Decodes an image held in memory; `name` stands for the file in messages. Greyscale is replicated,
// alpha dropped (as PIL's convert("RGB"), no compositing), CMYK JPEGs converted as PIL does, and
// 16-bit PNG samples keep their high byte (as Pillow reads 16-bit RGB).
RgbImage decode_image(std::string_view bytes, const std::string& name = "<memory>");

inline RgbImage read_image(const std::string& path) { return decode_image(read_file(path, std::uint64_t{1} << 31), path); }

}  // namespace npusim::inline NPUSIM_ABI::runtime

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/image_decode_inl.hpp"
#endif
