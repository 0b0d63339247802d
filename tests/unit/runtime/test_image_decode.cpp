// The image decoder under valid variants and hostile files (issue 39, class 1): PNG through libpng,
// JPEG through libjpeg, BMP through npusim's own reader; every other format refused by name; the
// pixel budget checked before decoding; truncation and CRC errors are errors, never filled in.
#include <gtest/gtest.h>

#include "../../common/image_files.hpp"
#include "../../common/test_util.hpp"
#include "npusim/runtime/image_decode.hpp"

using namespace npusim;
using namespace npusim::runtime;

namespace {

std::vector<std::uint8_t> picture(int w, int h) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3 + static_cast<std::size_t>(c)] =
            static_cast<std::uint8_t>(c == 0 ? x * 255 / (w - 1) : c == 1 ? y * 255 / (h - 1) : (x * 7 + y * 3) % 256);
  return px;
}

std::string bytes_of(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

[[maybe_unused]] double mean_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::abs(a[i] - b[i]);
  return d / static_cast<double>(a.size());
}

#define NEEDS_CODECS() \
  if (!image_codecs_available()) GTEST_SKIP() << "built without libpng and libjpeg"

}  // namespace

TEST(ImageDecode, PngVariantsDecodeToRgb) {
  NEEDS_CODECS();
  const int w = 13, h = 7;
  const auto px = picture(w, h);
  EXPECT_EQ(decode_image(test::png_rgb(w, h, px)).pixels, px);
  std::string grey, grey_alpha, rgba, grey16, rgb16, bits1, index;
  std::vector<std::uint8_t> want_grey, want_bits1, want_palette;
  for (std::size_t i = 0; i < px.size(); i += 3) {
    grey += static_cast<char>(px[i + 1]), grey_alpha += static_cast<char>(px[i + 1]), grey_alpha += '\x33';
    rgba += bytes_of({px[i], px[i + 1], px[i + 2], 0});
    grey16 += static_cast<char>(px[i + 1]), grey16 += static_cast<char>(px[i]);
    for (int c = 0; c < 3; ++c) rgb16 += static_cast<char>(px[i + static_cast<std::size_t>(c)]), rgb16 += '\xff';
    want_grey.insert(want_grey.end(), 3, px[i + 1]);
    index += static_cast<char>(px[i] % 3);
    const std::uint8_t pal[3][3] = {{255, 0, 0}, {0, 255, 0}, {1, 2, 3}};
    want_palette.insert(want_palette.end(), pal[px[i] % 3], pal[px[i] % 3] + 3);
  }
  for (int y = 0; y < h; ++y) {  // 1-bit grey: a checkerboard, rows padded to whole bytes
    std::uint8_t byte = 0;
    for (int x = 0; x < w; ++x) {
      const bool on = (x + y) % 2;
      byte = static_cast<std::uint8_t>(byte | (on << (7 - x % 8)));
      want_bits1.insert(want_bits1.end(), 3, on ? 255 : 0);
      if (x % 8 == 7 || x == w - 1) bits1 += static_cast<char>(byte), byte = 0;
    }
  }
  const auto uw = static_cast<std::uint32_t>(w), uh = static_cast<std::uint32_t>(h);
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 8, 0, grey)).pixels, want_grey);
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 8, 4, grey_alpha)).pixels, want_grey);  // alpha dropped, not composited
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 8, 6, rgba)).pixels, px);
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 16, 0, grey16)).pixels, want_grey);  // the high byte, as Pillow
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 16, 2, rgb16)).pixels, px);
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 1, 0, bits1)).pixels, want_bits1);
  const std::string plte = test::png_chunk("PLTE", std::string("\xff\0\0\0\xff\0\x01\x02\x03", 9)), trns = test::png_chunk("tRNS", "\x10");
  EXPECT_EQ(decode_image(test::png_bytes(uw, uh, 8, 3, index, plte + trns)).pixels, want_palette);
  // An index past the palette, a palette image without PLTE: errors, not whatever memory holds.
  NPUSIM_EXPECT_ERROR(decode_image(test::png_bytes(uw, uh, 8, 3, index), "p.png"), "p.png", "PNG");
}

