// Image files written by the tests themselves (valid ones of every variant npusim takes, and
// hostile ones made from them): PNG by hand (stored deflate blocks, so every byte is known), BMP by
// hand, JPEG through libjpeg when the build has it. Writing is not the hostile surface.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#if NPUSIM_WITH_IMAGE_CODECS
#include <cstdio>
#include <jpeglib.h>
#endif

namespace npusim::test {

inline std::uint32_t crc32(std::string_view s) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char ch : s) c = table[(c ^ ch) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

inline void put_be32(std::string& s, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}
inline void put_le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

inline std::string png_chunk(std::string_view type, std::string_view data) {
  std::string c;
  put_be32(c, static_cast<std::uint32_t>(data.size()));
  std::string body = std::string(type) + std::string(data);
  c += body;
  put_be32(c, crc32(body));
  return c;
}

// A PNG of `raw` scanlines (each row's samples, no filter byte) in the given bit depth and colour
// type (0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA); `before_idat` holds extra chunks (PLTE).
inline std::string png_bytes(std::uint32_t w, std::uint32_t h, int bit_depth, int color_type, std::string_view raw, std::string_view before_idat = {}) {
  std::string ihdr;
  put_be32(ihdr, w), put_be32(ihdr, h);
  ihdr += static_cast<char>(bit_depth), ihdr += static_cast<char>(color_type), ihdr += std::string(3, '\0');
  const int channels = color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
  const std::size_t row = (static_cast<std::size_t>(w) * static_cast<std::size_t>(channels * bit_depth) + 7) / 8;
  std::string filtered;
  for (std::uint32_t y = 0; y < h; ++y) {  // a short `raw` makes a PNG with too little image data
    filtered += '\0';
    if (y * row < raw.size()) filtered += raw.substr(y * row, row);
  }
  std::string z = "\x78\x01";
  std::uint32_t a = 1, b = 0;
  for (unsigned char ch : filtered) a = (a + ch) % 65521, b = (b + a) % 65521;
  for (std::size_t at = 0; at < filtered.size() || at == 0; at += 65535) {
    const std::size_t n = std::min<std::size_t>(65535, filtered.size() - at);
    z += static_cast<char>(at + n >= filtered.size() ? 1 : 0);
    put_le(z, n, 2), put_le(z, n ^ 0xFFFF, 2);
    z += filtered.substr(at, n);
    if (filtered.empty()) break;
  }
  put_be32(z, (b << 16) | a);
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + std::string(before_idat) + png_chunk("IDAT", z) + png_chunk("IEND", "");
}

inline std::string png_rgb(int w, int h, const std::vector<std::uint8_t>& rgb) {
  return png_bytes(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h), 8, 2, std::string_view(reinterpret_cast<const char*>(rgb.data()), rgb.size()));
}

// A BMP of 8-bit RGB pixels (rows top to bottom) as 24- or 32-bit BI_RGB, bottom-up or top-down.
inline std::string bmp_bytes(int w, int h, int bpp, const std::vector<std::uint8_t>& rgb, bool top_down = false) {
  const std::size_t stride = (static_cast<std::size_t>(w) * static_cast<std::size_t>(bpp) + 31) / 32 * 4;
  std::string s = "BM";
  put_le(s, 54 + stride * static_cast<std::size_t>(h), 4), put_le(s, 0, 4), put_le(s, 54, 4);
  put_le(s, 40, 4), put_le(s, static_cast<std::uint32_t>(w), 4), put_le(s, static_cast<std::uint32_t>(top_down ? -h : h), 4);
  put_le(s, 1, 2), put_le(s, static_cast<std::uint64_t>(bpp), 2), put_le(s, 0, 4), put_le(s, stride * static_cast<std::size_t>(h), 4);
  put_le(s, 2835, 4), put_le(s, 2835, 4), put_le(s, 0, 4), put_le(s, 0, 4);
  for (int r = 0; r < h; ++r) {
    const int y = top_down ? r : h - 1 - r;
    std::string row;
    for (int x = 0; x < w; ++x) {
      const std::uint8_t* p = rgb.data() + (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3;
      row += static_cast<char>(p[2]), row += static_cast<char>(p[1]), row += static_cast<char>(p[0]);
      if (bpp == 32) row += '\xff';
    }
    row.resize(stride, '\0');
    s += row;
  }
  return s;
}

#if NPUSIM_WITH_IMAGE_CODECS
struct JpegOptions {
  int components = 3;
  J_COLOR_SPACE in = JCS_RGB;
  bool progressive = false, arithmetic = false;
  int quality = 95;
};

// A JPEG of `px` (components samples per pixel, rows top to bottom).
inline std::string jpeg_bytes(int w, int h, const std::vector<std::uint8_t>& px, const JpegOptions& o = {}) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);  // exits on error: a test writer, given valid arguments
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(w), c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = o.components, c.in_color_space = o.in;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, o.quality, TRUE);
  if (o.progressive) jpeg_simple_progression(&c);
  if (o.arithmetic) c.arith_code = TRUE;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(px.data() + static_cast<std::size_t>(c.next_scanline) * static_cast<std::size_t>(w * o.components));
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::string s(reinterpret_cast<const char*>(buf), size);
  jpeg_destroy_compress(&c);
  std::free(buf);
  return s;
}
#endif

}  // namespace npusim::test
