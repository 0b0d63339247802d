// f32 convolution on channel-blocked activations (AVX-512 builds).
//
// A blocked activation stores an [N, C, H, W] tensor as [N][C/16][H][W][16]: the 16 channels of a
// block at one pixel are one vector. The CPU target keeps the activations between its f32
// convolutions in that layout (layout.hpp decides which tensors), so a convolution reads its
// input with no im2col gather: per group of up to 7 output pixels of one row and 64 output
// channels it keeps 7 x 4 = 28 accumulators, and per input channel broadcasts the pixels' values
// (one scalar load each) against 4 weight vectors. K runs in chunks of (input block, kernel
// position) pairs of about 576 rows (four 3x3 blocks, 36 1x1 blocks); a chunk's 144 KB of
// weights stay in L2 while the thread's pixel groups reuse them, and partial sums wait in thread
// scratch between chunks (in ResNet, chunks of 576 rows ran 2-4% faster than L1-sized ones of
// 144, and than unchunked K).
// Each group also fetches its share of the next chunk's weights into L2, so weights that come from
// DRAM (the 7 x 7 stage's 9.4 MB per layer) stream while the current chunk computes.
//
// Padding: a blocked input is read in place. Per (pixel group, kernel position) a bit per pixel
// says whether its input lies inside the image. Work on the padding is skipped: a kernel position
// outside for the whole group (top and bottom rows), or for its first or last pixel (left and
// right columns), as the groups do not cross rows; for a 3x3 pad-1 layer that is 9% of the
// multiply-adds at 14 x 14 and 18% at 7 x 7. Other patterns (wider borders) read a block of
// zeros for the pixels outside. An NCHW input (the stem's image) is copied into a zero-bordered
// blocked buffer instead; with fewer than 16 channels it becomes one block of C channels. The
// output is written blocked, or to NCHW by scatter where the consumer needs NCHW.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "npusim/target/cpu/compute/conv_block.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

inline constexpr std::int64_t CBLK = 16;  // channels per block of a blocked activation

// Whether an [N, C, H, W] f32 tensor can be held blocked: whole blocks, and more than one pixel
// (a 1 x 1 image is the same bytes either way).
inline bool blockable(const Shape& s) { return s.size() == 4 && s[1] % CBLK == 0 && s[2] * s[3] > 1; }

// Element (n, c, h, w) of a blocked [N, C, H, W] tensor.
inline std::int64_t blocked_index(const Shape& s, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return (((n * (s[1] / CBLK) + c / CBLK) * s[2] + h) * s[3] + w) * CBLK + c % CBLK;
}

#if defined(NPUSIM_CPU_AVX512)

inline constexpr int BCONV_NB = 4;                // output channel blocks per item (64 channels)
inline constexpr int BCONV_NP = 7;                // most output pixels per group (7 x 4 accumulators + 4 weight vectors: all 32 registers)
inline constexpr std::int64_t BCONV_ROWS = 576;   // K rows per chunk (whole kernel positions: four 3x3 blocks)
inline constexpr std::int64_t BCONV_OC = BCONV_NB * CBLK;

// A bound blocked convolution: geometry, packed weights and bias, the pixel and tap offsets into
// the blocked input it reads (in place, or the padded copy), and how work and scratch are shared out.
struct BlockedConv {
  ConvGeom g{};
  bool in_blocked = false, out_blocked = false;  // an NCHW input is copied into a padded blocked buffer
  std::int64_t cbs = 0, cbn = 0, ogs = 0, kb = 0;  // input block size, input blocks, 64-channel groups, output blocks
  // Per input block, `taps` kernel positions of `inner` rows each: cbs rows per (i, j), or, with one
  // input block and unit dilation along the rows, kw * cbs rows per kernel row i (the stem's
  // 7 x 3 inputs of a kernel row lie next to each other in the padded image).
  std::int64_t taps = 0, inner = 0;
  std::int64_t kc = 0;               // (input block, kernel position) pairs per K chunk
  std::int64_t Hp = 0, Wp = 0, xcb = 0;  // the read input: rows, columns (with the border when copied), floats per block
  AlignedBuf w;                       // [og][cb][tap][ic][4][16]
  std::vector<float> bias;            // [ogs * 64], zero past K
  std::vector<std::int64_t> pix_off;  // per output pixel: its first input element in a block
  std::vector<std::int64_t> tap_off;  // per kernel position
  // Pixel groups: group q is pixels [first[q], first[q + 1]). Groups do not cross output rows
  // (when rows have 4 or more pixels), so the pixels whose input is outside the image at a kernel
  // position are a whole group (top and bottom rows) or its first or last pixel (left and right).
  std::vector<std::int64_t> first;
  // A padded blocked input is read in place: per (pixel group, kernel position), bit p says whether
  // pixel p's input lies inside the image. Empty when nothing is outside.
  std::vector<std::uint8_t> inside;
  bool relu = false;
  int threads = 1;  // the pool's size at bind time: the work split and the scratch it was sized for

