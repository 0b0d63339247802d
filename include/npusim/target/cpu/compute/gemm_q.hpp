// Prefill GEMM over block-quantized weights (docs/quantization.md, issue 37): Y[m, n] = sum_k
// X[m, k] W[n, k] for M rows at once, W read from its rows of q8_0 or q4_0 blocks (core/quant.hpp),
// never from a float copy. The meaning is the decode GEMV's (gemv_q.hpp): every row of X is
// quantized per block of 32 by the same quantize_blocks, and
//   Y[m, n] = sum_b dw[n, b] * dx[m, b] * sum_j cw[n, b, j] * qx[m, b, j]
// with the float sum over blocks taken in block order, one fused multiply-add per block:
//   acc = fma(float(int sum), dw * dx, acc)
// The vector path and the portable one below compute exactly that, so they agree bit for bit.
//
// AVX-512 VNNI: 16 rows of W at a time. For each group of 16 rows the kernel first repacks their
// blocks into a panel (K / 32 blocks of 512 bytes of codes and 16 f32 scales: 161 KiB for K = 8960,
// within one core's L2) in which each 512-bit register holds four consecutive codes of all 16
// rows. A block is then 8 vpdpbusd (the weights' codes the unsigned operand, four activation codes
// broadcast), its int32 lanes are the block's sums for 16 outputs, and one vcvtdq2ps, vmulps and
// vfmadd add them into f32 accumulators: no horizontal sums. MR = 8 rows of X share the panel's
// registers. The codes are unsigned: q8_0's + 128, q4_0's 0..15 as stored; the offset comes off as
// -offset * sum qx, the value the block's int32 sums start from. The repacking costs about one
// byte move per weight per call, against M multiply-adds per weight (M = 128: < 5%).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/target/cpu/compute/gemv_q.hpp"

namespace npusim::inline NPUSIM_ABI::cpu::qgemm {

using quant::BlockFormat;
using quant::block_values;

// Output columns (rows of W) a panel holds, and rows of X a tile takes at a time.
inline constexpr std::int64_t NR = 16;
inline constexpr int MR = 8;

inline constexpr std::int32_t code_offset(BlockFormat f) { return f == BlockFormat::q8_0 ? 128 : 8; }

// M rows of X quantized for weights of format f, in memory the caller owns (a kernel's share of
// the target's scratch): QRows::bytes(m, k) bytes, 4-byte aligned.
struct QRows {
  BlockFormat format = BlockFormat::q8_0;
  std::int64_t m = 0, k = 0, blocks = 0;
  std::int8_t* q = nullptr;         // m * blocks * 32 codes, row by row (zero-padded)
  float* d = nullptr;               // m * blocks scales
  std::int32_t* start = nullptr;    // m * blocks: -offset * the block's sum of codes