TEST(ImageDecode, BrokenPngsAreErrorsNamingWhy) {
  NEEDS_CODECS();
  const std::string png = test::png_rgb(9, 5, picture(9, 5));
  for (std::size_t n = 0; n < png.size(); ++n) EXPECT_THROW(decode_image(std::string_view(png).substr(0, n)), Error) << n;
  NPUSIM_EXPECT_ERROR(decode_image(png.substr(0, png.size() - 12), "t.png"), "npusim parse error: t.png: truncated PNG");
  std::string crc = png;
  crc[29] = static_cast<char>(crc[29] ^ 1);
  NPUSIM_EXPECT_ERROR(decode_image(crc, "c.png"), "c.png: PNG CRC error (IHDR: CRC error)");
  std::string idat = png;
  idat[idat.size() - 13] = static_cast<char>(idat[idat.size() - 13] ^ 0x40);
  NPUSIM_EXPECT_ERROR(decode_image(idat, "d.png"), "d.png: PNG CRC error (IDAT: CRC error)");
  NPUSIM_EXPECT_ERROR(decode_image(test::png_bytes(0, 5, 8, 2, ""), "z.png"), "z.png: PNG has no pixels", "found 0 x 5");
  NPUSIM_EXPECT_ERROR(decode_image(test::png_bytes(9, 5, 8, 2, std::string(9 * 3 * 2, 'x')), "short.png"), "short.png", "truncated PNG");
}

TEST(ImageDecode, PixelBudgetIsCheckedBeforeDecoding) {
  NPUSIM_EXPECT_ERROR(decode_image(test::bmp_bytes(1, 1, 24, {1, 2, 3}).replace(18, 8, std::string("\x00\x40\x00\x00\x00\x40\x00\x00", 8)), "b.bmp"),
                      "b.bmp", "truncated BMP");
  NEEDS_CODECS();
  NPUSIM_EXPECT_ERROR(decode_image(test::png_bytes(100000, 100000, 8, 2, "xyz"), "h.png"), "npusim resource error: h.png: image too large",
                      "expected <= 67108864 pixels (64 Mpixel), found 100000 x 100000 = 10000000000 pixels");
  NPUSIM_EXPECT_ERROR(decode_image(test::png_bytes(8193, 8193, 8, 0, "xyz"), "g.png"), "image too large");
#if NPUSIM_WITH_IMAGE_CODECS
  std::string jpg = test::jpeg_bytes(8, 8, std::vector<std::uint8_t>(192, 50));
  const std::size_t sof = jpg.find("\xff\xc0");
  jpg[sof + 5] = jpg[sof + 7] = '\xff';
  NPUSIM_EXPECT_ERROR(decode_image(jpg, "h.jpg"), "h.jpg: image too large");
#endif
}

#if NPUSIM_WITH_IMAGE_CODECS
TEST(ImageDecode, JpegVariantsDecode) {
  const int w = 40, h = 24;
  const auto px = picture(w, h);
  for (const test::JpegOptions& o : {test::JpegOptions{}, test::JpegOptions{.progressive = true}, test::JpegOptions{.arithmetic = true}}) {
    const RgbImage img = decode_image(test::jpeg_bytes(w, h, px, o));
    ASSERT_EQ(img.width, w);
    ASSERT_EQ(img.height, h);
    EXPECT_LT(mean_abs_diff(img.pixels, px), 6.0) << o.progressive << o.arithmetic;
  }
  std::vector<std::uint8_t> grey(static_cast<std::size_t>(w * h), 90), cmyk;
  // No cyan, full magenta and yellow, no black: red. Stored inverted, as Adobe's files are and as
  // Pillow reads a CMYK JPEG with an Adobe marker (libjpeg writes one).
  for (int i = 0; i < w * h; ++i) cmyk.insert(cmyk.end(), {255, 0, 0, 255});
  const RgbImage g = decode_image(test::jpeg_bytes(w, h, grey, {.components = 1, .in = JCS_GRAYSCALE}));
  EXPECT_NEAR(g.at(5, 5, 0), 90, 1);
  EXPECT_EQ(g.at(5, 5, 0), g.at(5, 5, 2));
  const RgbImage c = decode_image(test::jpeg_bytes(w, h, cmyk, {.components = 4, .in = JCS_CMYK}));
  EXPECT_NEAR(c.at(3, 3, 0), 255, 2);
  EXPECT_NEAR(c.at(3, 3, 1), 0, 2);
  EXPECT_NEAR(c.at(3, 3, 2), 0, 2);
}