  // Weights of pair j = (input block j / taps, kernel position j % taps) for 64-channel group og.
  const float* weights(std::int64_t og, std::int64_t j) const { return w.as<float>() + (og * cbn * taps + j) * inner * BCONV_OC; }
  std::int64_t groups() const { return static_cast<std::int64_t>(first.size()) - 1; }
  // Items are (64-channel group, range of pixel groups): about 4 per thread. The split depends only
  // on the bind-time pool size, so a pool shrunk later (set_threads) runs the same items on fewer
  // threads within the same scratch.
  std::int64_t parts() const { return std::min(groups(), (4 * threads + ogs - 1) / ogs); }
  std::size_t input_bytes() const { return in_blocked ? 0 : static_cast<std::size_t>(cbn * xcb) * 4 + 64; }
  std::size_t thread_bytes() const {
    const std::int64_t per = (groups() + parts() - 1) / parts();
    return static_cast<std::size_t>(per * BCONV_NP * BCONV_OC) * 4 + 64;
  }
  std::size_t scratch_bytes() const { return input_bytes() + static_cast<std::size_t>(threads) * thread_bytes(); }
};

// Binds one single-group f32 conv: weights [K][C][kh][kw] in `dtype`, bias (or nullptr) as f32.
// `row_groups`: pixel groups never cross output rows, even in rows of fewer than 4 pixels (for
// kernels that compute the output row by row).
inline BlockedConv make_blocked_conv(const ConvGeom& g, const void* wt, DType dtype, const float* bias, bool relu, bool in_blocked, bool out_blocked,
                                     bool row_groups = false) {
  BlockedConv b;
  b.g = g, b.relu = relu, b.in_blocked = in_blocked, b.out_blocked = out_blocked, b.threads = max_threads();
  b.cbs = in_blocked || g.C >= CBLK ? CBLK : g.C;
  b.cbn = (g.C + b.cbs - 1) / b.cbs;
  // Blocked inputs are read in place; NCHW ones (the stem) are copied into a padded blocked buffer.
  const bool copy = !in_blocked, pad = g.ph || g.pw, rows = b.cbn == 1 && g.dw == 1 && (copy || !pad);
  b.taps = rows ? g.kh : g.kh * g.kw;
  b.inner = rows ? g.kw * b.cbs : b.cbs;
  b.kb = (g.K + CBLK - 1) / CBLK;
  b.ogs = (g.K + BCONV_OC - 1) / BCONV_OC;
  // Chunks of about BCONV_ROWS rows, evened out (a 3x3 conv of 5 input blocks, 45 pairs: 23 + 22, not 36 + 9).
  const std::int64_t pairs = b.cbn * b.taps, chunks = (pairs * b.inner + BCONV_ROWS - 1) / BCONV_ROWS;
  b.kc = (pairs + chunks - 1) / chunks;
  b.Hp = copy ? g.H + 2 * g.ph : g.H, b.Wp = copy ? g.W + 2 * g.pw : g.W;
  b.xcb = b.Hp * b.Wp * b.cbs;
  const std::int64_t C = g.C, kk = g.kh * g.kw;
  // [og][cb][i][j][ic][64], which is [og][cb][tap][inner row][64] either way.
  const std::int64_t floats = b.ogs * b.cbn * kk * b.cbs * BCONV_OC;
  b.w = AlignedBuf::make(static_cast<std::size_t>(floats) * 4);
  float* d = b.w.as<float>();
  std::vector<float> row(static_cast<std::size_t>(C * kk));
  std::fill(d, d + floats, 0.0f);
  for (std::int64_t o = 0; o < g.K; ++o) {
    load_row(dtype, static_cast<const std::byte*>(wt) + static_cast<std::size_t>(o * C * kk) * dtype_size(dtype), row.data(), C * kk);
    const std::int64_t og = o / BCONV_OC, lane = o % BCONV_OC;
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t t = 0; t < kk; ++t)
        d[(((og * b.cbn + c / b.cbs) * kk + t) * b.cbs + c % b.cbs) * BCONV_OC + lane] = row[static_cast<std::size_t>(c * kk + t)];
  }
  b.bias.assign(static_cast<std::size_t>(b.ogs * BCONV_OC), 0.0f);
  if (bias) std::copy(bias, bias + g.K, b.bias.begin());
  // Pixel groups: each output row in ceil(OW / 7) groups of even size; rows of fewer than 4 pixels
  // are grouped across rows, 7 at a time (unless row_groups).
  if (g.OW >= 4 || row_groups) {
    const std::int64_t n = (g.OW + BCONV_NP - 1) / BCONV_NP;
    for (std::int64_t oh = 0; oh < g.OH; ++oh)
      for (std::int64_t i = 0; i < n; ++i) b.first.push_back(oh * g.OW + g.OW * i / n);
  } else {
    for (std::int64_t px = 0; px < g.pixels(); px += BCONV_NP) b.first.push_back(px);
  }
  b.first.push_back(g.pixels());
  // Offsets into the read input; in place, a border pixel's may point outside (never read).
  const std::int64_t ph = copy ? 0 : g.ph, pw = copy ? 0 : g.pw;
  for (std::int64_t oh = 0; oh < g.OH; ++oh)
    for (std::int64_t ow = 0; ow < g.OW; ++ow) b.pix_off.push_back(((oh * g.sh - ph) * b.Wp + ow * g.sw - pw) * b.cbs);
  for (std::int64_t i = 0; i < g.kh; ++i)
    for (std::int64_t j = 0; j < (rows ? 1 : g.kw); ++j) b.tap_off.push_back((i * g.dh * b.Wp + j * g.dw) * b.cbs);
  if (!copy && pad) {
    b.inside.assign(static_cast<std::size_t>(b.groups() * b.taps), 0);
    for (std::int64_t q = 0; q < b.groups(); ++q)
      for (std::int64_t px = b.first[static_cast<std::size_t>(q)]; px < b.first[static_cast<std::size_t>(q + 1)]; ++px)
        for (std::int64_t i = 0; i < g.kh; ++i)
          for (std::int64_t j = 0; j < g.kw; ++j) {
            const std::int64_t ih = px / g.OW * g.sh - ph + i * g.dh, iw = px % g.OW * g.sw - pw + j * g.dw;
            if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) b.inside[static_cast<std::size_t>(q * b.taps + i * g.kw + j)] |= static_cast<std::uint8_t>(1u << (px - b.first[static_cast<std::size_t>(q)]));
          }
  }
  return b;
}

