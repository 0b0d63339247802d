// Definitions for npusim/runtime/image_decode.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <csetjmp>
#include <cstdio>
#include <cstring>

#if NPUSIM_WITH_IMAGE_CODECS
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#endif

#include "npusim/config.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/runtime/image_decode.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC RgbImage RgbImage::blank(int width, int height) {
  const auto w = static_cast<std::uint64_t>(width), h = static_cast<std::uint64_t>(height);
  if (width < 0 || height < 0 || w * h > max_image_pixels)
    throw Error(ErrorCode::resource, "image too large",
                {.expected = "<= " + std::to_string(max_image_pixels) + " pixels (64 Mpixel)",
                 .found = std::to_string(width) + " x " + std::to_string(height) + " = " + std::to_string(w * h) + " pixels"});
  check_allocation(w * h * 3, [&] { return std::to_string(width) + "x" + std::to_string(height) + " RGB image"; });
  return {width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(w * h * 3))};
}

NPUSIM_FUNC bool image_codecs_available() { return NPUSIM_WITH_IMAGE_CODECS != 0; }

namespace image_detail {

// What the file starts with, for messages: "89 50 4e 47 ..." tells a PNG from a renamed file.
inline std::string head_of(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s = std::to_string(bytes.size()) + " bytes";
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 4); ++i)
    s += (i ? " " : " starting ") + std::string{hex[static_cast<unsigned char>(bytes[i]) >> 4], hex[static_cast<unsigned char>(bytes[i]) & 15]};
  return s;
}

inline bool starts_with(std::string_view b, std::string_view magic) { return b.substr(0, magic.size()) == magic; }

// Formats told by their first bytes that npusim does not decode, so that the refusal names them.
inline const char* unsupported_format(std::string_view b) {
  if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) return "GIF";
  if (b.size() >= 12 && starts_with(b, "RIFF") && b.substr(8, 4) == "WEBP") return "WebP";
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7' && std::strchr(" \t\r\n", b[2]) && b[2] != '\0')
    return b[1] == '7' ? "PAM" : (b[1] == '1' || b[1] == '4') ? "PBM" : (b[1] == '2' || b[1] == '5') ? "PGM" : "PPM";
  if (starts_with(b, std::string_view("II*\0", 4)) || starts_with(b, std::string_view("MM\0*", 4))) return "TIFF";
  if (starts_with(b, "#?RADIANCE") || starts_with(b, "#?RGBE")) return "Radiance HDR";
  if (starts_with(b, "8BPS")) return "PSD";
  if (starts_with(b, "qoif")) return "QOI";
  if (starts_with(b, "\x76\x2f\x31\x01")) return "OpenEXR";
  if (starts_with(b, std::string_view("\0\0\0\x0cjP  ", 8)) || starts_with(b, "\xff\x4f\xff\x51")) return "JPEG 2000";
  if (starts_with(b, "\xff\x0a") || starts_with(b, std::string_view("\0\0\0\x0cJXL ", 8))) return "JPEG XL";
  if (b.size() >= 12 && b.substr(4, 4) == "ftyp") {
    const std::string_view brand = b.substr(8, 4);
    if (brand == "avif" || brand == "avis") return "AVIF";
    if (brand == "heic" || brand == "heix" || brand == "mif1" || brand == "msf1") return "HEIF/HEIC";
  }
  if (starts_with(b, std::string_view("\0\0\1\0", 4))) return "ICO";
  return nullptr;
}

inline std::uint32_t le32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
inline std::uint32_t be32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
inline std::uint16_t le16(std::string_view b, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at]) | (static_cast<unsigned char>(b[at + 1]) << 8));
}

// One colour mask of a BITFIELDS BMP: where its bits are and how to scale them to 8 bits.
struct BmpMask {
  std::uint32_t mask = 0;
  int shift = 0, bits = 0;
  std::uint8_t operator()(std::uint32_t px) const {
    const std::uint32_t v = (px & mask) >> shift, top = (bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1);
    return static_cast<std::uint8_t>(bits == 8 ? v : (static_cast<std::uint64_t>(v) * 255 + top / 2) / top);
  }
};

