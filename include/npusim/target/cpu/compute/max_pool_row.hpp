// max_pool2d's window geometry, and its arithmetic on the rows of one NCHW plane in two steps per
// output row: over the window's rows (rows_max), then over its columns (cols_max), 16 columns per
// vector (AVX-512). The plane max pool (kernels_nn.hpp) runs them; the blocked one
// (max_pool_blocked.hpp) shares the geometry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "npusim/ops/pool.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

struct MaxPoolGeom {
  std::int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
  std::int64_t H = 0, W = 0, OH = 0, OW = 0;  // input and output rows and columns
  static MaxPoolGeom make(const ops::MaxPool2d::Attrs& a, std::int64_t H, std::int64_t W, std::int64_t OH, std::int64_t OW) {
    return {a.kernel_size[0], a.kernel_size[1], a.stride[0], a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], H, W, OH, OW};
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
  // The input rows output rows [p0, p1) read: [first, second] (clipped to the input). With
  // dilation a window's first and last rows inside the input are not monotonic in the output row,
  // but its unclipped ends are.
  std::pair<std::int64_t, std::int64_t> rows_read(std::int64_t p0, std::int64_t p1) const {
    return {std::max<std::int64_t>(0, in_row(p0, 0)), std::min(H - 1, in_row(p1 - 1, kh - 1))};
  }
  // The work row of one output row: its windows' input columns from -pw on, as far as the last
  // vector of windows reads, -inf outside the input (pad_work).
  std::int64_t work_floats() const { return std::max(pw + W, (OW + 15) / 16 * 16 * std::max<std::int64_t>(sw, 2) + (kw - 1) * dw + 16); }
  void pad_work(float* work) const {
    std::fill(work, work + pw, -std::numeric_limits<float>::infinity());
    std::fill(work + pw + W, work + work_floats(), -std::numeric_limits<float>::infinity());
  }

  // Output row oh in two steps. rows_max: work[pw + iw] = the maximum over the window's rows of
  // column iw (row_at(ih) is input row ih, asked for the rows inside the input only). cols_max:
  // out[ow] = the maximum of the work row over the window's columns. As max_pool2d: a later
  // element replaces the maximum only when greater, and a NaN in the window is the result. The
  // value is PyTorch's; only where -0 and +0 tie in different rows and columns may it be the other
  // zero (PyTorch takes the first in the window's row-major order).
  template <class RowAt>
  void rows_max(std::int64_t oh, RowAt&& row_at, float* work) const {
    const auto [i0, i1] = taps(oh);
#if defined(NPUSIM_CPU_AVX512)
    for (std::int64_t c = 0; c < W; c += 16) {
      const auto m = static_cast<__mmask16>((1u << std::min<std::int64_t>(16, W - c)) - 1);
      __m512 v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      __mmask16 nan = 0;
      for (std::int64_t i = i0; i < i1; ++i) {
        const __m512 x = _mm512_maskz_loadu_ps(m, row_at(in_row(oh, i)) + c);
        nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        v = _mm512_max_ps(x, v);  // x where x > v, else v: a NaN x is caught by `nan`, a NaN v stays
      }
      _mm512_mask_storeu_ps(work + pw + c, m, _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN())));
    }
#else
    float* o = work + pw;
    std::fill(o, o + W, -std::numeric_limits<float>::infinity());
    for (std::int64_t i = i0; i < i1; ++i) {
      const float* r = row_at(in_row(oh, i));
      for (std::int64_t c = 0; c < W; ++c)
        if (r[c] > o[c] || r[c] != r[c]) o[c] = r[c];
    }
#endif
  }
  void cols_max(const float* work, float* out) const {
#if defined(NPUSIM_CPU_AVX512)
    alignas(64) std::int32_t idx[16];  // stride 2: lane L <- element 2L of a pair of vectors; else lane L <- element L sw
    for (int q = 0; q < 16; ++q) idx[q] = sw == 2 ? 2 * q : static_cast<std::int32_t>(q * sw);
    const __m512i lanes_idx = _mm512_load_si512(idx);
    for (std::int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
      __m512 v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      __mmask16 nan = 0;
      for (std::int64_t j = 0; j < kw; ++j) {
        const float* at = work + ow0 * sw + j * dw;
        const __m512 x = sw == 1   ? _mm512_loadu_ps(at)
                         : sw == 2 ? _mm512_permutex2var_ps(_mm512_loadu_ps(at), lanes_idx, _mm512_loadu_ps(at + 16))
                                   : _mm512_i32gather_ps(lanes_idx, at, 4);
        nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        v = _mm512_max_ps(x, v);
      }
      _mm512_mask_storeu_ps(out + ow0, static_cast<__mmask16>((1u << std::min<std::int64_t>(16, OW - ow0)) - 1),
                            _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN())));
    }
#else
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < kw; ++j) {
        const float x = work[ow * sw + j * dw];
        if (x > m || x != x) m = x;
      }
      out[ow] = m;
    }
#endif
  }
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