namespace bconv_detail {

// Interleaves n < 16 rows (row c at src + c * stride) into dst[w * n + c], 16 columns at a time:
// output vector k of a 16-column step takes element e from row (16k + e) % n, column (16k + e) / n
// (one masked permute per row and vector). The tables are built once per copy.
struct Interleave16 {
  std::int64_t n = 0;
  __m512i idx[CBLK];
  __mmask16 take[CBLK][CBLK] = {};  // [vector k][row c]
  explicit Interleave16(std::int64_t rows) : n(rows) {
    for (std::int64_t k = 0; k < n; ++k) {
      alignas(64) std::int32_t e16[CBLK];
      for (std::int64_t e = 0; e < CBLK; ++e) {
        e16[e] = static_cast<std::int32_t>((CBLK * k + e) / n);
        take[k][(CBLK * k + e) % n] |= static_cast<__mmask16>(1u << e);
      }
      idx[k] = _mm512_load_si512(e16);
    }
  }
  // Returns the columns done (a multiple of 16).
  std::int64_t operator()(const float* src, std::int64_t stride, std::int64_t cols, float* dst) const {
    std::int64_t w = 0;
    for (; w + CBLK <= cols; w += CBLK) {
      __m512 rows[CBLK];
      for (std::int64_t c = 0; c < n; ++c) rows[c] = _mm512_loadu_ps(src + c * stride + w);
      for (std::int64_t k = 0; k < n; ++k) {
        __m512 v = _mm512_setzero_ps();
        for (std::int64_t c = 0; c < n; ++c) v = _mm512_mask_permutexvar_ps(v, take[k][c], idx[k], rows[c]);
        _mm512_storeu_ps(dst + w * n + k * CBLK, v);
      }
    }
    return w;
  }
};

// An NCHW input into the zero-bordered blocked buffer xp [cbn][Hp][Wp][cbs].
inline void copy_input(const BlockedConv& b, const float* x, float* xp) {
  const ConvGeom& g = b.g;
  const Interleave16 interleave(b.cbs < CBLK ? b.cbs : 0);
  parallel_for(b.cbn * b.Hp, 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t cb = r / b.Hp, hp = r % b.Hp, ih = hp - g.ph;
      float* dst = xp + r * b.Wp * b.cbs;
      if (ih < 0 || ih >= g.H) {
        std::fill(dst, dst + b.Wp * b.cbs, 0.0f);
        continue;
      }
      std::fill(dst, dst + g.pw * b.cbs, 0.0f);
      std::fill(dst + (g.pw + g.W) * b.cbs, dst + b.Wp * b.cbs, 0.0f);
      float* in = dst + g.pw * b.cbs;
      std::int64_t iw0 = 0;
      if (b.cbs < CBLK && (cb + 1) * b.cbs <= g.C) iw0 = interleave(x + (cb * b.cbs * g.H + ih) * g.W, g.H * g.W, g.W, in);
      // Channel c of this block, row ih, interleaved (the columns the interleave left).
      for (std::int64_t ic = 0; ic < b.cbs; ++ic) {
        const std::int64_t c = cb * b.cbs + ic;
        if (c >= g.C) {
          for (std::int64_t iw = iw0; iw < g.W; ++iw) in[iw * b.cbs + ic] = 0.0f;
          continue;
        }
        const float* src = x + (c * g.H + ih) * g.W;
        for (std::int64_t iw = iw0; iw < g.W; ++iw) in[iw * b.cbs + ic] = src[iw];
      }
    }
  });
}

