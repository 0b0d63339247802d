// Convolution on AMX tiles for bf16 activations (bf16 x bf16 products, f32 accumulation).
//
// Per block of 32 output pixels, the im2col rows are gathered straight into the k-pair layout AMX
// reads as its B operand (conv_pairs.hpp; tile row kk = input rows 2kk and 2kk+1, interleaved):
// the block's columns stay in the thread's cache and serve every output channel. The weights are
// the A operand, packed once at load as zero-padded bf16 rows [Cout rounded to 32][K rounded to
// 32]. Each 32 x 32 output block is four 16 x 16 f32 tiles (amx_block_32x32); the epilogue adds
// the bias, applies relu and writes NCHW rows in the output's storage. Only built when the
// compiler targets AMX.
#pragma once

#include <cstring>

#include "npusim/target/cpu/compute/amx.hpp"
#include "npusim/target/cpu/compute/conv_pairs.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_AMX)

// Weights of one group as the A operand: bf16 rows (round to nearest even), zeros past `rows`/`K`.
struct AmxConvWeights {
  std::int64_t rows = 0, K = 0, Mp = 0, Kp = 0;
  AlignedBuf data;
  const std::uint16_t* row(std::int64_t m) const { return data.as<std::uint16_t>() + m * Kp; }
};

inline AmxConvWeights pack_amx_conv_weights(const void* w, DType dtype, std::int64_t rows, std::int64_t K) {
  AmxConvWeights p;
  p.rows = rows, p.K = K, p.Mp = (rows + 31) / 32 * 32, p.Kp = (K + 31) / 32 * 32;
  p.data = AlignedBuf::make(static_cast<std::size_t>(p.Mp * p.Kp) * 2);
  std::memset(p.data.p.get(), 0, p.data.bytes);
  std::vector<float> row(static_cast<std::size_t>(K));
  for (std::int64_t r = 0; r < rows; ++r) {
    load_row(dtype, static_cast<const std::byte*>(w) + static_cast<std::size_t>(r * K) * dtype_size(dtype), row.data(), K);
    convert<SF32, SBf16>(row.data(), p.data.as<std::uint16_t>() + r * p.Kp, K);
  }
  return p;
}

// Per-thread scratch: the block's B operand (Kp/2 pair rows x 32 pixels x 2) and a 32 x 32 f32
// output block.
inline std::size_t amx_conv_thread_bytes(std::int64_t Kp) { return static_cast<std::size_t>(Kp * CONV_PX * 2) + 32 * 32 * 4 + 64; }
inline std::size_t amx_conv_scratch_bytes(std::int64_t Kp) { return static_cast<std::size_t>(max_threads()) * amx_conv_thread_bytes(Kp); }

// One image, one group: C[rows][P] (NCHW, row stride P) = W . im2col(x), + bias, relu. `x` is
// the group's first input plane (bf16). Work items are (pixel block, range of 32-channel tiles);
// a thread gathers a block's columns once for all the ranges it runs on that block.
inline void amx_conv(const ConvGeom& g, const AmxConvWeights& w, const std::uint16_t* x, void* y, DType ydt, const float* bias, bool relu,
                     std::byte* scratch) {
  const std::int64_t P = g.pixels(), blocks = (P + CONV_PX - 1) / CONV_PX, mgroups = w.Mp / 32, Kp = w.Kp;
  const std::int64_t parts = conv_parts(blocks, mgroups, max_threads());
  parallel_for_t(blocks * parts, 1, [&](int tid, std::int64_t i0, std::int64_t i1) {
    std::byte* mine = thread_scratch(scratch, tid, amx_conv_thread_bytes(Kp));
    auto* tile = reinterpret_cast<std::uint16_t*>(mine);
    auto* ct = reinterpret_cast<float*>(mine + Kp * CONV_PX * 2);
    TileConfig cfg;
    _tile_loadconfig(&cfg);
    visit_float_storage(ydt, [&](auto ctag) {
      using SC = decltype(ctag);
      auto* C = static_cast<typename SC::T*>(y);
      std::int64_t have = -1;
      for (std::int64_t it = i0; it < i1; ++it) {
        const std::int64_t blk = it / parts, part = it % parts, n0 = blk * CONV_PX, cols = std::min(CONV_PX, P - n0);
        if (blk != have) gather_pairs(g, x, ConvBlock(g, blk), Kp / 2, tile), have = blk;
        for (std::int64_t mg = mgroups * part / parts; mg < mgroups * (part + 1) / parts; ++mg) {
          const std::int64_t m0 = mg * 32;
          amx_block_32x32(w.row(m0), Kp, tile, tile + 32, CONV_PX * 2 * 2, Kp, ct);
          for (std::int64_t r = 0; r < std::min<std::int64_t>(32, w.rows - m0); ++r)
            for (std::int64_t v = 0; v < 2; ++v)
              store_output<SC>(C + (m0 + r) * P + n0 + v * 16, fbatch::load_aligned(ct + r * 32 + v * 16), bias ? bias[m0 + r] : 0.0f, relu, cols - v * 16);
        }
      }
    });
    _tile_release();
  });
}

#endif  // NPUSIM_CPU_AMX

}  // namespace npusim::inline NPUSIM_ABI::cpu
