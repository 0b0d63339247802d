// bf16 3x3 convolutions (stride 1, padding 1, even output sides, at most 256 input channels) by
// Winograd F(2x2, 3x3) on AVX-512 BF16 dot products: each 2x2 output tile is A^T [U . V] A, with
// V = B^T d B of its 4x4 input patch d per input channel and U = G g G^T of each 3x3 filter g, so
// 16 products per tile and channel pair replace 36 (2.25x fewer multiplies).
//
// Per block of at most 32 tiles (whole tile rows where a row has at most 32 tiles: ResNet's 56x56
// image = 28 tiles a row, one row a block; 28x28 two rows; 14x14 four) a thread transforms the
// block's patches into its own tile [16][C/2 pairs][32 tiles] of bf16 pairs (f32 arithmetic, then
// rounded to nearest even), then for each strip of 12 output channels runs the 16 products
// (outer_product, 12 channels x 32 tiles, f32 accumulation) into [16][12][32] f32, transforms
// them back to 2x2 outputs in f32 and stores them with bias, residual and relu as conv_blocks does.
// U is computed once at load from the f32 (or bf16) weights and rounded to bf16.
//
// Rounding V and U to bf16 adds error: on random data a layer's output is about 1.7x further from
// the exact result than the direct bf16 convolution's (which rounds only x and g); ResNet-18's bf16
// logits 0.0106 -> 0.0131 rel L2 (docs/benchmarks.md). NPUSIM_CPU_SKIP=conv_winograd turns it off
// (candidates.hpp).
#pragma once

#include <cstdlib>
#include <vector>

#include "npusim/target/cpu/compute/conv_dpbf16.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

#if defined(NPUSIM_CPU_CONV_DPBF16)
#define NPUSIM_CPU_CONV_WINOGRAD 1

inline constexpr std::int64_t WINO_MAX_C = 256;  // the block's tile (16 x C x 64 bytes) stays in L2

// Whether conv_winograd takes `g`: 3x3, stride 1, padding 1, no dilation, one group, even output
// sides equal to the input's, C <= 256, and more pixels than conv_small takes.
inline bool winograd_fits(const ConvGeom& g) {
  return g.G == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.ph == 1 && g.pw == 1 && g.dh == 1 && g.dw == 1 && g.OH == g.H &&
         g.OW == g.W && g.OH % 2 == 0 && g.OW % 2 == 0 && g.C <= WINO_MAX_C && !conv_small_image(g.pixels());
}

// U = G g G^T of every (output channel, input channel): for each of the 16 positions xi, the
// [rows][C] matrix of U[xi] as strips of bf16 pairs (pack_pair_strips, 12 rows a strip).
struct WinogradWeights {
  std::int64_t rows = 0, KP = 0, strips = 0;
  std::vector<PairStrips> u;  // [16]
  const std::uint32_t* strip(std::int64_t xi, std::int64_t s) const { return u[static_cast<std::size_t>(xi)].strip(s); }
};