// A K chunk: the (input block, kernel position) pairs [j0, j1), the first being (cb0, t0).
struct Chunk {
  std::int64_t j0, j1, cb0, t0;
};

// Weights to fetch into L2 while a group computes: `lines` cache lines from `at`, spread over the
// group's (input block, kernel position) pairs.
struct Prefetch {
  const float* at = nullptr;
  std::int64_t lines = 0;
};

// Pixels [LO, HI) of a group x 64 channels over one (input block, kernel position) pair's rows.
template <int LO, int HI, int NP>
inline void pair_rows(const float* w, std::int64_t inner, const float* const (&xp)[NP], __m512 (&acc)[BCONV_NP][BCONV_NB]) {
  for (std::int64_t ic = 0; ic < inner; ++ic) {
    __m512 wv[BCONV_NB];
    for (int v = 0; v < BCONV_NB; ++v) wv[v] = _mm512_load_ps(w + ic * BCONV_OC + v * CBLK);
    for (int p = LO; p < HI; ++p) {
      const __m512 xv = _mm512_set1_ps(xp[p][ic]);
      for (int v = 0; v < BCONV_NB; ++v) acc[p][v] = _mm512_fmadd_ps(xv, wv[v], acc[p][v]);
    }
  }
}

// One group of NP output pixels (from pixel `pix`, group `q`) x 64 channels over a chunk, fetching
// its share of the next chunk's weights on the way (a 7 x 7 layer's 9.4 MB of weights come from
// DRAM). Kernel positions whose input lies outside the image are skipped: for the whole group, or
// for its first or last pixel (any other pattern reads a block of zeros for the pixels outside).
template <int NP>
inline void group(const BlockedConv& b, const float* xs, std::int64_t og, const Chunk& k, std::int64_t q, std::int64_t pix, Prefetch pf, __m512 (&acc)[BCONV_NP][BCONV_NB]) {
  alignas(64) static constexpr float zeros[CBLK] = {};
  constexpr unsigned all = (1u << NP) - 1;
  const std::uint8_t* inside = b.inside.empty() ? nullptr : b.inside.data() + q * b.taps;
  const std::int64_t inner = b.inner, per_pair = (pf.lines + (k.j1 - k.j0) - 1) / (k.j1 - k.j0);
  const float* w = b.weights(og, k.j0);
  for (std::int64_t j = k.j0, cb = k.cb0, t = k.t0; j < k.j1; ++j, w += inner * BCONV_OC) {
    for (std::int64_t l = 0; l < per_pair && pf.lines > 0; ++l, --pf.lines, pf.at += CBLK) _mm_prefetch(reinterpret_cast<const char*>(pf.at), _MM_HINT_T1);
    const std::int64_t x = cb * b.xcb + b.tap_off[static_cast<std::size_t>(t)];
    const unsigned in = inside ? inside[t] : all;
    if (++t == b.taps) t = 0, ++cb;
    if (in == 0) continue;
    const float* xp[NP];
    for (int p = 0; p < NP; ++p) xp[p] = (in >> p) & 1u ? xs + (x + b.pix_off[static_cast<std::size_t>(pix + p)]) : zeros;
    if (in == all) pair_rows<0, NP>(w, inner, xp, acc);
    else if (in == all - 1) pair_rows<1, NP>(w, inner, xp, acc);
    else if (in == all >> 1) pair_rows<0, NP - 1>(w, inner, xp, acc);
    else pair_rows<0, NP>(w, inner, xp, acc);
  }
}