TEST(ImageDecode, BrokenOrUnsupportedJpegsAreErrorsNamingWhy) {
  const int w = 16, h = 16;
  const std::string jpg = test::jpeg_bytes(w, h, picture(w, h));
  for (std::size_t n = 0; n < jpg.size(); ++n) EXPECT_THROW(decode_image(std::string_view(jpg).substr(0, n)), Error) << n;
  NPUSIM_EXPECT_ERROR(decode_image(jpg.substr(0, jpg.size() / 2), "t.jpg"), "npusim parse error: t.jpg: truncated JPEG: Premature end of JPEG file");
  const std::size_t sof = jpg.find("\xff\xc0");
  std::string p12 = jpg, zero = jpg;
  p12[sof + 4] = 12;
  NPUSIM_EXPECT_ERROR(decode_image(p12, "p.jpg"), "npusim unsupported error: p.jpg: JPEG of 12-bit precision is not supported");
  zero[sof + 5] = zero[sof + 6] = 0;
  NPUSIM_EXPECT_ERROR(decode_image(zero, "z.jpg"), "z.jpg", "JPEG");
  // Two components (libjpeg writes no more than 4; it reads up to 10).
  const std::vector<std::uint8_t> two(static_cast<std::size_t>(w * h * 2), 60);
  NPUSIM_EXPECT_ERROR(decode_image(test::jpeg_bytes(w, h, two, {.components = 2, .in = JCS_UNKNOWN}), "c.jpg"),
                      "npusim unsupported error: c.jpg: a JPEG of 2 component(s) in this colour space is not supported", "found 2)");
  // A damaged entropy segment: libjpeg would fill the rest with grey and warn; here an error.
  std::string damaged = jpg;
  const std::size_t sos = damaged.find("\xff\xda");
  damaged.replace(sos + 20, 6, "\xff\xd9\xff\xd9\xff\xd9");
  EXPECT_THROW(decode_image(damaged), Error);
}
#endif

TEST(ImageDecode, BmpVariantsDecode) {
  const int w = 7, h = 5;  // 7 x 3 bytes: rows padded
  const auto px = picture(w, h);
  EXPECT_EQ(decode_image(test::bmp_bytes(w, h, 24, px)).pixels, px);
  EXPECT_EQ(decode_image(test::bmp_bytes(w, h, 24, px, true)).pixels, px);  // top-down (stb refused these)
  EXPECT_EQ(decode_image(test::bmp_bytes(w, h, 32, px)).pixels, px);
  EXPECT_EQ(decode_image(test::bmp_bytes(w, h, 32, px, true)).pixels, px);
  // 8-bit with a palette of 2 colours.
  std::string pal = test::bmp_bytes(2, 1, 24, {0, 0, 0, 0, 0, 0});
  pal.replace(28, 2, std::string("\x08\x00", 2));
  pal.replace(46, 4, std::string("\x02\x00\x00\x00", 4));
  pal.replace(10, 4, std::string("\x3e\x00\x00\x00", 4));                                  // pixels after the 8-byte palette
  pal = pal.substr(0, 54) + std::string("\x10\x20\x30\x00\xff\xfe\xfd\x00", 8) + std::string("\x01\x00\x00\x00", 4);
  EXPECT_EQ(decode_image(pal).pixels, (std::vector<std::uint8_t>{0xfd, 0xfe, 0xff, 0x30, 0x20, 0x10}));
  pal[62] = 2;  // an index past the palette
  NPUSIM_EXPECT_ERROR(decode_image(pal, "i.bmp"), "i.bmp: corrupt BMP: a pixel's colour index is past the palette");
}

