// Convolutions by blocks of 32 output pixels, for the pixel-block kernels of every type (AVX-512
// builds): the work split and K-chunk loop that conv_f32.hpp (f32) and conv_dpbf16.hpp (bf16 dot
// products) share. Per block a thread gathers the block's im2col columns into its own tile
// ([K steps][32 pixels] of 32-bit units), then every output-channel strip multiplies it: 12
// channels x 32 pixels = 24 accumulators, K in chunks so the tile chunk stays in L1 while the
// strip streams. Bias, relu, a residual (the unfused add's rounding) and the output's storage are
// applied from the registers. A block of at most 16 pixels (the last of a 14 x 14 image) is
// computed one vector wide, and the threads' shares are balanced by products, not by items.
//
// A Step policy supplies what depends on the type, as for conv_small.hpp: `Weights` (12-row
// strips: `rows`, `strips`, `strip(s)`), `In`, `Unit`, `steps(w)`, `gather(g, x, block, steps,
// tile)`, the vector operations of outer_product (conv_block.hpp), plus `block_kc` (K steps per
// chunk).
#pragma once

#include "npusim/target/cpu/compute/conv_block.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AVX512)

inline constexpr std::int64_t CONV_MR = 12;  // output channels per strip

// Per-thread scratch: the group's tiles [steps][32] and partial sums [block][strip * 12][32]
// between K chunks.
inline std::size_t conv_blocks_thread_bytes(std::int64_t steps, std::int64_t strips, std::int64_t group) {
  return static_cast<std::size_t>(group * (steps * CONV_PX + strips * CONV_MR * CONV_PX)) * 4 + 64;
}
inline std::size_t conv_blocks_scratch_bytes(std::int64_t steps, std::int64_t strips, std::int64_t P) {
  return static_cast<std::size_t>(max_threads()) * conv_blocks_thread_bytes(steps, strips, conv_block_group(P));
}

// The rows strip s's products run: all 12, or for a last strip with fewer live rows (64 channels
// = 5 strips + 4 rows) 4 or 8 of them.
inline int strip_rows(std::int64_t rows, std::int64_t s) {
  const std::int64_t live = rows - s * CONV_MR;
  return live <= 4 ? 4 : live <= 8 ? 8 : static_cast<int>(CONV_MR);
}
// outer_product of strip s's weights `a` ([k][12]) and a 32-pixel tile `b` ([k][32]) over kc
// steps, V vectors of pixels, the strip_rows(rows, s) rows.
template <class Step, int V>
inline void strip_product(std::int64_t rows, std::int64_t s, const typename Step::Unit* a, const typename Step::Unit* b, std::int64_t kc,
                          __m512 (&acc)[CONV_MR][2]) {
  switch (strip_rows(rows, s)) {
    case 4: return outer_product<Step, 4, V>(a, CONV_MR, b, CONV_PX, kc, acc);
    case 8: return outer_product<Step, 8, V>(a, CONV_MR, b, CONV_PX, kc, acc);
    default: return outer_product<Step, CONV_MR, V>(a, CONV_MR, b, CONV_PX, kc, acc);
  }
}

// How a kernel of (pixel group, strip range) items splits each group's strips: into enough parts
// that there are about 16 items a thread, so that parallel_items can balance the threads'
// products; part `part` of `parts` then costs part_rows(...) rows per vector of pixels. A 28 x 28
// image has 24.5 blocks (2 strip ranges each), a 14 x 14 one 6.125 (5).
inline std::int64_t item_parts(std::int64_t groups, std::int64_t strips, std::int64_t threads) {
  return std::min(strips, std::max(conv_parts(groups, strips, threads), (16 * threads + groups - 1) / groups));
}
inline std::int64_t part_rows(std::int64_t rows, std::int64_t strips, std::int64_t part, std::int64_t parts) {
  std::int64_t n = 0;
  for (std::int64_t s = strips * part / parts; s < strips * (part + 1) / parts; ++s) n += strip_rows(rows, s);
  return n;
}