// Where a group's output goes: y holds output pixels from pix0 on, channel planes `plane` pixels
// apart (blocked: block c / 16 at y + (c / 16) * plane * 16); the whole output is {y, P, 0}, and
// one output row's block rows {row, OW, row's first pixel}.
struct Out {
  float* y;
  std::int64_t plane, pix0;
};

// Runs a chunk for one group (partial sums in/out of ps) and, at the last chunk, writes it.
template <int NP>
inline void run_group(const BlockedConv& b, const float* xs, std::int64_t og, const Chunk& k, std::int64_t q, std::int64_t pix, float* ps, Out out, const float* res, Prefetch pf) {
  const bool first = k.j0 == 0, last = k.j1 == b.cbn * b.taps;
  __m512 acc[BCONV_NP][BCONV_NB];
  for (int p = 0; p < NP; ++p)
    for (int v = 0; v < BCONV_NB; ++v) acc[p][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ps + (p * BCONV_NB + v) * CBLK);
  group<NP>(b, xs, og, k, q, pix, pf, acc);
  if (!last) {
    for (int p = 0; p < NP; ++p)
      for (int v = 0; v < BCONV_NB; ++v) _mm512_store_ps(ps + (p * BCONV_NB + v) * CBLK, acc[p][v]);
    return;
  }
  const std::int64_t P = b.g.pixels(), nb = std::min<std::int64_t>(BCONV_NB, b.kb - og * BCONV_NB), at = pix - out.pix0;
  // NCHW output: lane l (channel c0 + l) goes to y[(c0 + l) plane + pixel].
  const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(static_cast<std::int32_t>(out.plane)));
  for (std::int64_t v = 0; v < nb; ++v) {
    const std::int64_t c0 = (og * BCONV_NB + v) * CBLK;
    const __m512 bias = _mm512_loadu_ps(b.bias.data() + c0);
    const auto live = static_cast<__mmask16>((1u << std::min<std::int64_t>(CBLK, b.g.K - c0)) - 1);
    for (int p = 0; p < NP; ++p) {
      __m512 r = _mm512_add_ps(acc[p][v], bias);
      if (res) r = _mm512_add_ps(r, _mm512_loadu_ps(res + (c0 * P + (pix + p) * CBLK)));
      if (b.relu) r = _mm512_max_ps(r, _mm512_setzero_ps());
      if (b.out_blocked) _mm512_storeu_ps(out.y + (c0 * out.plane + (at + p) * CBLK), r);
      else _mm512_mask_i32scatter_ps(out.y + c0 * out.plane + at + p, live, idx, r, 4);
    }
  }
}