  static std::size_t bytes(std::int64_t m, std::int64_t k) {
    const auto cells = static_cast<std::size_t>(m * quant::blocks_per_row(k));
    return cells * (block_values + sizeof(float) + sizeof(std::int32_t));
  }
  static QRows in(BlockFormat f, std::int64_t m, std::int64_t k, std::byte* mem) {
    QRows a;
    a.format = f;
    a.m = m;
    a.k = k;
    a.blocks = quant::blocks_per_row(k);
    const auto cells = static_cast<std::size_t>(m * a.blocks);
    a.q = reinterpret_cast<std::int8_t*>(mem);
    a.d = reinterpret_cast<float*>(mem + cells * block_values);
    a.start = reinterpret_cast<std::int32_t*>(mem + cells * (block_values + sizeof(float)));
    return a;
  }
};

// Quantizes rows [m0, m1) of X: load(m, dst) writes row m's k values as f32 into dst.
template <class Load>
void quantize_rows(const QRows& a, std::int64_t m0, std::int64_t m1, Load&& load) {
  std::vector<float> row(static_cast<std::size_t>(a.k));
  const std::int32_t off = code_offset(a.format);
  for (std::int64_t m = m0; m < m1; ++m) {
    load(m, row.data());
    const auto cell = static_cast<std::size_t>(m * a.blocks);
    std::int8_t* q = a.q + cell * block_values;
    std::int32_t* start = a.start + cell;
    qgemv::quantize_blocks(row.data(), a.k, q, a.d + cell, start);
    for (std::int64_t b = 0; b < a.blocks; ++b) start[b] *= -off;
  }
}

// The panel of rows [n0, n0 + 16) of W (rows past n: zero codes and scales).
struct Panel {
  std::vector<std::uint8_t> codes;  // blocks * 512: [block][4-code group j][row][4 codes]
  std::vector<float> scales;        // blocks * 16: [block][row]
};

namespace detail {
// One block of the panel, portably (also every panel with fewer than 16 rows).
inline void pack_block_portable(BlockFormat f, const std::byte* w, std::size_t rb, std::int64_t rows, std::int64_t b, std::uint8_t* dst, float* scales) {
  const std::size_t bb = quant::block_bytes(f);
  alignas(64) std::uint8_t codes[NR][block_values] = {};
  for (std::int64_t r = 0; r < NR; ++r) {
    scales[r] = 0.0f;
    if (r >= rows) continue;
    const std::byte* blk = w + static_cast<std::size_t>(r) * rb + static_cast<std::size_t>(b) * bb;
    scales[r] = quant::block_scale(blk);
    std::uint8_t c[block_values];
    std::memcpy(c, blk + 2, bb - 2);
    if (f == BlockFormat::q8_0) {
      for (std::int64_t j = 0; j < block_values; ++j) codes[r][j] = static_cast<std::uint8_t>(c[j] ^ 0x80u);
    } else {
      for (std::int64_t j = 0; j < block_values / 2; ++j) codes[r][j] = c[j] & 15u, codes[r][j + block_values / 2] = static_cast<std::uint8_t>(c[j] >> 4);
    }
  }
  for (int j = 0; j < 8; ++j)
    for (std::int64_t r = 0; r < NR; ++r) std::memcpy(dst + j * 64 + r * 4, &codes[r][4 * j], 4);
}

#if defined(NPUSIM_CPU_VNNI)
// The 16 x 8 transpose of 4-code groups as three rounds of vpermt2d. Each register's lanes are
// labelled (row, group); a round's output takes its labels from two inputs, and the index vectors
// are found by looking the labels up (computed once). Round 1's inputs hold two rows each, laid out
// as the format's loads leave them.
struct Transpose {
  std::int32_t round[3][8][16];  // [round][output register][lane]
  int from[3][8][2];             // the two input registers of each output