inline WinogradWeights pack_winograd_weights(const void* w, DType dtype, std::int64_t rows, std::int64_t C) {
  std::vector<float> g(static_cast<std::size_t>(rows * C * 9)), u(static_cast<std::size_t>(16 * rows * C));
  load_row(dtype, w, g.data(), rows * C * 9);
  for (std::int64_t rc = 0; rc < rows * C; ++rc) {
    const float* k = g.data() + rc * 9;
    // G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]: t = G k (4x3), then U = t G^T (4x4) into u[xi][rc].
    float t[4][3];
    for (int j = 0; j < 3; ++j) {
      t[0][j] = k[j];
      t[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
      t[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
      t[3][j] = k[6 + j];
    }
    for (int i = 0; i < 4; ++i) {
      float* ui = u.data() + (4 * i) * rows * C + rc;
      ui[0] = t[i][0];
      ui[rows * C] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
      ui[2 * rows * C] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
      ui[3 * rows * C] = t[i][2];
    }
  }
  WinogradWeights p;
  for (std::int64_t xi = 0; xi < 16; ++xi) p.u.push_back(pack_pair_strips(u.data() + xi * rows * C, DType::f32, rows, C));
  p.rows = rows, p.KP = p.u[0].KP, p.strips = p.u[0].strips;
  return p;
}

// How the tiles (TH x TW of them, 2x2 outputs each) go into blocks of at most 32: `rpb` whole tile
// rows of `cw` tiles each (lane q cw + l is tile (ty0 + q, c0 + l)), or where a row has more than
// 32 tiles, `segs` about equal segments of one row.
struct WinoTiles {
  std::int64_t TH, TW, cw, rpb, segs, blocks;
  explicit WinoTiles(const ConvGeom& g) : TH(g.OH / 2), TW(g.OW / 2) {
    segs = (TW + CONV_PX - 1) / CONV_PX, cw = (TW + segs - 1) / segs, rpb = CONV_PX / cw;
    blocks = (TH + rpb - 1) / rpb * segs;
  }
  struct Block {
    std::int64_t ty0, nq, c0, width;  // first tile row, tile rows, first tile column, tiles a row
  };
  Block block(std::int64_t b) const {
    const std::int64_t ty0 = b / segs * rpb, c0 = b % segs * cw;
    return {ty0, std::min(rpb, TH - ty0), c0, std::min(cw, TW - c0)};
  }
  // Lanes in use: the last is lane (nq - 1) cw + width - 1.
  std::int64_t used(const Block& k) const { return (k.nq - 1) * cw + k.width; }
};

inline std::size_t winograd_thread_bytes(std::int64_t KP) {
  // The block's tile [16][KP][32] u32, the products [16][12][32] f32, two output rows [2][64] f32,
  // the stage [16][16] bf16, and 64 bytes of slack for the alignment.
  return static_cast<std::size_t>(16 * KP * CONV_PX + 16 * CONV_MR * CONV_PX + 2 * 2 * CONV_PX) * 4 + static_cast<std::size_t>(16 * 16) * 2 + 64;
}
inline std::size_t winograd_scratch_bytes(std::int64_t KP) { return static_cast<std::size_t>(max_threads()) * winograd_thread_bytes(KP); }

namespace wino_detail {

// The block's transformed patches of every input channel into vt ([16][KP][32] u32, bf16 pairs:
// channel 2 cp in the low half, 2 cp + 1 in the high one), V vectors of 16 tiles (lanes past the
// block's tiles hold values no output reads).
// Tile (row ty, column tx) reads input rows 2 ty - 1 .. 2 ty + 2 and columns 2 tx - 1 .. 2 tx + 2.
// One 32-bit lane of an input row holds the bf16 pair of columns (2 tx, 2 tx + 1): shifted left by
// 16 bits it is column 2 tx as f32 (E), masked to its high half column 2 tx + 1 (O); the same from
// the pairs one tile right and left give columns 2 tx + 2 and 2 tx - 1. So a row's d B is
// (O- - O, E + O, O - E, E - E+) from three masked loads, and B^T (d B) combines four rows.
// `stage` holds one channel's [16][16] bf16 until its partner is transformed.
inline void input_tiles(const ConvGeom& g, const WinoTiles& wt, const WinoTiles::Block& k, int V, const std::uint16_t* x, std::int64_t KP,
                        std::uint32_t* vt, std::uint16_t* stage) {
  alignas(64) std::uint16_t pi[32];  // lane 2 l <- a[l], 2 l + 1 <- b[l] of (a, b)
  for (int q = 0; q < 16; ++q) pi[2 * q] = static_cast<std::uint16_t>(q), pi[2 * q + 1] = static_cast<std::uint16_t>(16 + q);
  const __m512i pair_idx = _mm512_load_si512(pi), high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  // Per vector h and tile row q of the block: the byte offset of lane 0's pair in the tile row's
  // first input row (lane l of vector h is tile c0 + 16 h + l - q cw), and the lanes of q whose
  // pair, the one right of it and the one left of it lie in the row.
  struct Seg {
    std::int64_t q, off;
    __mmask16 at, right, left;
  };
  Seg segs[2][CONV_PX];
  int nseg[2] = {0, 0};
  for (int h = 0; h < V; ++h)
    for (std::int64_t q = 0; q < k.nq; ++q) {
      __mmask16 at = 0, right = 0, left = 0;
      for (int l = 0; l < 16; ++l) {
        const std::int64_t lane = 16 * h + l, tx = k.c0 + lane - q * wt.cw;
        if (lane < q * wt.cw || lane >= q * wt.cw + k.width) continue;
        at |= static_cast<__mmask16>(1u << l);
        if (tx + 1 < wt.TW) right |= static_cast<__mmask16>(1u << l);
        if (tx > 0) left |= static_cast<__mmask16>(1u << l);
      }
      if (at) segs[h][nseg[h]++] = {q, 2 * (2 * (k.ty0 + q) - 1) * g.W + 4 * (k.c0 + 16 * h - q * wt.cw), at, right, left};
    }
  const std::int64_t plane = g.H * g.W;
  // d = B^T (d B) of channel c, vector h: 16 positions of 16 tiles, in f32.
  auto transform = [&](std::int64_t c, int h, __m512 (&d)[16]) {
    const auto pl = reinterpret_cast<std::uintptr_t>(x + c * plane);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      __m512i p = _mm512_setzero_si512(), pr = p, pleft = p;
      for (int sg = 0; sg < nseg[h]; ++sg) {
        const Seg& s = segs[h][sg];
        if (const std::int64_t row = 2 * (k.ty0 + s.q) - 1 + i; row < 0 || row >= g.H) continue;
        // Masked-off lanes are not read; lane 0's address may lie outside the plane.
        const std::uintptr_t at = pl + static_cast<std::uintptr_t>(s.off + 2 * i * g.W);
        p = _mm512_mask_loadu_epi32(p, s.at, reinterpret_cast<const void*>(at));
        pr = _mm512_mask_loadu_epi32(pr, s.right, reinterpret_cast<const void*>(at + 4));
        pleft = _mm512_mask_loadu_epi32(pleft, s.left, reinterpret_cast<const void*>(at - 4));
      }
      const __m512 e = _mm512_castsi512_ps(_mm512_slli_epi32(p, 16)), o = _mm512_castsi512_ps(_mm512_and_si512(p, high));
      const __m512 er = _mm512_castsi512_ps(_mm512_slli_epi32(pr, 16)), ol = _mm512_castsi512_ps(_mm512_and_si512(pleft, high));
      d[4 * i] = _mm512_sub_ps(ol, o), d[4 * i + 1] = _mm512_add_ps(e, o), d[4 * i + 2] = _mm512_sub_ps(o, e), d[4 * i + 3] = _mm512_sub_ps(e, er);
    }
    // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] over the rows.
    for (int j = 0; j < 4; ++j) {
      const __m512 d0 = d[j], d1 = d[4 + j], d2 = d[8 + j], d3 = d[12 + j];
      d[j] = _mm512_sub_ps(d0, d2), d[4 + j] = _mm512_add_ps(d1, d2), d[8 + j] = _mm512_sub_ps(d2, d1), d[12 + j] = _mm512_sub_ps(d1, d3);
    }
  };
  // Channel 2 cp rounded to bf16 into `stage`, then paired with channel 2 cp + 1 (zero past C).
  for (std::int64_t cp = 0; cp < KP; ++cp)
    for (int h = 0; h < V; ++h) {
      __m512 d[16];
      transform(2 * cp, h, d);
      for (int p = 0; p < 16; ++p) _mm256_store_si256(reinterpret_cast<__m256i*>(stage + 16 * p), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(d[p])));
      const bool odd = 2 * cp + 1 < g.C;
      if (odd) transform(2 * cp + 1, h, d);
      for (int p = 0; p < 16; ++p) {
        const __m256i b = odd ? reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(d[p])) : _mm256_setzero_si256();
        const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(stage + 16 * p))), b, 1);
        _mm512_store_si512(vt + (p * KP + cp) * CONV_PX + 16 * h, _mm512_permutexvar_epi16(pair_idx, ab));
      }
    }
}