// One K chunk [k0, k0 + kc) of strip s times one block tile `tile` ([K][32] units): the partial
// sums `ps` ([12][32] floats) in and out between chunks, or after the last one the finished
// register block to epilogue(acc) (without bias). V: vectors of pixels computed, 1 for a block of
// at most 16 pixels (acc[.][1] then stays zero). A last strip with fewer rows (64 channels =
// 5 strips + 4 rows) skips its zero rows.
template <class Step, int V, class Epilogue>
inline void block_chunk(const typename Step::Weights& w, std::int64_t s, const typename Step::Unit* tile, std::int64_t k0, std::int64_t kc, bool first,
                        bool last, float* ps, Epilogue& epilogue) {
  __m512 acc[CONV_MR][2];
  for (int r = 0; r < CONV_MR; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = first || v >= V ? _mm512_setzero_ps() : _mm512_load_ps(ps + r * CONV_PX + v * 16);
  strip_product<Step, V>(w.rows, s, w.strip(s) + k0 * CONV_MR, tile + k0 * CONV_PX, kc, acc);
  if (last) return epilogue(acc);
  for (int r = 0; r < CONV_MR; ++r)
    for (int v = 0; v < V; ++v) _mm512_store_ps(ps + r * CONV_PX + v * 16, acc[r][v]);
}

// One image, one group: C[rows][P] (NCHW, row stride P) = W . im2col(x), + bias, [+ residual,
// laid out as C in its storage], relu. Work items are (block group, strip range); a thread gathers
// a group once for the strip ranges it runs.
template <class Step>
inline void conv_blocks(const ConvGeom& g, const typename Step::Weights& w, const typename Step::In* x, void* y, DType ydt, const float* bias, bool relu,
                        std::byte* scratch, const void* residual = nullptr) {
  using U = typename Step::Unit;
  static_assert(sizeof(U) == 4);
  const std::int64_t P = g.pixels(), K = Step::steps(w), blocks = (P + CONV_PX - 1) / CONV_PX, threads = max_threads();
  const std::int64_t nb = conv_block_group(P), groups = (blocks + nb - 1) / nb;
  // Items split by products (a block of at most 16 pixels costs half).
  const std::int64_t parts = item_parts(groups, w.strips, threads);
  auto vectors = [&](std::int64_t blk) { return std::min(CONV_PX, P - blk * CONV_PX) <= 16 ? 1 : 2; };
  auto cost = [&](std::int64_t it) {
    const std::int64_t grp = it / parts;
    std::int64_t vecs = 0;
    for (std::int64_t blk = grp * nb; blk < std::min(blocks, (grp + 1) * nb); ++blk) vecs += vectors(blk);
    return static_cast<double>(part_rows(w.rows, w.strips, it % parts, parts) * vecs);
  };
  parallel_items(groups * parts, cost, [&](int tid, auto& claim) {
    auto* tiles = reinterpret_cast<U*>(thread_scratch(scratch, tid, conv_blocks_thread_bytes(K, w.strips, nb)));
    auto* partial = reinterpret_cast<float*>(tiles + nb * K * CONV_PX);
    visit_output(ydt, y, residual, [&](auto ctag, auto* C, const auto* R) {
      using SC = decltype(ctag);
      std::int64_t have = -1;
      for (std::int64_t it; claim(it);) {
        const std::int64_t grp = it / parts, part = it % parts, b0 = grp * nb, nbv = std::min(nb, blocks - b0);
        if (grp != have) {
          for (std::int64_t b = 0; b < nbv; ++b) Step::gather(g, x, ConvBlock(g, b0 + b), K, tiles + b * K * CONV_PX);
          have = grp;
        }
        const std::int64_t s0 = w.strips * part / parts, s1 = w.strips * (part + 1) / parts;
        for (std::int64_t k0 = 0; k0 < K; k0 += Step::block_kc) {
          const std::int64_t kc = std::min(Step::block_kc, K - k0);
          const bool first = k0 == 0, last = k0 + kc == K;
          for (std::int64_t s = s0; s < s1; ++s)
            for (std::int64_t b = 0; b < nbv; ++b) {
              const std::int64_t r0 = s * CONV_MR, n0 = (b0 + b) * CONV_PX, cols = std::min(CONV_PX, P - n0);
              auto epilogue = [&](__m512 (&acc)[CONV_MR][2]) {
                for (std::int64_t r = 0; r < std::min(CONV_MR, w.rows - r0); ++r)
                  for (int v = 0; v < 2; ++v) {
                    const std::int64_t at = (r0 + r) * P + n0 + v * 16;
                    store_output<SC>(C + at, fbatch(acc[r][v]), bias ? bias[r0 + r] : 0.0f, relu, cols - v * 16, R ? R + at : nullptr);
                  }
              };
              const U* tile = tiles + b * K * CONV_PX;
              float* ps = partial + (b * w.strips + s) * CONV_MR * CONV_PX;
              if (vectors(b0 + b) == 1) block_chunk<Step, 1>(w, s, tile, k0, kc, first, last, ps, epilogue);
              else block_chunk<Step, 2>(w, s, tile, k0, kc, first, last, ps, epilogue);
            }
        }
      }
    });
  });
}

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