  explicit Transpose(BlockFormat f) {
    using Lab = std::pair<int, int>;  // (row, group)
    Lab in[8][16];
    for (int k = 0; k < 8; ++k)
      for (int l = 0; l < 16; ++l) {
        if (f == BlockFormat::q8_0) in[k][l] = {2 * k + l / 8, l % 8};  // [row 2k: 8 groups, row 2k + 1: 8 groups]
        else in[k][l] = {2 * k + (l / 4) % 2, (l % 4) + 4 * (l / 8)};   // [2k low, 2k+1 low, 2k high, 2k+1 high]
      }
    // Round r's output o covers rows and groups; lanes ordered by (group, row).
    auto cover = [](int r, int o, Lab* lanes) {
      const int rows = 4 << r, groups = 16 / rows;  // 4 x 4, 8 x 2, 16 x 1
      const int row0 = (o % (16 / rows)) * rows, g0 = (o / (16 / rows)) * groups;
      int l = 0;
      for (int g = g0; g < g0 + groups; ++g)
        for (int row = row0; row < row0 + rows; ++row) lanes[l++] = {row, g};
    };
    for (int r = 0; r < 3; ++r) {
      Lab out[8][16];
      for (int o = 0; o < 8; ++o) {
        cover(r, o, out[o]);
        // The inputs: the two registers of the previous round whose rows make this output's rows
        // and whose groups include its groups.
        int n = 0;
        for (int k = 0; k < 8 && n < 2; ++k) {
          bool has = false;
          for (int l = 0; l < 16 && !has; ++l)
            for (int m = 0; m < 16 && !has; ++m) has = in[k][m] == out[o][l];
          if (has) from[r][o][n++] = k;
        }
        for (int l = 0; l < 16; ++l) {
          round[r][o][l] = -1;
          for (int side = 0; side < 2; ++side)
            for (int m = 0; m < 16; ++m)
              if (in[from[r][o][side]][m] == out[o][l]) round[r][o][l] = side * 16 + m;
        }
      }
      for (int o = 0; o < 8; ++o)
        for (int l = 0; l < 16; ++l) in[o][l] = out[o][l];
    }
  }
};

inline void pack_block_vnni(BlockFormat f, const Transpose& t, const std::byte* w, std::size_t rb, std::int64_t b, std::uint8_t* dst, float* scales) {
  const std::size_t bb = quant::block_bytes(f);
  const std::byte* base = w + static_cast<std::size_t>(b) * bb;
  const __m512i rowoff = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(rb)));
  // The scales: 16 words gathered at a row's stride (the two bytes after each are the block's own).
  const __m512i words = _mm512_i32gather_epi32(rowoff, base, 1);
  _mm512_storeu_ps(scales, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words)));
  __m512i z[8];
  for (int k = 0; k < 8; ++k) {
    const std::byte* r0 = base + static_cast<std::size_t>(2 * k) * rb + 2;
    const std::byte* r1 = r0 + rb;
    if (f == BlockFormat::q8_0) {
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0))),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)), 1);
      z[k] = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
    } else {
      const __m256i q = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1)), _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));
      z[k] = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1), _mm512_set1_epi8(0x0f));
    }
  }
  for (int r = 0; r < 3; ++r) {
    __m512i o[8];
    for (int k = 0; k < 8; ++k)
      o[k] = _mm512_permutex2var_epi32(z[t.from[r][k][0]], _mm512_loadu_si512(t.round[r][k]), z[t.from[r][k][1]]);
    for (int k = 0; k < 8; ++k) z[k] = o[k];
  }
  // Round 3's output o holds group o for rows 0..15.
  for (int j = 0; j < 8; ++j) _mm512_storeu_si512(dst + j * 64, z[j]);
}
#endif
}  // namespace detail

inline void pack_panel(BlockFormat f, const std::byte* w, std::int64_t n, std::int64_t k, std::int64_t n0, Panel& p, bool portable = false) {
  const std::int64_t blocks = quant::blocks_per_row(k), rows = std::min(NR, n - n0);
  const std::size_t rb = quant::row_bytes(f, k);
  p.codes.resize(static_cast<std::size_t>(blocks) * 512);
  p.scales.resize(static_cast<std::size_t>(blocks) * NR);
  const std::byte* first = w + static_cast<std::size_t>(n0) * rb;
#if defined(NPUSIM_CPU_VNNI)
  if (!portable && rows == NR && rb * NR < (std::size_t{1} << 31)) {
    static const detail::Transpose t8(BlockFormat::q8_0), t4(BlockFormat::q4_0);
    const detail::Transpose& t = f == BlockFormat::q8_0 ? t8 : t4;
    for (std::int64_t b = 0; b < blocks; ++b)
      detail::pack_block_vnni(f, t, first, rb, b, p.codes.data() + static_cast<std::size_t>(b) * 512, p.scales.data() + b * NR);
    return;
  }
#endif
  (void)portable;
  for (std::int64_t b = 0; b < blocks; ++b)
    detail::pack_block_portable(f, first, rb, rows, b, p.codes.data() + static_cast<std::size_t>(b) * 512, p.scales.data() + b * NR);
}