// BMP: Windows' BITMAPINFOHEADER and its V2-V5 extensions; 1/4/8-bit palette, 16/32-bit with masks,
// 24-bit, 32-bit; bottom-up or top-down; uncompressed only. Every size is checked against the file.
inline RgbImage decode_bmp(std::string_view b, const std::string& name) {
  auto bad = [&](const std::string& what, std::string expected = {}, std::string found = {}) {
    return Error(ErrorCode::parse, "corrupt BMP: " + what, {.file = name, .expected = std::move(expected), .found = std::move(found)});
  };
  auto unsupported = [&](const std::string& what) {
    return Error(ErrorCode::unsupported, what + " is not supported",
                 {.file = name, .expected = "an uncompressed BMP of 1, 4, 8, 16, 24 or 32 bits per pixel, or a PNG or JPEG"});
  };
  if (b.size() < 18) throw Error(ErrorCode::parse, "truncated BMP: no room for its headers", {.file = name, .expected = ">= 54 bytes", .found = std::to_string(b.size()) + " bytes"});
  const std::uint32_t off_bits = le32(b, 10), dib = le32(b, 14);
  if (dib == 12) throw unsupported("an OS/2 1.x BMP (12-byte header)");
  if (dib != 40 && dib != 52 && dib != 56 && dib != 64 && dib != 108 && dib != 124)
    throw bad("unknown header size", "40, 52, 56, 64, 108 or 124 bytes", std::to_string(dib) + " bytes");
  if (b.size() < 14 + std::uint64_t{dib}) throw Error(ErrorCode::parse, "truncated BMP: the file ends inside its header", {.file = name, .expected = ">= " + std::to_string(14 + std::uint64_t{dib}) + " bytes", .found = std::to_string(b.size()) + " bytes"});
  const auto width = static_cast<std::int32_t>(le32(b, 18)), signed_height = static_cast<std::int32_t>(le32(b, 22));
  const std::uint16_t planes = le16(b, 26), bpp = le16(b, 28);
  const std::uint32_t compression = le32(b, 30), colours_used = le32(b, 46);
  if (planes != 1) throw bad("planes must be 1", "1", std::to_string(planes));
  if (width <= 0 || signed_height == 0 || signed_height == INT32_MIN)
    throw Error(ErrorCode::shape, "BMP has no pixels or an impossible size", {.file = name, .expected = "width >= 1, height != 0",
                                                                               .found = std::to_string(width) + " x " + std::to_string(signed_height)});
  const bool top_down = signed_height < 0;
  const std::int32_t height = top_down ? -signed_height : signed_height;
  if (compression == 1 || compression == 2) throw unsupported(std::string("BMP with ") + (compression == 1 ? "RLE8" : "RLE4") + " compression");
  if (compression == 4 || compression == 5) throw unsupported(std::string("BMP holding a ") + (compression == 4 ? "JPEG" : "PNG"));
  const bool bitfields = compression == 3 || compression == 6;
  if (compression != 0 && !bitfields) throw unsupported("BMP compression " + std::to_string(compression));
  if (bitfields != (bpp == 16 || bpp == 32) && bitfields) throw bad("colour masks on a " + std::to_string(bpp) + "-bit image");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) throw unsupported("a " + std::to_string(bpp) + "-bit BMP");
  // Colour masks: inside a V2+ header, else the 12 (16 with alpha) bytes after a 40-byte one.
  BmpMask masks[3];
  std::uint64_t palette_at = 14 + std::uint64_t{dib};
  if (bitfields || bpp == 16) {
    std::uint32_t m[3] = {0x7C00, 0x03E0, 0x001F};  // 16-bit BI_RGB is 5-5-5
    if (bitfields) {
      if (dib == 40) {
        if (b.size() < 66) throw Error(ErrorCode::parse, "truncated BMP: the file ends inside its colour masks", {.file = name});
        palette_at += compression == 6 ? 16 : 12;
      }
      for (int c = 0; c < 3; ++c) m[c] = le32(b, 54 + 4 * static_cast<std::size_t>(c));
    } else if (bpp == 32) {
      m[0] = 0xFF0000, m[1] = 0xFF00, m[2] = 0xFF;
    }
    for (int c = 0; c < 3; ++c) {
      BmpMask& k = masks[c];
      k.mask = m[c];
      if (!k.mask) throw bad("a colour mask is empty", "a non-zero mask for red, green and blue", "0");
      while (!((k.mask >> k.shift) & 1)) ++k.shift;
      while (k.shift + k.bits < 32 && ((k.mask >> (k.shift + k.bits)) & 1)) ++k.bits;
      if ((static_cast<std::uint64_t>(k.mask) >> (k.shift + k.bits)) != 0) throw bad("a colour mask is not one run of bits");
      if (bpp == 16 && k.mask > 0xFFFF) throw bad("a colour mask is wider than the 16-bit pixels");
    }
  } else if (bpp == 32) {
    masks[0] = {0xFF0000, 16, 8}, masks[1] = {0xFF00, 8, 8}, masks[2] = {0xFF, 0, 8};
  }
  std::vector<std::uint8_t> palette;  // R, G, B per entry
  if (bpp <= 8) {
    const std::uint32_t max_colours = 1u << bpp, n = colours_used ? colours_used : max_colours;
    if (n > max_colours) throw bad("more palette entries than the bit depth can index", "<= " + std::to_string(max_colours), std::to_string(n));
    if (palette_at + std::uint64_t{n} * 4 > b.size() || palette_at + std::uint64_t{n} * 4 > off_bits)
      throw Error(ErrorCode::parse, "truncated BMP: the palette runs past the file or into the pixels", {.file = name});
    for (std::uint32_t i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c) palette.push_back(static_cast<std::uint8_t>(b[palette_at + std::uint64_t{i} * 4 + static_cast<std::uint64_t>(2 - c)]));
  }
  const std::uint64_t stride = (static_cast<std::uint64_t>(width) * bpp + 31) / 32 * 4;
  const std::uint64_t need = stride * static_cast<std::uint64_t>(height);
  if (off_bits < 14 + std::uint64_t{dib} || off_bits > b.size() || b.size() - off_bits < need)
    throw Error(ErrorCode::parse, "truncated BMP: the pixel data is shorter than width x height needs",
                {.file = name, .expected = std::to_string(need) + " bytes from byte " + std::to_string(off_bits),
                 .found = std::to_string(off_bits <= b.size() ? b.size() - off_bits : 0) + " bytes"});
  RgbImage img = RgbImage::blank(width, height);
  for (std::int32_t y = 0; y < height; ++y) {
    const auto src_row = static_cast<std::uint64_t>(top_down ? y : height - 1 - y);
    const auto* s = reinterpret_cast<const unsigned char*>(b.data()) + off_bits + src_row * stride;
    std::uint8_t* d = img.row(y);
    for (std::int32_t x = 0; x < width; ++x, d += 3) {
      const auto ux = static_cast<std::size_t>(x);
      if (bpp == 24) {
        d[0] = s[ux * 3 + 2], d[1] = s[ux * 3 + 1], d[2] = s[ux * 3];
      } else if (bpp == 16 || bpp == 32) {
        const std::uint32_t px = bpp == 16 ? std::uint32_t{s[ux * 2]} | (std::uint32_t{s[ux * 2 + 1]} << 8)
                                           : std::uint32_t{s[ux * 4]} | (std::uint32_t{s[ux * 4 + 1]} << 8) | (std::uint32_t{s[ux * 4 + 2]} << 16) |
                                                 (std::uint32_t{s[ux * 4 + 3]} << 24);
        for (int c = 0; c < 3; ++c) d[c] = masks[c](px);
      } else {
        const std::size_t bit = ux * bpp;
        const unsigned index = (s[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (index * 3 >= palette.size())
          throw bad("a pixel's colour index is past the palette", "< " + std::to_string(palette.size() / 3), std::to_string(index));
        std::memcpy(d, palette.data() + index * 3, 3);
      }
    }
  }
  return img;
}

#if NPUSIM_WITH_IMAGE_CODECS

// ---- PNG (libpng) -------------------------------------------------------------------------------
// libpng reports errors by longjmp to the last setjmp on its jmpbuf. The state below is trivially
// destructible, and png_begin / png_rows hold no C++ object, so the jump skips no destructor; the
// C++ caller owns the libpng structs and throws after the call returns false.
struct PngState {
  const unsigned char* data = nullptr;
  std::size_t size = 0, pos = 0;
  png_structp png = nullptr;
  png_infop info = nullptr;
  bool truncated = false;
  char message[256] = {};
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, passes = 1;
  std::size_t rowbytes = 0;
};

extern "C" inline void npusim_png_read(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->size - s->pos) {
    s->truncated = true;
    png_error(png, "the file ends before its data does");
  }
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}
extern "C" inline void npusim_png_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg);
  png_longjmp(png, 1);
}
extern "C" inline void npusim_png_warning(png_structp, png_const_charp) {}

