// max_pool2d over channel-blocked f32 rows (AVX-512 builds): one output row of one 16-channel
// block from the input rows its windows cover, 16 channels per vector. The blocked max pool
// kernel (kernels_nn.hpp) reads those rows from a whole blocked tensor; the fused conv_max_pool
// (conv_max_pool.hpp) from the convolution rows it has just computed.
#pragma once

#include <cstdint>
#include <limits>

#include "npusim/target/cpu/compute/max_pool_row.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

struct BlockedMaxPool : MaxPoolGeom {
  std::int64_t lo = 0, hi = 0;  // output columns [lo, hi) read only columns inside the row

  static BlockedMaxPool make(const ops::MaxPool2d::Attrs& a, std::int64_t H, std::int64_t W, std::int64_t OH, std::int64_t OW) {
    BlockedMaxPool p;
    static_cast<MaxPoolGeom&>(p) = MaxPoolGeom::make(a, H, W, OH, OW);
    p.hi = OW;
    while (p.lo < OW && p.lo * p.sw - p.pw < 0) ++p.lo;
    while (p.hi > p.lo && (p.hi - 1) * p.sw - p.pw + (p.kw - 1) * p.dw >= W) --p.hi;
    return p;
  }

  // Output row oh of one block: row_at(ih) is the block's input row ih ([W][16] floats), asked
  // for the rows inside the input only; store(ow, v) receives each output vector. NaN propagates
  // (max_pool2d's rule): a NaN anywhere in the window makes the output NaN.
  template <class RowAt, class Store>
  void row(std::int64_t oh, RowAt&& row_at, Store&& store) const {
    const auto taps_oh = taps(oh);  // not a structured binding: clang 14 cannot capture those in a lambda
    const std::int64_t i0 = taps_oh.first, i1 = taps_oh.second;
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