namespace detail {
// Rows [m0, m0 + R) of X against a panel: out[i * 16 + c] for row m0 + i, the panel's column c.
inline void tile_portable(const QRows& a, std::int64_t m0, int rows, const Panel& p, float* out) {
  for (int i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < NR; ++c) {
      const auto cell = static_cast<std::size_t>((m0 + i) * a.blocks);
      float acc = 0.0f;
      for (std::int64_t b = 0; b < a.blocks; ++b) {
        std::int32_t s = a.start[cell + static_cast<std::size_t>(b)];
        const std::int8_t* xq = a.q + (cell + static_cast<std::size_t>(b)) * block_values;
        const std::uint8_t* wc = p.codes.data() + static_cast<std::size_t>(b) * 512 + static_cast<std::size_t>(c) * 4;
        for (int j = 0; j < 8; ++j)
          for (int t = 0; t < 4; ++t) s += std::int32_t{wc[j * 64 + t]} * std::int32_t{xq[4 * j + t]};
        const float scale = p.scales[static_cast<std::size_t>(b * NR + c)] * a.d[cell + static_cast<std::size_t>(b)];
        acc = std::fma(static_cast<float>(s), scale, acc);
      }
      out[i * NR + c] = acc;
    }
}

#if defined(NPUSIM_CPU_VNNI)
template <int R>
inline void tile_vnni(const QRows& a, std::int64_t m0, const Panel& p, float* out) {
  const std::int8_t* xq[R];
  const float* dx[R];
  const std::int32_t* st[R];
  __m512 acc[R];
  for (int i = 0; i < R; ++i) {
    const auto cell = static_cast<std::size_t>((m0 + i) * a.blocks);
    xq[i] = a.q + cell * block_values;
    dx[i] = a.d + cell;
    st[i] = a.start + cell;
    acc[i] = _mm512_setzero_ps();
  }
  const std::uint8_t* codes = p.codes.data();
  const float* scales = p.scales.data();
  for (std::int64_t b = 0; b < a.blocks; ++b, codes += 512, scales += NR) {
    __m512i w[8];
    for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(codes + j * 64);
    const __m512 dw = _mm512_loadu_ps(scales);
    for (int i = 0; i < R; ++i) {
      const std::int8_t* x = xq[i] + b * block_values;
      // Two chains of four (the sums' latency, not their count, would bound one chain of eight).
      __m512i s = _mm512_set1_epi32(st[i][b]), s2 = _mm512_setzero_si512();
      for (int j = 0; j < 8; j += 2) {
        std::int32_t four[2];
        std::memcpy(four, x + 4 * j, 8);
        s = _mm512_dpbusd_epi32(s, w[j], _mm512_set1_epi32(four[0]));
        s2 = _mm512_dpbusd_epi32(s2, w[j + 1], _mm512_set1_epi32(four[1]));
      }
      s = _mm512_add_epi32(s, s2);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(dx[i][b])), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out + i * NR, acc[i]);
}
#endif

inline void tile(const QRows& a, std::int64_t m0, int rows, const Panel& p, float* out) {
#if defined(NPUSIM_CPU_VNNI)
  switch (rows) {
    case 8: return tile_vnni<8>(a, m0, p, out);
    case 7: return tile_vnni<7>(a, m0, p, out);
    case 6: return tile_vnni<6>(a, m0, p, out);
    case 5: return tile_vnni<5>(a, m0, p, out);
    case 4: return tile_vnni<4>(a, m0, p, out);
    case 3: return tile_vnni<3>(a, m0, p, out);
    case 2: return tile_vnni<2>(a, m0, p, out);
    case 1: return tile_vnni<1>(a, m0, p, out);
    default: break;
  }
#endif
  tile_portable(a, m0, rows, p, out);
}
}  // namespace detail

// Panels [g0, g1) of W (n rows of k values, packed rows of format a.format): for each panel and
// each tile of up to MR rows of X, sink(m0, rows, n0, cols, out, 16) receives the f32 results,
// out[i * 16 + c] = Y[m0 + i, n0 + c] for c < cols. `portable` forces the portable sums (tests).
template <class Sink>
void gemm(const std::byte* w, std::int64_t n, const QRows& a, std::int64_t g0, std::int64_t g1, Sink&& sink, bool portable = false) {
  Panel p;
  alignas(64) float out[MR * NR];
  for (std::int64_t g = g0; g < g1; ++g) {
    const std::int64_t n0 = g * NR, cols = std::min(NR, n - n0);
    pack_panel(a.format, w, n, a.k, n0, p, portable);
    for (std::int64_t m0 = 0; m0 < a.m; m0 += MR) {
      const int rows = static_cast<int>(std::min<std::int64_t>(MR, a.m - m0));
      if (portable) detail::tile_portable(a, m0, rows, p, out);
      else detail::tile(a, m0, rows, p, out);
      sink(m0, rows, n0, cols, static_cast<const float*>(out), NR);
    }
  }
}
inline constexpr std::int64_t panels(std::int64_t n) { return (n + NR - 1) / NR; }

}  // namespace npusim::inline NPUSIM_ABI::cpu::qgemm