// run_group for group q, whatever its size.
inline void run_group_any(const BlockedConv& b, const float* xs, std::int64_t og, const Chunk& k, std::int64_t q, float* ps, Out out, const float* res, Prefetch pf) {
  const std::int64_t pix = b.first[static_cast<std::size_t>(q)];
  switch (b.first[static_cast<std::size_t>(q + 1)] - pix) {
    case 7: run_group<7>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    case 6: run_group<6>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    case 5: run_group<5>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    case 4: run_group<4>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    case 3: run_group<3>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    case 2: run_group<2>(b, xs, og, k, q, pix, ps, out, res, pf); break;
    default: run_group<1>(b, xs, og, k, q, pix, ps, out, res, pf); break;
  }
}

}  // namespace bconv_detail

// The blocked input the convolution reads: x itself, or (an NCHW x) its zero-bordered blocked copy
// at the start of the scratch.
inline const float* blocked_input(const BlockedConv& b, const float* x, std::byte* scratch) {
  if (b.in_blocked) return x;
  auto* xp = reinterpret_cast<float*>(thread_scratch(scratch, 0, 0));
  bconv_detail::copy_input(b, x, xp);
  return xp;
}

// One image: x (blocked, or NCHW) -> y (blocked, or NCHW), f32. `res`: a blocked residual of y's
// shape added before the relu (blocked outputs only).
inline void blocked_conv(const BlockedConv& b, const float* x, float* y, std::byte* scratch, const float* res = nullptr) {
  const float* xs = blocked_input(b, x, scratch);
  std::byte* per_thread = scratch + b.input_bytes();
  const std::int64_t groups = b.groups(), parts = b.parts();
  parallel_for_t(b.ogs * parts, 1, [&](int tid, std::int64_t i0, std::int64_t i1) {
    auto* partial = reinterpret_cast<float*>(thread_scratch(per_thread, tid, b.thread_bytes()));
    const std::int64_t pairs = b.cbn * b.taps, chunk_lines = b.inner * (BCONV_OC / CBLK);
    for (std::int64_t it = i0; it < i1; ++it) {
      const std::int64_t og = it / parts, part = it % parts, q0 = groups * part / parts, q1 = groups * (part + 1) / parts;
      for (std::int64_t j0 = 0; j0 < pairs; j0 += b.kc) {
        const bconv_detail::Chunk k{j0, std::min(pairs, j0 + b.kc), j0 / b.taps, j0 % b.taps};
        // The weights read next (this item's next chunk, or the next item's first), shared out
        // over this chunk's groups.
        bconv_detail::Prefetch next;
        if (k.j1 < pairs) next = {b.weights(og, k.j1), (std::min(pairs, k.j1 + b.kc) - k.j1) * chunk_lines};
        else if (it + 1 < i1) next = {b.weights((it + 1) / parts, 0), std::min(pairs, b.kc) * chunk_lines};
        for (std::int64_t q = q0; q < q1; ++q) {
          const std::int64_t l0 = next.lines * (q - q0) / (q1 - q0), l1 = next.lines * (q - q0 + 1) / (q1 - q0);
          const bconv_detail::Prefetch pf{next.at + l0 * CBLK, l1 - l0};
          bconv_detail::run_group_any(b, xs, og, k, q, partial + (q - q0) * BCONV_NP * BCONV_OC, {y, b.g.pixels(), 0}, res, pf);
        }
      }
    }
  });
}

#endif  // NPUSIM_CPU_AVX512

}  // namespace npusim::inline NPUSIM_ABI::cpu
