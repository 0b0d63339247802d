// Image decoding and torchvision's ImageNet preprocessing: exact values for a constant colour, the
// PIL resize against an independent double-precision triangle filter, torchvision's size and
// crop-offset rules, and (when tests/data/images/reference.json is there) Pillow's and
// torchvision's own outputs made by tests/data/images/make_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "../../common/image_files.hpp"
#include "../../common/test_util.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/runtime/image.hpp"

using namespace npusim;
using namespace npusim::runtime;
using npusim::test::data;
using npusim::test::TempDir;

namespace {

RgbImage make_image(int w, int h, auto&& pixel) {
  RgbImage img = RgbImage::blank(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.row(y)[x * 3 + c] = static_cast<std::uint8_t>(pixel(x, y, c));
  return img;
}

void write_png(const std::string& path, int w, int h, int channels, const std::vector<std::uint8_t>& px) {
  const int color_type = channels == 1 ? 0 : channels == 2 ? 4 : channels == 3 ? 2 : 6;
  test::write_text(path, test::png_bytes(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h), 8, color_type,
                                         std::string(px.begin(), px.end())));
}

// The triangle filter from its definition, in doubles and without PIL's window bookkeeping or
// integer rounding: output i sits at input coordinate (i + 0.5) * scale and averages the inputs
// under a triangle of half-width max(scale, 1) (so a downscale blurs over the pixels it merges).
std::vector<double> triangle_1d(const std::vector<double>& in, int out) {
  const double scale = static_cast<double>(in.size()) / out, width = std::max(scale, 1.0);
  std::vector<double> r(static_cast<std::size_t>(out));
  for (int i = 0; i < out; ++i) {
    double sum = 0, total = 0;
    for (std::size_t j = 0; j < in.size(); ++j) {
      const double w = std::max(0.0, 1.0 - std::abs((static_cast<double>(j) + 0.5 - (i + 0.5) * scale) / width));
      sum += w * in[j], total += w;
    }
    r[static_cast<std::size_t>(i)] = sum / total;
  }
  return r;
}

// Horizontal then vertical, rounded once at the end.
std::vector<double> triangle_2d(const RgbImage& img, int w, int h, int c) {
  std::vector<std::vector<double>> rows;
  for (int y = 0; y < img.height; ++y) {
    std::vector<double> row;
    for (int x = 0; x < img.width; ++x) row.push_back(img.at(x, y, c));
    rows.push_back(triangle_1d(row, w));
  }
  std::vector<double> out(static_cast<std::size_t>(w) * h);
  for (int x = 0; x < w; ++x) {
    std::vector<double> col;
    for (int y = 0; y < img.height; ++y) col.push_back(rows[static_cast<std::size_t>(y)][static_cast<std::size_t>(x)]);
    auto r = triangle_1d(col, h);
    for (int y = 0; y < h; ++y) out[static_cast<std::size_t>(y) * w + x] = r[static_cast<std::size_t>(y)];
  }
  return out;
}

float normalized(int v, int c) {
  const double mean[] = {0.485, 0.456, 0.406}, stddev[] = {0.229, 0.224, 0.225};
  return (static_cast<float>(v) / 255.0f - static_cast<float>(mean[c])) / static_cast<float>(stddev[c]);
}

}  // namespace

TEST(Image, ConstantColourGivesExactlyTheNormalisedValue) {
  if (!image_codecs_available()) GTEST_SKIP() << "built without libpng and libjpeg";
  TempDir dir;
  const int w = 97, h = 61, rgb[3] = {200, 100, 30};
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(rgb[i % 3]);
  write_png(dir.file("c.png"), w, h, 3, px);
  Tensor t = load_image(dir.file("c.png"));
  ASSERT_EQ(t.shape(), (Shape{1, 3, 224, 224}));
  const float* v = t.data<float>();
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 224 * 224; ++i) ASSERT_EQ(v[c * 224 * 224 + i], normalized(rgb[c], c)) << "channel " << c << " pixel " << i;
  // Greyscale is replicated into R, G and B; alpha is dropped (PIL's convert("RGB")).
  write_png(dir.file("g.png"), 5, 4, 1, std::vector<std::uint8_t>(20, 77));
  Tensor g = load_image(dir.file("g.png"), {.resize = 8, .crop_height = 6, .crop_width = 6});
  for (int c = 0; c < 3; ++c) EXPECT_EQ(g.data<float>()[c * 36 + 7], normalized(77, c));
  std::vector<std::uint8_t> rgba;
  for (int i = 0; i < 16; ++i) rgba.insert(rgba.end(), {10, 20, 30, static_cast<std::uint8_t>(i * 16)});
  write_png(dir.file("a.png"), 4, 4, 4, rgba);
  RgbImage a = read_image(dir.file("a.png"));
  EXPECT_EQ(a.at(3, 3, 0), 10);
  EXPECT_EQ(a.at(3, 3, 2), 30);
}

