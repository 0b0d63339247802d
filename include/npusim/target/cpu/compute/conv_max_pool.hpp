// conv2d [+ bias] [+ relu] -> max_pool2d in one pass, f32 (AVX-512 builds): the fused
// conv_max_pool kernel's arithmetic.
//
// Unfused, ResNet's stem writes its 112 x 112 x 64 output (3.2 MB) and the max pool reads it back:
// the writes go to lines that are not in cache, and they cost the stem about a third of its time.
// Here each thread takes a band of pool output rows, computes the convolution rows that band needs
// one at a time into a ring of as many rows as a pool window spans (3 x 28 KB for the stem: in L2),
// and pools each output row as soon as its last convolution row is there. The convolution output
// is never stored. The convolution rows are the blocked convolution's (conv_nchwc.hpp: same
// weights, pixel groups, K chunks and epilogue), so the values pooled are exactly the ones the
// unfused kernels would store; bands that meet share a convolution row, which both compute (one
// row in 57 for the stem on 2 threads).
#pragma once

#include "npusim/target/cpu/compute/conv_nchwc.hpp"
#include "npusim/target/cpu/compute/max_pool_blocked.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

struct BlockedConvMaxPool {
  BlockedConv conv;     // out_blocked (ring rows), pixel groups by row
  BlockedMaxPool pool;  // over the convolution's output
  bool out_blocked = false;
  std::int64_t span = 0;  // ring rows: the convolution rows one pool window covers

  std::int64_t groups_per_row() const { return conv.groups() / conv.g.OH; }
  std::int64_t row_floats() const { return conv.kb * conv.g.OW * CBLK; }  // one ring row: [kb][OW][16]
  std::size_t thread_bytes() const {
    return static_cast<std::size_t>(span * row_floats() + groups_per_row() * BCONV_NP * BCONV_OC) * 4 + 64;
  }
  std::size_t scratch_bytes() const { return conv.input_bytes() + static_cast<std::size_t>(conv.threads) * thread_bytes(); }
};

// Binds the fused pair. The convolution is single-group; `out_blocked`: y held channel-blocked.
inline BlockedConvMaxPool make_blocked_conv_max_pool(const ConvGeom& g, const void* wt, DType dtype, const float* bias, bool relu, bool in_blocked,
                                                     const ops::MaxPool2d::Attrs& a, std::int64_t OH, std::int64_t OW, bool out_blocked) {
  BlockedConvMaxPool f;
  f.conv = make_blocked_conv(g, wt, dtype, bias, relu, in_blocked, true, true);
  f.pool = BlockedMaxPool::make(a, g.OH, g.OW, OH, OW);
  f.out_blocked = out_blocked;
  f.span = (f.pool.kh - 1) * f.pool.dh + 1;
  return f;
}

// One image: x (blocked, or NCHW) -> y = max_pool(conv(x)) (blocked, or NCHW).
inline void blocked_conv_max_pool(const BlockedConvMaxPool& f, const float* x, float* y, std::byte* scratch) {
  const BlockedConv& b = f.conv;
  const BlockedMaxPool& mp = f.pool;
  const float* xs = blocked_input(b, x, scratch);
  std::byte* per_thread = scratch + b.input_bytes();
  const std::int64_t per_row = f.groups_per_row(), pairs = b.cbn * b.taps, kb = b.kb, OP = mp.OH * mp.OW;
  // NCHW output: lane l (channel 16 blk + l) goes to y[(16 blk + l) OP + pixel].
  const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(static_cast<std::int32_t>(OP)));
  // Bands of pool rows, one per thread (at least 2 pool rows each).
  parallel_for_t(mp.OH, 2, [&](int tid, std::int64_t p0, std::int64_t p1) {
    auto* ring = reinterpret_cast<float*>(thread_scratch(per_thread, tid, f.thread_bytes()));
    float* partial = ring + f.span * f.row_floats();
    auto slot = [&](std::int64_t r) { return ring + r % f.span * f.row_floats(); };
    // The convolution rows [r0, r1] the band's windows cover.
    const auto [r0, r1] = mp.rows_read(p0, p1);
    std::int64_t p = p0;
    for (std::int64_t r = r0; r <= r1; ++r) {
      const bconv_detail::Out out{slot(r), b.g.OW, r * b.g.OW};
      for (std::int64_t og = 0; og < b.ogs; ++og)
        for (std::int64_t j0 = 0; j0 < pairs; j0 += b.kc) {
          const bconv_detail::Chunk k{j0, std::min(pairs, j0 + b.kc), j0 / b.taps, j0 % b.taps};
          for (std::int64_t q = r * per_row; q < (r + 1) * per_row; ++q)
            bconv_detail::run_group_any(b, xs, og, k, q, partial + (q - r * per_row) * BCONV_NP * BCONV_OC, out, nullptr, {});
        }
      // The pool rows whose rows are all there: the ring holds rows (r - span, r], and a window
      // whose last row inside is at most r starts after r - span.
      for (; p < p1 && mp.in_row(p, mp.taps(p).second - 1) <= r; ++p)
        for (std::int64_t blk = 0; blk < kb; ++blk) {
          auto row_at = [&](std::int64_t ih) { return slot(ih) + blk * b.g.OW * CBLK; };
          if (f.out_blocked) {
            float* o = y + (blk * mp.OH + p) * mp.OW * CBLK;
            mp.row(p, row_at, [&](std::int64_t ow, fbatch v) { v.store_aligned(o + ow * CBLK); });
          } else {
            float* o = y + blk * CBLK * OP + p * mp.OW;
            const auto live = static_cast<__mmask16>((1u << std::min<std::int64_t>(CBLK, b.g.K - blk * CBLK)) - 1);
            mp.row(p, row_at, [&](std::int64_t ow, fbatch v) { _mm512_mask_i32scatter_ps(o + ow, live, idx, v, 4); });
          }
        }
    }
  });
}

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