TEST(ImageDecode, BrokenOrUnsupportedBmpsAreErrorsNamingWhy) {
  const std::string bmp = test::bmp_bytes(7, 5, 24, picture(7, 5));
  for (std::size_t n = 0; n < bmp.size(); ++n) EXPECT_THROW(decode_image(std::string_view(bmp).substr(0, n)), Error) << n;
  NPUSIM_EXPECT_ERROR(decode_image(bmp.substr(0, bmp.size() - 1), "t.bmp"), "npusim parse error: t.bmp: truncated BMP: the pixel data is shorter");
  std::string rle = bmp, zero = bmp, planes = bmp, bits = bmp, min_height = bmp;
  rle[30] = 1;
  NPUSIM_EXPECT_ERROR(decode_image(rle, "r.bmp"), "npusim unsupported error: r.bmp: BMP with RLE8 compression is not supported");
  zero[18] = 0;
  NPUSIM_EXPECT_ERROR(decode_image(zero, "z.bmp"), "z.bmp: BMP has no pixels");
  planes[26] = 2;
  NPUSIM_EXPECT_ERROR(decode_image(planes, "p.bmp"), "p.bmp: corrupt BMP: planes must be 1");
  bits[28] = 2;
  NPUSIM_EXPECT_ERROR(decode_image(bits, "b.bmp"), "b.bmp: a 2-bit BMP is not supported");
  min_height.replace(22, 4, std::string("\x00\x00\x00\x80", 4));  // INT32_MIN: no positive counterpart
  NPUSIM_EXPECT_ERROR(decode_image(min_height, "m.bmp"), "m.bmp: BMP has no pixels or an impossible size");
}

TEST(ImageDecode, OtherFormatsAreRefusedByName) {
  const std::pair<std::string, const char*> cases[] = {
      {"P5 4000 4000 65535\n", "PGM is not supported"},  // the header that crashed stb (issue 39)
      {"P5 64 64 65535\n", "PGM is not supported"},
      {"P6\n4 4\n255\nxyz", "PPM is not supported"},
      {"P4 8 8\n", "PBM is not supported"},
      {"P7\nWIDTH 2\n", "PAM is not supported"},
      {std::string("GIF89a\x60\x00\x50\x00\xf0\x00\x00", 13), "GIF is not supported"},
      {std::string("RIFF\x1a\x00\x00\x00WEBPVP8 ", 16), "WebP is not supported"},
      {std::string("II*\x00\x08\x00\x00\x00", 8), "TIFF is not supported"},
      {"#?RADIANCE\n", "Radiance HDR is not supported"},
      {"8BPS\x00\x01", "PSD is not supported"},
      {std::string("\x00\x00\x00\x1c""ftypavif", 12), "AVIF is not supported"},
      {std::string("\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x60\x00\x50\x00\x18\x00", 18), "unknown image type"},  // TGA
      {"", "unknown image type"},
      {"\x1b]0;owned\x07", "found 10 bytes starting 1b 5d 30 3b"},
  };
  for (const auto& [bytes, message] : cases) NPUSIM_EXPECT_ERROR(decode_image(bytes, "x.img"), "npusim unsupported error: x.img: ", message);
}

#if !NPUSIM_WITH_IMAGE_CODECS
TEST(ImageDecode, WithoutCodecsPngAndJpegSaySo) {
  NPUSIM_EXPECT_ERROR(decode_image(test::png_rgb(2, 2, std::vector<std::uint8_t>(12, 1)), "a.png"),
                      "a.png: this npusim was built without image support (libpng, libjpeg): cannot decode PNG");
  NPUSIM_EXPECT_ERROR(decode_image("\xff\xd8\xff\xe0", "a.jpg"), "cannot decode JPEG");
}
#endif
