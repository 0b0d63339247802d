// Images for classifiers: decode (runtime/image_decode.hpp: PNG, JPEG, BMP) to 8-bit RGB, then
// torchvision's ImageNet evaluation preprocessing as `weights.transforms()` applies it to a PIL image:
// Resize(256) (shorter side, PIL bilinear with antialias), CenterCrop(224), ToTensor, Normalize.
// The resize is Pillow's algorithm step for step (triangle filter whose support grows with the
// downscale factor, 22-bit fixed-point coefficients, horizontal pass then vertical pass, each
// rounded and clipped to uint8), so a PNG gives the same uint8 pixels as Pillow and the same
// floats as torchvision to the last bit or so. JPEG decoding is libjpeg's, as Pillow's is.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/runtime/image_decode.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

// torchvision's ImageNet evaluation transform, sizes configurable. The defaults are what
// `ResNet50_Weights.IMAGENET1K_V1.transforms()` and the other V1 224-pixel classifiers use (some
// newer weight sets resize to another size, e.g. 232 for ResNet-50's IMAGENET1K_V2).
struct ImagePreprocess {
  int resize = 256;                      // shorter side after Resize
  int crop_height = 224, crop_width = 224;
  std::array<double, 3> mean{0.485, 0.456, 0.406};  // doubles, as torchvision's Python floats
  std::array<double, 3> stddev{0.229, 0.224, 0.225};

  // For a graph input [1, 3, H, W]: crop H x W, resize round(min(H, W) * 256 / 224) (256 for 224,
  // 342 for 299, as torchvision's presets pair them).
  static ImagePreprocess for_input_shape(const Shape& shape, const std::string& input_name = {});
};

namespace image_detail {

// Pillow's fixed-point precision for 8-bit resampling: 32 bits less 8 for the value, 2 for headroom.
inline constexpr int precision_bits = 22;

// One output pixel's window into the input: first input index and its weights.
struct Taps {
  int first = 0;
  std::vector<std::int32_t> weights;
};

// Pillow's bilinear ("triangle") coefficients for resampling in_size samples to out_size: on
// downscaling the filter is stretched by the scale, which is the antialiasing. Same arithmetic,
// same order as Pillow (double weights normalised to sum 1, then rounded to 22-bit integers).
std::vector<Taps> bilinear_taps(int in_size, int out_size);

// Rounds (the accumulator starts at one half) and clips to uint8, as Pillow's clip8.
inline std::uint8_t clip8(std::int32_t acc) { return static_cast<std::uint8_t>(std::clamp(acc >> precision_bits, 0, 255)); }

// Python's round() of d / 2 for d >= 0: halves go to the even neighbour.
int half_even_half(int d);

}  // namespace image_detail

// PIL's Image.resize((width, height), Image.BILINEAR) on an RGB image, bit for bit: a horizontal
// pass then a vertical one, each result rounded to uint8 (a pass whose size does not change is
// skipped, as PIL does).
RgbImage resize_bilinear(const RgbImage& in, int width, int height);

// torchvision's Resize(size) output size for a width x height image: the shorter side becomes
// `size`, the longer int(size * long / short) (truncated, as Python's int()). Returns {w, h}.
std::pair<int, int> resized_size(int width, int height, int size);

RgbImage resize_shorter_side(const RgbImage& in, int size);

// torchvision's center_crop offsets: {left, top} = int(round((size - crop) / 2.0)), Python's
// round (halves to even). Only for crop <= size (center_crop pads first otherwise).
std::pair<int, int> center_crop_offsets(int width, int height, int crop_width, int crop_height);

// torchvision's CenterCrop((crop_height, crop_width)): an image smaller than the crop is first
// padded with black, (crop - size) // 2 before and the rest after, as torchvision does.
RgbImage center_crop(const RgbImage& in, int crop_width, int crop_height);

// ToTensor + Normalize: float32 [1, 3, H, W], (u8 / 255 - mean) / std in float32 arithmetic, as
// torch computes it (mean and std rounded to float32 first).
Tensor normalize_to_tensor(const RgbImage& img, const std::array<double, 3>& mean, const std::array<double, 3>& stddev);

// The whole transform on a decoded image.
Tensor preprocess_image(const RgbImage& img, const ImagePreprocess& p = {});

// Reads, decodes and preprocesses an image file: float32 [1, 3, crop_height, crop_width].
Tensor load_image(const std::string& path, const ImagePreprocess& p = {});

}  // namespace npusim::inline NPUSIM_ABI::runtime

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/image_inl.hpp"
#endif
