// Convolutions of small images (at most 64 output pixels: ResNet's 7 x 7 stage), for the pixel-block
// kernels of every type (AVX-512 builds). 49 pixels would fill two 32-pixel blocks only 77%, so
// these run the other way round: output channels along the vectors, pixels broadcast. The threads
// first gather the image's im2col columns into shared tiles of 28 pixels ([K steps][32], lanes
// 28-31 zero), then each runs (strip of 48 channels, group of 7 pixels) items: 7 x 3 = 21
// accumulators, K in chunks of 64 steps so the weight chunk and the tile rows stay in L1 while the
// item's pixel groups reuse them. 49 = 7 groups of 7 and 512 channels = 10 strips of 48 + one of
// 32, so next to nothing is padding.
//
// A Step policy supplies what depends on the type: the packed weights (`Weights`, with `rows`,
// `strips` and `strip(s)`, 48 rows each), the input element (`In`), the 32-bit unit one tile lane
// and one weight lane hold per K step (`Unit`: an f32 value, or a pair of bf16 values), `steps(w)`,
// `gather(g, x, block, steps, tile)` and the vector operations of outer_product (conv_block.hpp).
// ConvF32Step (conv_f32.hpp) and ConvDpbf16Step (conv_dpbf16.hpp) are the two.
#pragma once

#include "npusim/target/cpu/compute/conv_block.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

inline constexpr std::int64_t CONV_CV_MR = 48;  // output channels per strip (3 vectors)
inline constexpr std::int64_t CONV_CV_NP = 7;   // pixels per group
inline constexpr std::int64_t CONV_CV_PX = 28;  // pixels per gathered tile (4 groups)
inline constexpr std::int64_t CONV_CV_KC = 64;  // K steps per chunk

inline bool conv_small_image(std::int64_t P) { return P <= 64; }

// Scratch: the shared tiles (32-bit units), then per thread the partial sums of its groups between
// K chunks and a transpose buffer.
inline std::size_t conv_small_tiles_bytes(std::int64_t steps, std::int64_t P) {
  return static_cast<std::size_t>((P + CONV_CV_PX - 1) / CONV_CV_PX * steps * CONV_PX) * 4 + 64;
}
inline std::size_t conv_small_thread_bytes(std::int64_t P) {
  const std::int64_t groups = (P + CONV_CV_NP - 1) / CONV_CV_NP;
  return static_cast<std::size_t>((groups + 1) * CONV_CV_NP * CONV_CV_MR) * 4 + 64;
}
inline std::size_t conv_small_scratch_bytes(std::int64_t steps, std::int64_t P) {
  return conv_small_tiles_bytes(steps, P) + static_cast<std::size_t>(max_threads()) * conv_small_thread_bytes(P);
}

// One image, one group, P <= 64 output pixels: C[rows][P] (NCHW) = W . im2col(x), + bias,
// [+ residual, laid out as C in its storage], relu.
template <class Step>
inline void conv_small(const ConvGeom& g, const typename Step::Weights& w, const typename Step::In* x, void* y, DType ydt, const float* bias, bool relu,
                       std::byte* scratch, const void* residual = nullptr) {
  using U = typename Step::Unit;
  static_assert(sizeof(U) == 4);
  const std::int64_t P = g.pixels(), K = Step::steps(w), tiles_n = (P + CONV_CV_PX - 1) / CONV_CV_PX, groups = (P + CONV_CV_NP - 1) / CONV_CV_NP;
  auto* tiles = reinterpret_cast<U*>(thread_scratch(scratch, 0, 0));
  std::byte* per_thread = scratch + conv_small_tiles_bytes(K, P);
  parallel_for(tiles_n, 1, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t)
      Step::gather(g, x, ConvBlock(g, t * CONV_CV_PX, std::min(CONV_CV_PX, P - t * CONV_CV_PX), true), K, tiles + t * K * CONV_PX);
  });
  // Items: (strip, pixel group), strip-major; a thread runs its items strip by strip, all of a
  // strip's groups per K chunk.
  auto cost = [&](std::int64_t it) { return static_cast<double>((std::min(CONV_CV_MR, w.rows - it / groups * CONV_CV_MR) + 15) / 16); };
  parallel_items(w.strips * groups, cost, [&](int tid, auto& claim) {
    auto* partial = reinterpret_cast<float*>(thread_scratch(per_thread, tid, conv_small_thread_bytes(P)));
    float* tbuf = partial + groups * CONV_CV_NP * CONV_CV_MR;  // [7][48]
    alignas(64) std::int32_t cols[16] = {};  // lane p <- tbuf[p][.]
    for (int p = 0; p < CONV_CV_NP; ++p) cols[p] = static_cast<std::int32_t>(p * CONV_CV_MR);
    const __m512i col = _mm512_load_si512(cols);
    visit_output(ydt, y, residual, [&](auto ctag, auto* C, const auto* R) {
      using SC = decltype(ctag);
      for (std::int64_t i0, i1; claim(i0, i1, groups);) {
        const std::int64_t s = i0 / groups, q0 = i0 % groups, q1 = q0 + (i1 - i0);
        const std::int64_t live = std::min(CONV_CV_MR, w.rows - s * CONV_CV_MR), nv = (live + 15) / 16;
        for (std::int64_t k0 = 0; k0 < K; k0 += CONV_CV_KC) {
          const std::int64_t kc = std::min(CONV_CV_KC, K - k0);
          const bool first = k0 == 0, last = k0 + kc == K;
          for (std::int64_t q = q0; q < q1; ++q) {
            __m512 acc[CONV_CV_NP][3];
            float* ps = partial + q * CONV_CV_NP * CONV_CV_MR;
            for (int p = 0; p < CONV_CV_NP; ++p)
              for (int v = 0; v < 3; ++v) acc[p][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ps + p * CONV_CV_MR + 16 * v);
            const auto* ws = w.strip(s) + k0 * CONV_CV_MR;
            const U* ts = tiles + (q * CONV_CV_NP / CONV_CV_PX) * K * CONV_PX + k0 * CONV_PX + q * CONV_CV_NP % CONV_CV_PX;
            // acc[p][v] += the chunk's tile[k][p] . strip[k][16 v ..]: 7 pixels broadcast, nv vectors of channels.
            if (nv == 3) outer_product<Step, CONV_CV_NP, 3>(ts, CONV_PX, ws, CONV_CV_MR, kc, acc);
            else if (nv == 2) outer_product<Step, CONV_CV_NP, 2>(ts, CONV_PX, ws, CONV_CV_MR, kc, acc);
            else outer_product<Step, CONV_CV_NP, 1>(ts, CONV_PX, ws, CONV_CV_MR, kc, acc);
            float* out = last ? tbuf : ps;
            for (int p = 0; p < CONV_CV_NP; ++p)
              for (int v = 0; v < 3; ++v) _mm512_store_ps(out + p * CONV_CV_MR + 16 * v, acc[p][v]);
            if (!last) continue;
            // Channel r's 7 pixels are column r of tbuf [7][48]: one gather each, then stored.
            const std::int64_t pix = q * CONV_CV_NP, n = std::min(CONV_CV_NP, P - pix);
            for (std::int64_t r = 0; r < live; ++r) {
              const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), static_cast<__mmask16>((1u << CONV_CV_NP) - 1), col, tbuf + r, 4);
              const std::int64_t oc = s * CONV_CV_MR + r;
              store_output<SC>(C + oc * P + pix, fbatch(v), bias ? bias[oc] : 0.0f, relu, n, R ? R + oc * P + pix : nullptr);
            }
          }
        }
      }
    });
  });
}

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