inline bool png_begin(PngState* s) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_set_read_fn(s->png, s, npusim_png_read);
  png_read_info(s->png, s->info);
  s->width = png_get_image_width(s->png, s->info);
  s->height = png_get_image_height(s->png, s->info);
  s->bit_depth = png_get_bit_depth(s->png, s->info);
  s->color_type = png_get_color_type(s->png, s->info);
  // To 8-bit RGB as PIL's convert("RGB"): palette expanded (its transparency ignored), grey
  // replicated, alpha dropped, 16-bit samples to their high byte; no gamma correction.
  if (s->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
  if (s->color_type == PNG_COLOR_TYPE_GRAY && s->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(s->png);
  if (s->bit_depth == 16) png_set_strip_16(s->png);
  png_set_strip_alpha(s->png);  // also the alpha palette expansion makes of a tRNS chunk
  if (!(s->color_type & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(s->png);
  s->passes = png_set_interlace_handling(s->png);
  png_read_update_info(s->png, s->info);
  s->rowbytes = png_get_rowbytes(s->png, s->info);
  return true;
}

inline bool png_rows(PngState* s, unsigned char* out) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  for (int pass = 0; pass < s->passes; ++pass)
    for (png_uint_32 y = 0; y < s->height; ++y) png_read_row(s->png, out + static_cast<std::size_t>(y) * s->rowbytes, nullptr);
  png_read_end(s->png, nullptr);  // the chunks after the pixels, up to IEND, with their CRCs
  return true;
}

inline RgbImage decode_png(std::string_view b, const std::string& name) {
  // A zero size is valid in no PNG; said plainly here (libpng: "Invalid IHDR data").
  if (b.size() >= 24 && b.substr(12, 4) == "IHDR" && (le32(b, 16) == 0 || le32(b, 20) == 0))
    throw Error(ErrorCode::shape, "PNG has no pixels", {.file = name, .expected = "width and height >= 1",
                                                         .found = std::to_string(be32(b, 16)) + " x " + std::to_string(be32(b, 20))});
  PngState s;
  s.data = reinterpret_cast<const unsigned char*>(b.data()), s.size = b.size();
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, npusim_png_error, npusim_png_warning);
  if (s.png) s.info = png_create_info_struct(s.png);
  struct Release {
    PngState& s;
    ~Release() { png_destroy_read_struct(&s.png, s.info ? &s.info : nullptr, nullptr); }
  } release{s};
  if (!s.png || !s.info) throw Error(ErrorCode::resource, "cannot start libpng (out of memory)", {.file = name});
  auto failure = [&] {
    const std::string why = s.message;
    if (s.truncated || why == "Not enough image data" || why.find("Read Error") != std::string::npos)
      return Error(ErrorCode::parse, "truncated PNG: " + why, {.file = name, .found = head_of(b)});
    if (why.find("CRC error") != std::string::npos)
      return Error(ErrorCode::parse, "PNG CRC error (" + why + "): the file is corrupt", {.file = name});
    return Error(ErrorCode::parse, "corrupt or unsupported PNG: " + why, {.file = name});
  };
  if (!png_begin(&s)) throw failure();
  RgbImage img = RgbImage::blank(static_cast<int>(std::min<png_uint_32>(s.width, INT32_MAX)), static_cast<int>(std::min<png_uint_32>(s.height, INT32_MAX)));
  if (s.rowbytes != static_cast<std::size_t>(s.width) * 3)
    throw Error(ErrorCode::runtime, "libpng did not produce 8-bit RGB rows (npusim bug)", {.file = name, .expected = std::to_string(s.width * 3) + " bytes a row",
                                                                                           .found = std::to_string(s.rowbytes)});
  if (!png_rows(&s, img.pixels.data())) throw failure();
  return img;
}

// ---- JPEG (libjpeg, libjpeg-turbo) -----------------------------------------------------------
// libjpeg's error_exit must not return: it longjmps to jpeg_begin / jpeg_rows, which hold no C++
// object. Data lost to a truncated file or a damaged entropy segment is only a warning to libjpeg
// (it fills the rest with grey); here it is an error.
struct JpegState {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  bool created = false, truncated = false;
  int code = 0;  // libjpeg's message code of the failure
  char message[JMSG_LENGTH_MAX + 64] = {};
};

// A progressive JPEG may hold any number of scans, each a pass over the whole image: a small file
// could keep the decoder busy for hours. Real encoders write about 10.
inline constexpr int max_jpeg_scans = 1000;

extern "C" inline void npusim_jpeg_error_exit(j_common_ptr c) {
  auto* s = static_cast<JpegState*>(c->client_data);
  s->code = c->err->msg_code;
  (*c->err->format_message)(c, s->message);
  std::longjmp(s->jump, 1);
}
extern "C" inline void npusim_jpeg_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  const int code = c->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC) {
    auto* s = static_cast<JpegState*>(c->client_data);
    s->truncated = code == JWRN_JPEG_EOF;
    npusim_jpeg_error_exit(c);
  }
  ++c->err->num_warnings;  // others (extraneous bytes between markers, ...) lose no pixel
}
extern "C" inline void npusim_jpeg_progress(j_common_ptr c) {
  if (!c->is_decompressor || reinterpret_cast<j_decompress_ptr>(c)->input_scan_number <= max_jpeg_scans) return;
  auto* s = static_cast<JpegState*>(c->client_data);
  std::snprintf(s->message, sizeof s->message, "more than %d scans", max_jpeg_scans);
  std::longjmp(s->jump, 1);
}