// Y = A^T m A for 16 tiles, A^T = [1 1 1 0; 0 1 -1 -1]: m[4 i + j] in, y[2 i + j] out.
inline void output_transform(const __m512 (&m)[16], __m512 (&y)[4]) {
  __m512 t[2][4];
  for (int j = 0; j < 4; ++j) {
    t[0][j] = _mm512_add_ps(_mm512_add_ps(m[j], m[4 + j]), m[8 + j]);
    t[1][j] = _mm512_sub_ps(_mm512_sub_ps(m[4 + j], m[8 + j]), m[12 + j]);
  }
  for (int i = 0; i < 2; ++i) {
    y[2 * i] = _mm512_add_ps(_mm512_add_ps(t[i][0], t[i][1]), t[i][2]);
    y[2 * i + 1] = _mm512_sub_ps(_mm512_sub_ps(t[i][1], t[i][2]), t[i][3]);
  }
}

}  // namespace wino_detail

// One image: C[rows][P] (NCHW) = conv3x3(x) by F(2x2, 3x3), + bias, [+ residual, laid out as C in
// its storage], relu. Work items are (block, strip range), shared out as conv_blocks does.
inline void conv_winograd(const ConvGeom& g, const WinogradWeights& w, const std::uint16_t* x, void* y, DType ydt, const float* bias, bool relu,
                          std::byte* scratch, const void* residual = nullptr) {
  const WinoTiles wt(g);
  const std::int64_t KP = w.KP, P = g.pixels(), threads = max_threads();
  const std::int64_t parts = item_parts(wt.blocks, w.strips, threads);
  auto cost = [&](std::int64_t it) {
    return static_cast<double>(part_rows(w.rows, w.strips, it % parts, parts) * (wt.used(wt.block(it / parts)) <= 16 ? 1 : 2));
  };
  alignas(64) std::int32_t il[16], ih[16];
  for (int q = 0; q < 8; ++q) il[2 * q] = q, il[2 * q + 1] = 16 + q, ih[2 * q] = 8 + q, ih[2 * q + 1] = 24 + q;
  const __m512i lo_idx = _mm512_load_si512(il), hi_idx = _mm512_load_si512(ih);
  parallel_items(wt.blocks * parts, cost, [&](int tid, auto& claim) {
    auto* vt = reinterpret_cast<std::uint32_t*>(thread_scratch(scratch, tid, winograd_thread_bytes(KP)));
    float* m = reinterpret_cast<float*>(vt + 16 * KP * CONV_PX);  // [16][12][32]
    float* rb = m + 16 * CONV_MR * CONV_PX;                         // [2 output rows][64]
    auto* stage = reinterpret_cast<std::uint16_t*>(rb + 2 * 2 * CONV_PX);
    visit_output(ydt, y, residual, [&](auto ctag, auto* C, const auto* R) {
      using SC = decltype(ctag);
      std::int64_t have = -1;
      for (std::int64_t it; claim(it);) {
        const std::int64_t blk = it / parts, part = it % parts;
        const WinoTiles::Block k = wt.block(blk);
        const int V = wt.used(k) <= 16 ? 1 : 2;
        if (blk != have) wino_detail::input_tiles(g, wt, k, V, x, KP, vt, stage), have = blk;
        for (std::int64_t s = w.strips * part / parts; s < w.strips * (part + 1) / parts; ++s) {
          const std::int64_t live = std::min(CONV_MR, w.rows - s * CONV_MR);
          for (std::int64_t xi = 0; xi < 16; ++xi) {
            __m512 acc[CONV_MR][2];
            for (auto& a : acc) a[0] = a[1] = _mm512_setzero_ps();
            const std::uint32_t* ws = w.strip(xi, s);
            const std::uint32_t* ts = vt + xi * KP * CONV_PX;
            if (V == 1) strip_product<ConvDpbf16Step, 1>(w.rows, s, ws, ts, KP, acc);
            else strip_product<ConvDpbf16Step, 2>(w.rows, s, ws, ts, KP, acc);
            for (std::int64_t r = 0; r < live; ++r)
              for (int v = 0; v < V; ++v) _mm512_store_ps(m + (xi * CONV_MR + r) * CONV_PX + 16 * v, acc[r][v]);
          }
          // Back to 2x2 outputs, lane by lane in pixel order (tile l's columns 2 l, 2 l + 1) in rb,
          // then stored a tile row at a time.
          for (std::int64_t r = 0; r < live; ++r) {
            const std::int64_t oc = s * CONV_MR + r;
            for (int v = 0; v < V; ++v) {
              __m512 mv[16], yv[4];
              for (int p = 0; p < 16; ++p) mv[p] = _mm512_load_ps(m + (p * CONV_MR + r) * CONV_PX + 16 * v);
              wino_detail::output_transform(mv, yv);
              for (int i = 0; i < 2; ++i) {
                _mm512_store_ps(rb + i * 2 * CONV_PX + 32 * v, _mm512_permutex2var_ps(yv[2 * i], lo_idx, yv[2 * i + 1]));
                _mm512_store_ps(rb + i * 2 * CONV_PX + 32 * v + 16, _mm512_permutex2var_ps(yv[2 * i], hi_idx, yv[2 * i + 1]));
              }
            }
            for (std::int64_t q = 0; q < k.nq; ++q)
              for (int i = 0; i < 2; ++i) {
                const std::int64_t at = oc * P + (2 * (k.ty0 + q) + i) * g.OW + 2 * k.c0, n = 2 * k.width;
                const float* src = rb + i * 2 * CONV_PX + 2 * q * wt.cw;
                for (std::int64_t o = 0; o < n; o += 16)
                  store_output<SC>(C + at + o, fbatch::load_unaligned(src + o), bias ? bias[oc] : 0.0f, relu, std::min<std::int64_t>(16, n - o),
                                   R ? R + at + o : nullptr);
              }
          }
        }
      }
    });
  });
}

#endif  // NPUSIM_CPU_CONV_DPBF16

}  // namespace npusim::inline NPUSIM_ABI::cpu