TEST(Image, ResizeMatchesADoublePrecisionTriangleFilter) {
  // A ramp in R, a 1-pixel checkerboard in G (aliases badly without the antialiasing support), a
  // diagonal texture in B.
  const RgbImage img = make_image(300, 200, [](int x, int y, int c) {
    return c == 0 ? x * 255 / 299 : c == 1 ? ((x + y) % 2) * 255 : (x * 7 + y * 13) % 256;
  });
  for (auto [w, h] : {std::pair{96, 64}, std::pair{384, 256}, std::pair{37, 200}, std::pair{300, 41}, std::pair{301, 199}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const RgbImage got = resize_bilinear(img, w, h);
    ASSERT_EQ(got.width, w);
    ASSERT_EQ(got.height, h);
    int worst = 0;
    for (int c = 0; c < 3; ++c) {
      const auto want = triangle_2d(img, w, h, c);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          worst = std::max(worst, std::abs(got.at(x, y, c) - static_cast<int>(std::lround(want[static_cast<std::size_t>(y) * w + x]))));
    }
    // PIL rounds to uint8 after the horizontal pass and again after the vertical one: at most one
    // level from rounding the exact value once.
    EXPECT_LE(worst, 1);
  }
  // Same size: the image itself.
  EXPECT_EQ(resize_bilinear(img, 300, 200).pixels, img.pixels);
}

TEST(Image, ResizedSizeFollowsTorchvision) {
  EXPECT_EQ(resized_size(300, 200, 256), (std::pair{384, 256}));
  EXPECT_EQ(resized_size(500, 375, 256), (std::pair{341, 256}));  // int(341.33)
  EXPECT_EQ(resized_size(80, 60, 64), (std::pair{85, 64}));
  EXPECT_EQ(resized_size(199, 301, 64), (std::pair{64, 96}));  // portrait: width is the short side
  EXPECT_EQ(resized_size(640, 427, 256), (std::pair{383, 256}));  // int(383.700...)
  EXPECT_EQ(resized_size(1, 1000, 256), (std::pair{256, 256000}));
  NPUSIM_EXPECT_ERROR(resized_size(10, 10, 0), "positive size");
}

TEST(Image, CenterCropOffsetsRoundHalvesToEvenAsPython) {
  EXPECT_EQ(center_crop_offsets(256, 256, 224, 224), (std::pair{16, 16}));
  EXPECT_EQ(center_crop_offsets(257, 256, 224, 224), (std::pair{16, 16}));  // round(16.5) = 16
  EXPECT_EQ(center_crop_offsets(259, 225, 224, 224), (std::pair{18, 0}));   // round(17.5) = 18, round(0.5) = 0
  EXPECT_EQ(center_crop_offsets(227, 384, 224, 224), (std::pair{2, 80}));   // round(1.5) = 2
  EXPECT_EQ(center_crop_offsets(85, 64, 56, 56), (std::pair{14, 4}));      // round(14.5) = 14
  const RgbImage img = make_image(7, 5, [](int x, int y, int c) { return 100 * c + 10 * y + x; });
  RgbImage c = center_crop(img, 4, 2);  // offsets round(1.5) = 2, round(1.5) = 2
  EXPECT_EQ(c.at(0, 0, 0), img.at(2, 2, 0));
  EXPECT_EQ(c.at(3, 1, 2), img.at(5, 3, 2));
  // A crop larger than the image pads with black: (crop - size) // 2 before, the rest after.
  RgbImage p = center_crop(img, 10, 8);
  EXPECT_EQ(p.at(0, 0, 1), 0);
  EXPECT_EQ(p.at(1, 1, 1), img.at(0, 0, 1));  // (10 - 7) // 2 = 1, (8 - 5) // 2 = 1
  EXPECT_EQ(p.at(7, 5, 1), img.at(6, 4, 1));
  EXPECT_EQ(p.at(8, 6, 1), 0);
}

TEST(Image, PreprocessSizesFollowTheGraphInput) {
  const auto p = ImagePreprocess::for_input_shape({1, 3, 224, 224});
  EXPECT_EQ(p.resize, 256);
  EXPECT_EQ(p.crop_width, 224);
  EXPECT_EQ(ImagePreprocess::for_input_shape({1, 3, 299, 299}).resize, 342);
  const auto q = ImagePreprocess::for_input_shape({1, 3, 112, 160});
  EXPECT_EQ(q.resize, 128);
  EXPECT_EQ(q.crop_height, 112);
  EXPECT_EQ(q.crop_width, 160);
  NPUSIM_EXPECT_ERROR(ImagePreprocess::for_input_shape({1, 224, 224, 3}, "pixel_values"), "[1, 3, H, W]", "pixel_values", "found [1, 224, 224, 3]");
  NPUSIM_EXPECT_ERROR(ImagePreprocess::for_input_shape({1, 16}), "[1, 3, H, W]");
}

TEST(Image, BadFilesAreErrors) {
  if (!image_codecs_available()) GTEST_SKIP() << "built without libpng and libjpeg";
  TempDir dir;
  NPUSIM_EXPECT_ERROR(load_image(dir.file("missing.png")), "cannot open", "missing.png");
  test::write_text(dir.file("text.png"), "this is not an image at all");
  NPUSIM_EXPECT_ERROR(load_image(dir.file("text.png")), "unknown image type", "text.png", "found 27 bytes starting 74 68 69 73");
  write_png(dir.file("ok.png"), 8, 8, 3, std::vector<std::uint8_t>(192, 9));
  const std::string png = test::read_text(dir.file("ok.png"));
  test::write_text(dir.file("cut.png"), png.substr(0, png.size() / 2));
  NPUSIM_EXPECT_ERROR(load_image(dir.file("cut.png")), "truncated PNG", "cut.png");
  // Every prefix is an error, the closing IEND chunk included (stb took a file cut after its
  // pixel data as whole): never a crash, a wrong size or zero-filled pixels.
  for (std::size_t n = 0; n < png.size(); ++n) EXPECT_THROW(decode_image(std::string_view(png).substr(0, n)), Error) << n << " bytes";
  EXPECT_EQ(decode_image(png).pixels, std::vector<std::uint8_t>(192, 9));
  ImagePreprocess zero;
  zero.stddev[1] = 0;
  NPUSIM_EXPECT_ERROR(load_image(dir.file("ok.png"), zero), "non-zero");
}

// Pillow's resize and torchvision's transform themselves, through make_reference.py's files.
TEST(Image, MatchesPillowAndTorchvisionReferences) {
  const std::string dir = data("images");
  if (!std::filesystem::exists(dir + "/reference.json"))
    GTEST_SKIP() << "no " << dir << "/reference.json: run tests/data/images/make_reference.py on a machine with Pillow and torchvision";
  const auto ref = nlohmann::json::parse(test::read_text(dir + "/reference.json"));
  std::printf("  reference made by: %s\n", ref.at("producer").get<std::string>().c_str());
  const int resize = ref.at("resize"), crop = ref.at("crop");
  ImagePreprocess p{.resize = resize, .crop_height = crop, .crop_width = crop};
  auto max_diff = [](const Tensor& a, const Tensor& b) {
    float d = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.data<float>()[i] - b.data<float>()[i]));
    return d;
  };
  for (const auto& c : ref.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    const RgbImage img = read_image(dir + "/" + name + ".png");
    const RgbImage r = resize_shorter_side(img, resize);
    ASSERT_EQ(r.width, c.at("resized_width").get<int>());
    ASSERT_EQ(r.height, c.at("resized_height").get<int>());
    const Tensor pil = read_npy(dir + "/" + name + "_resized.npy");
    ASSERT_EQ(pil.shape(), (Shape{r.height, r.width, 3}));
    EXPECT_EQ(std::memcmp(pil.raw(), r.pixels.data(), r.pixels.size()), 0) << "resize differs from Pillow's";
    const Tensor want = read_npy(dir + "/" + name + "_preprocessed.npy");
    const Tensor got = preprocess_image(img, p);
    ASSERT_EQ(got.shape(), want.shape());
    const float d = max_diff(got, want);
    std::printf("  %s: max |npusim - reference| = %g\n", name.c_str(), static_cast<double>(d));
    EXPECT_LE(d, 2e-6f);
  }
  for (const auto& j : ref.value("jpeg_cases", nlohmann::json::array())) {
    const std::string name = j.get<std::string>();
    SCOPED_TRACE(name + ".jpg");
    // libjpeg decodes as Pillow's libjpeg does (the same IDCT and upsampling): measure the gap.
    const RgbImage img = read_image(dir + "/" + name + ".jpg");
    const Tensor pil = read_npy(dir + "/" + name + "_jpg_decoded.npy");
    ASSERT_EQ(pil.shape(), (Shape{img.height, img.width, 3}));
    int worst = 0;
    double mean = 0;
    for (std::size_t i = 0; i < img.pixels.size(); ++i) {
      const int d = std::abs(img.pixels[i] - pil.data<std::uint8_t>()[i]);
      worst = std::max(worst, d), mean += d;
    }
    mean /= static_cast<double>(img.pixels.size());
    const float d = max_diff(preprocess_image(img, p), read_npy(dir + "/" + name + "_jpg_preprocessed.npy"));
    std::printf("  %s.jpg: decode vs PIL max %d levels, mean %.3f; preprocessed max |diff| %g\n", name.c_str(), worst, mean, static_cast<double>(d));
    EXPECT_LE(worst, 1);  // 0 with Debian 12's libjpeg-turbo 2.1.5 against Pillow 12.3's
    EXPECT_LE(mean, 0.05);
  }
}