inline bool jpeg_begin(JpegState* s, const unsigned char* data, unsigned long size) {
  s->cinfo.err = jpeg_std_error(&s->err);
  s->err.error_exit = npusim_jpeg_error_exit;
  s->err.emit_message = npusim_jpeg_message;
  s->progress.progress_monitor = npusim_jpeg_progress;
  s->cinfo.client_data = s;
  if (setjmp(s->jump)) return false;
  jpeg_create_decompress(&s->cinfo);
  s->created = true;
  s->cinfo.progress = &s->progress;
  jpeg_mem_src(&s->cinfo, data, size);
  jpeg_read_header(&s->cinfo, TRUE);
  return true;
}

inline bool jpeg_rows(JpegState* s, unsigned char* out, std::size_t stride) {
  if (setjmp(s->jump)) return false;
  jpeg_start_decompress(&s->cinfo);
  while (s->cinfo.output_scanline < s->cinfo.output_height) {
    JSAMPROW row = out + static_cast<std::size_t>(s->cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&s->cinfo, &row, 1);
  }
  jpeg_finish_decompress(&s->cinfo);  // reads to the end-of-image marker
  return true;
}

inline RgbImage decode_jpeg(std::string_view b, const std::string& name) {
  JpegState s;
  struct Release {
    JpegState& s;
    ~Release() {
      if (s.created) jpeg_destroy_decompress(&s.cinfo);
    }
  } release{s};
  auto failure = [&] {
    const std::string why = s.message;
    if (s.truncated) return Error(ErrorCode::parse, "truncated JPEG: " + why, {.file = name, .found = head_of(b)});
    if (s.code == JERR_BAD_PRECISION)
      return Error(ErrorCode::unsupported, "JPEG of " + std::to_string(s.cinfo.data_precision) + "-bit precision is not supported",
                   {.file = name, .expected = "8-bit samples", .found = std::to_string(s.cinfo.data_precision) + "-bit"});
    return Error(ErrorCode::parse, "corrupt or unsupported JPEG: " + why, {.file = name});
  };
  if (!jpeg_begin(&s, reinterpret_cast<const unsigned char*>(b.data()), static_cast<unsigned long>(b.size()))) throw failure();
  const J_COLOR_SPACE cs = s.cinfo.jpeg_color_space;
  const int comps = s.cinfo.num_components;
  const bool cmyk = cs == JCS_CMYK || cs == JCS_YCCK;
  if (!((cs == JCS_GRAYSCALE && comps == 1) || ((cs == JCS_YCbCr || cs == JCS_RGB) && comps == 3) || (cmyk && comps == 4)))
    throw Error(ErrorCode::unsupported, "a JPEG of " + std::to_string(comps) + " component(s) in this colour space is not supported",
                {.file = name, .expected = "1 (grey), 3 (YCbCr or RGB) or 4 (CMYK or YCCK) components", .found = std::to_string(comps)});
  RgbImage img = RgbImage::blank(static_cast<int>(std::min<JDIMENSION>(s.cinfo.image_width, INT32_MAX)), static_cast<int>(std::min<JDIMENSION>(s.cinfo.image_height, INT32_MAX)));
  s.cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  std::vector<std::uint8_t> cmyk_pixels;
  if (cmyk) {
    check_allocation(static_cast<std::uint64_t>(img.width) * static_cast<std::uint64_t>(img.height) * 4, [] { return std::string("CMYK JPEG pixels"); });
    cmyk_pixels.resize(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4);
  }
  const std::size_t stride = static_cast<std::size_t>(img.width) * (cmyk ? 4 : 3);
  if (!jpeg_rows(&s, cmyk ? cmyk_pixels.data() : img.pixels.data(), stride)) throw failure();
  if (s.cinfo.output_width != static_cast<JDIMENSION>(img.width) || s.cinfo.output_height != static_cast<JDIMENSION>(img.height))
    throw Error(ErrorCode::runtime, "libjpeg's output size differs from the header's (npusim bug)", {.file = name});
  if (cmyk) {
    // Adobe writes CMYK inverted (the usual case); PIL's CMYK to RGB: R = (255 - C)(255 - K) / 255.
    const bool inverted = s.cinfo.saw_Adobe_marker;
    for (std::size_t i = 0, n = img.pixels.size() / 3; i < n; ++i) {
      const std::uint8_t* p = cmyk_pixels.data() + i * 4;
      const unsigned k = inverted ? p[3] : 255u - p[3];
      for (int c = 0; c < 3; ++c) {
        const unsigned v = inverted ? p[c] : 255u - p[c];
        img.pixels[i * 3 + static_cast<std::size_t>(c)] = static_cast<std::uint8_t>((v * k + 127) / 255);
      }
    }
  }
  return img;
}

