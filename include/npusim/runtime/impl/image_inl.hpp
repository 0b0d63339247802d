// Definitions for npusim/runtime/image.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <climits>
#include <cmath>
#include <memory>

#include "npusim/config.hpp"
#include "npusim/runtime/image.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC ImagePreprocess ImagePreprocess::for_input_shape(const Shape& shape, const std::string& input_name) {
  if (shape.size() != 4 || shape[0] != 1 || shape[1] != 3 || shape[2] < 1 || shape[3] < 1 || shape[2] > INT_MAX || shape[3] > INT_MAX)
    throw Error(ErrorCode::shape, "an image can only feed a graph input of shape [1, 3, H, W]",
                {.tensor = input_name, .expected = "[1, 3, H, W]", .found = to_string(shape)});
  ImagePreprocess p;
  p.crop_height = static_cast<int>(shape[2]);
  p.crop_width = static_cast<int>(shape[3]);
  p.resize = static_cast<int>(std::lround(static_cast<double>(std::min(p.crop_height, p.crop_width)) * 256.0 / 224.0));
  return p;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime

namespace npusim::inline NPUSIM_ABI::runtime {
namespace image_detail {

NPUSIM_FUNC std::vector<Taps> bilinear_taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the triangle's half-width is 1 input pixel, stretched
  std::vector<Taps> taps(static_cast<std::size_t>(out_size));
  std::vector<double> w;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    w.assign(static_cast<std::size_t>(std::max(xmax, 0)), 0.0);
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double t = std::abs((x + xmin - center + 0.5) * ss);
      w[static_cast<std::size_t>(x)] = t < 1.0 ? 1.0 - t : 0.0;
      total += w[static_cast<std::size_t>(x)];
    }
    Taps& tp = taps[static_cast<std::size_t>(xx)];
    tp.first = xmin;
    for (double v : w) {
      if (total != 0.0) v /= total;
      tp.weights.push_back(static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << precision_bits) : 0.5 + v * (1 << precision_bits)));
    }
  }
  return taps;
}

NPUSIM_FUNC int half_even_half(int d) {
  const int k = d / 2;
  return d % 2 == 0 ? k : (k % 2 == 0 ? k : k + 1);
}

}  // namespace image_detail
}  // namespace npusim::inline NPUSIM_ABI::runtime

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC RgbImage resize_bilinear(const RgbImage& in, int width, int height) {
  if (width < 1 || height < 1 || in.width < 1 || in.height < 1)
    throw Error(ErrorCode::shape, "resize needs non-empty images", {.expected = ">= 1x1",
                .found = std::to_string(in.width) + "x" + std::to_string(in.height) + " -> " + std::to_string(width) + "x" + std::to_string(height)});
  using image_detail::clip8;
  const std::int32_t half = 1 << (image_detail::precision_bits - 1);
  RgbImage cur = in;
  if (width != in.width) {
    const auto taps = image_detail::bilinear_taps(in.width, width);
    RgbImage out = RgbImage::blank(width, cur.height);
    for (int y = 0; y < cur.height; ++y) {
      const std::uint8_t* src = cur.row(y);
      std::uint8_t* dst = out.row(y);
      for (int x = 0; x < width; ++x) {
        const auto& t = taps[static_cast<std::size_t>(x)];
        std::int32_t acc[3] = {half, half, half};
        for (std::size_t i = 0; i < t.weights.size(); ++i)
          for (int c = 0; c < 3; ++c) acc[c] += src[(t.first + static_cast<int>(i)) * 3 + c] * t.weights[i];
        for (int c = 0; c < 3; ++c) dst[x * 3 + c] = clip8(acc[c]);
      }
    }
    cur = std::move(out);
  }
  if (height != in.height) {
    const auto taps = image_detail::bilinear_taps(in.height, height);
    RgbImage out = RgbImage::blank(cur.width, height);
    std::vector<std::int32_t> acc(static_cast<std::size_t>(cur.width) * 3);
    for (int y = 0; y < height; ++y) {
      const auto& t = taps[static_cast<std::size_t>(y)];
      std::fill(acc.begin(), acc.end(), half);
      for (std::size_t i = 0; i < t.weights.size(); ++i) {
        const std::uint8_t* src = cur.row(t.first + static_cast<int>(i));
        for (std::size_t j = 0; j < acc.size(); ++j) acc[j] += src[j] * t.weights[i];
      }
      std::uint8_t* dst = out.row(y);
      for (std::size_t j = 0; j < acc.size(); ++j) dst[j] = clip8(acc[j]);
    }
    cur = std::move(out);
  }
  return cur;
}

