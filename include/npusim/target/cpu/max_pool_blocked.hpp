// max_pool2d over channel-blocked f32 rows (AVX-512 builds): one output row of one 16-channel
// block from the input rows its windows cover, 16 channels per vector. The blocked max pool
// kernel (kernels_nn.hpp) reads those rows from a whole blocked tensor; the fused conv_max_pool
// (conv_max_pool.hpp) from the convolution rows it has just computed.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>

#include "npusim/ops/pool.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

struct BlockedMaxPool {
  std::int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
  std::int64_t H = 0, W = 0, OH = 0, OW = 0;  // input and output rows and columns
  std::int64_t lo = 0, hi = 0;                // output columns [lo, hi) read only columns inside the row

  static BlockedMaxPool make(const ops::MaxPool2d::Attrs& a, std::int64_t H, std::int64_t W, std::int64_t OH, std::int64_t OW) {
    BlockedMaxPool p{a.kernel_size[0], a.kernel_size[1], a.stride[0], a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], H, W, OH, OW};
    p.hi = OW;
    while (p.lo < OW && p.lo * p.sw - p.pw < 0) ++p.lo;
    while (p.hi > p.lo && (p.hi - 1) * p.sw - p.pw + (p.kw - 1) * p.dw >= W) --p.hi;
    return p;
  }

  // Input row of kernel row i for output row oh (may lie outside [0, H)).
  std::int64_t in_row(std::int64_t oh, std::int64_t i) const { return oh * sh - ph + i * dh; }
  // The kernel rows [first, second) of output row oh that lie inside the input.
  std::pair<std::int64_t, std::int64_t> taps(std::int64_t oh) const {
    std::int64_t i0 = 0, i1 = kh;
    while (i0 < kh && in_row(oh, i0) < 0) ++i0;
    while (i1 > i0 && in_row(oh, i1 - 1) >= H) --i1;
    return {i0, i1};
  }

  // Output row oh of one block: row_at(ih) is the block's input row ih ([W][16] floats), asked
  // for the rows inside the input only; store(ow, v) receives each output vector. NaN propagates
  // (max_pool2d's rule): a NaN anywhere in the window makes the output NaN.
  template <class RowAt, class Store>
  void row(std::int64_t oh, RowAt&& row_at, Store&& store) const {
    const auto [i0, i1] = taps(oh);
    auto window = [&](std::int64_t ow, bool edge) {
      fbatch v(-std::numeric_limits<float>::infinity());
      fbatch::batch_bool_type nan(false);
      for (std::int64_t i = i0; i < i1; ++i) {
        const float* r = row_at(in_row(oh, i));
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t iw = ow * sw - pw + j * dw;
          if (edge && (iw < 0 || iw >= W)) continue;
          const fbatch e = fbatch::load_aligned(r + iw * 16);
          nan = nan || xsimd::isnan(e);
          v = xsimd::max(v, e);
        }
      }
      store(ow, xsimd::select(nan, fbatch(std::numeric_limits<float>::quiet_NaN()), v));
    };
    for (std::int64_t ow = 0; ow < lo; ++ow) window(ow, true);
    for (std::int64_t ow = lo; ow < hi; ++ow) window(ow, false);
    for (std::int64_t ow = hi; ow < OW; ++ow) window(ow, true);
  }
};

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