#endif  // NPUSIM_WITH_IMAGE_CODECS

}  // namespace image_detail

NPUSIM_FUNC RgbImage decode_image(std::string_view bytes, const std::string& name) {
  using namespace image_detail;
  const std::string expected = "a PNG, JPEG or BMP image";
  const bool png = starts_with(bytes, "\x89PNG\r\n\x1a\n"), jpeg = starts_with(bytes, "\xff\xd8\xff");
  try {
    if (starts_with(bytes, "BM")) return decode_bmp(bytes, name);
    if (png || jpeg) {
#if NPUSIM_WITH_IMAGE_CODECS
      return png ? decode_png(bytes, name) : decode_jpeg(bytes, name);
#else
      throw Error(ErrorCode::unsupported,
                  std::string("this npusim was built without image support (libpng, libjpeg): cannot decode ") + (png ? "PNG" : "JPEG") +
                      " (rebuild with libpng-dev and libjpeg-dev installed, or give the input as .npy)",
                  {.file = name});
#endif
    }
  } catch (Error& e) {
    throw e.with_file(name);
  }
  if (const char* format = unsupported_format(bytes))
    throw Error(ErrorCode::unsupported, std::string(format) + " is not supported", {.file = name, .expected = expected, .found = format});
  throw Error(ErrorCode::unsupported, "unknown image type (TGA, GIF, WebP, PNM, TIFF and others are not supported)",
              {.file = name, .expected = expected, .found = head_of(bytes)});
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