NPUSIM_FUNC std::pair<int, int> resized_size(int width, int height, int size) {
  if (size < 1 || width < 1 || height < 1)
    throw Error(ErrorCode::shape, "resize needs a positive size and a non-empty image",
                {.found = std::to_string(width) + "x" + std::to_string(height) + " to shorter side " + std::to_string(size)});
  const bool w_short = width <= height;
  const std::int64_t shorter = w_short ? width : height, longer = w_short ? height : width;
  const double l = static_cast<double>(size * longer) / static_cast<double>(shorter);
  if (l > INT_MAX) throw Error(ErrorCode::resource, "resized image would be too long", {.found = std::to_string(width) + "x" + std::to_string(height)});
  const int new_long = static_cast<int>(l);
  return w_short ? std::pair{size, new_long} : std::pair{new_long, size};
}

NPUSIM_FUNC RgbImage resize_shorter_side(const RgbImage& in, int size) {
  const auto [w, h] = resized_size(in.width, in.height, size);
  if (w == in.width && h == in.height) return in;
  return resize_bilinear(in, w, h);
}

NPUSIM_FUNC std::pair<int, int> center_crop_offsets(int width, int height, int crop_width, int crop_height) {
  return {image_detail::half_even_half(width - crop_width), image_detail::half_even_half(height - crop_height)};
}

NPUSIM_FUNC RgbImage center_crop(const RgbImage& in, int crop_width, int crop_height) {
  if (crop_width < 1 || crop_height < 1) throw Error(ErrorCode::shape, "crop size must be positive", {.found = std::to_string(crop_width) + "x" + std::to_string(crop_height)});
  const int pad_left = crop_width > in.width ? (crop_width - in.width) / 2 : 0;
  const int pad_top = crop_height > in.height ? (crop_height - in.height) / 2 : 0;
  const int w = std::max(in.width, crop_width), h = std::max(in.height, crop_height);
  const auto [left, top] = center_crop_offsets(w, h, crop_width, crop_height);
  RgbImage out = RgbImage::blank(crop_width, crop_height);
  for (int y = 0; y < crop_height; ++y) {
    const int sy = y + top - pad_top;
    if (sy < 0 || sy >= in.height) continue;
    for (int x = 0; x < crop_width; ++x) {
      const int sx = x + left - pad_left;
      if (sx < 0 || sx >= in.width) continue;
      for (int c = 0; c < 3; ++c) out.row(y)[x * 3 + c] = in.at(sx, sy, c);
    }
  }
  return out;
}

NPUSIM_FUNC Tensor normalize_to_tensor(const RgbImage& img, const std::array<double, 3>& mean, const std::array<double, 3>& stddev) {
  Tensor t = Tensor::empty(DType::f32, {1, 3, img.height, img.width});
  float* out = t.data<float>();
  const std::size_t plane = static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height);
  for (int c = 0; c < 3; ++c) {
    const float m = static_cast<float>(mean[static_cast<std::size_t>(c)]), s = static_cast<float>(stddev[static_cast<std::size_t>(c)]);
    for (std::size_t i = 0; i < plane; ++i) {
      const float x = static_cast<float>(img.pixels[i * 3 + static_cast<std::size_t>(c)]) / 255.0f;
      out[static_cast<std::size_t>(c) * plane + i] = (x - m) / s;
    }
  }
  return t;
}

NPUSIM_FUNC Tensor preprocess_image(const RgbImage& img, const ImagePreprocess& p) {
  for (double s : p.stddev)
    if (!(s != 0.0)) throw Error(ErrorCode::attr, "image normalisation std must be non-zero");
  RgbImage r = resize_shorter_side(img, p.resize);
  return normalize_to_tensor(center_crop(r, p.crop_width, p.crop_height), p.mean, p.stddev);
}

NPUSIM_FUNC Tensor load_image(const std::string& path, const ImagePreprocess& p) {
  try {
    return preprocess_image(read_image(path), p);
  } catch (Error& e) {
    throw e.with_file(path);
  }
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
