// Convolutions by blocks of output pixels, as the CPU target's blocked kernels (conv_f32.hpp,
// conv_amx.hpp) gather them: the geometry, and for one block of up to 32 consecutive output pixels
// (NCHW order) the pieces it splits into by output row and, per kernel position and piece, which
// lanes read inside the input plane and from where. With that table a row of the block's im2col
// columns is one or two masked vector loads per piece (per block, at stride 1 with unchanged
// width, where all pieces share one shift), with no per-element bounds checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// The geometry of one conv2d (NCHW), as the CPU kernels use it.
struct ConvGeom {
  std::int64_t N, C, H, W, K, kh, kw, OH, OW, G, sh, sw, ph, pw, dh, dw;
  std::int64_t pixels() const { return OH * OW; }
  std::int64_t cols_per_group() const { return (C / G) * kh * kw; }  // im2col rows (the GEMM's K)
  // 1x1, stride 1, unpadded: each im2col row is a contiguous run of an input plane.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

inline constexpr std::int64_t CONV_PX = 32;  // output pixels per block

struct ConvBlock {
  struct Piece {
    std::int64_t oh, ow, q, len;  // output row, first column, first lane, lanes
  };
  // Lane L of piece k at kernel position t reads plane[off + L * sw] when bit L of `lanes` is set.
  struct Run {
    std::uint32_t lanes;
    std::int64_t off;
  };
  static constexpr std::int64_t max_runs = 1024;

  std::int64_t p0 = 0, cols = 0;
  int np = 0;
  int nr = 0;           // runs per kernel position: np, or 1 where every piece reads at the same shift
  bool vector = false;  // runs are filled: column stride 1 or 2 and a small enough table
  Piece pieces[CONV_PX + 1];
  Run runs[max_runs];

  // Block `blk` of 32 pixels. `with_runs`: fill the run table too (the vector gathers); the pieces
  // are always made.
  ConvBlock(const ConvGeom& g, std::int64_t blk, bool with_runs = true) : ConvBlock(g, blk * CONV_PX, std::min(CONV_PX, g.pixels() - blk * CONV_PX), with_runs) {}
  // The `count` (<= 32) pixels from pixel `first`.
  ConvBlock(const ConvGeom& g, std::int64_t first, std::int64_t count, bool with_runs) {
    p0 = first, cols = count;
    for (std::int64_t q = 0; q < cols;) {
      const std::int64_t oh = (p0 + q) / g.OW, ow = (p0 + q) % g.OW, len = std::min(cols - q, g.OW - ow);
      pieces[np++] = {oh, ow, q, len};
      q += len;
    }
    vector = with_runs && (g.sw == 1 || g.sw == 2) && g.kh * g.kw * np <= max_runs;
    if (!vector) return;
    // Stride 1 with as many output as input columns: output pixel p reads input element
    // p + (i dh - ph) W + j dw - pw at every kernel position, so the pieces of a block share one
    // shift and merge into one run (two masked loads per im2col row, however many rows it spans).
    const bool shared = g.sh == 1 && g.sw == 1 && g.OW == g.W;
    nr = shared ? 1 : np;
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        Run* rt = runs + (i * g.kw + j) * nr;
        if (shared) *rt = {0u, p0 + (i * g.dh - g.ph) * g.W + j * g.dw - g.pw};
        for (int k = 0; k < np; ++k) {
          const Piece& pc = pieces[k];
          const std::int64_t ih = pc.oh * g.sh - g.ph + i * g.dh, off = j * g.dw - g.pw;  // iw = ow * sw + off
          const auto [lo, hi] = inside(g, pc, off);
          const std::uint32_t lanes = ih < 0 || ih >= g.H ? 0u : static_cast<std::uint32_t>(((std::uint64_t{1} << (pc.q + hi)) - 1) & ~((std::uint64_t{1} << (pc.q + lo)) - 1));
          if (shared) rt->lanes |= lanes;
          else rt[k] = {lanes, ih * g.W + (pc.ow - pc.q) * g.sw + off};
        }
      }
  }
  const Run* runs_at(std::int64_t t) const { return runs + t * nr; }

  // The piece's lanes [lo, hi) (relative to its first lane) whose input column lies in the plane.
  static std::pair<std::int64_t, std::int64_t> inside(const ConvGeom& g, const Piece& pc, std::int64_t off) {
    // x / sw for x >= 0, without a division at strides 1 and 2 (the stem's table has 49 x 2 rows).
    auto over_sw = [&](std::int64_t x) { return g.sw == 1 ? x : g.sw == 2 ? x >> 1 : x / g.sw; };
    const std::int64_t first = off >= 0 ? 0 : over_sw(-off + g.sw - 1), last = g.W - off <= 0 ? 0 : over_sw(g.W - off - 1) + 1;
    const std::int64_t lo = std::clamp<std::int64_t>(first - pc.ow, 0, pc.len), hi = std::clamp<std::int64_t>(last - pc.ow, lo, pc.len);
    return {lo, hi};
  }

  // Any stride: calls f(lane, source, n) for each run of the block's lanes whose inputs at kernel
  // row i, column j lie in the plane; lanes lane .. lane + n - 1 read source[0], source[sw], ...
  template <class T, class F>
  void for_each_run(const ConvGeom& g, const T* plane, std::int64_t i, std::int64_t j, F&& f) const {
    const std::int64_t off = j * g.dw - g.pw;
    for (int k = 0; k < np; ++k) {
      const Piece& pc = pieces[k];
      const std::int64_t ih = pc.oh * g.sh - g.ph + i * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      const auto [lo, hi] = inside(g, pc, off);
      if (hi > lo) f(pc.q + lo, plane + ih * g.W + (pc.ow + lo) * g.sw + off, hi - lo);
    }
  }

  // The im2col row (kernel row i, column j) of `plane` into dst[32], element by element.
  template <class T>
  void gather_row(const ConvGeom& g, const T* plane, std::int64_t i, std::int64_t j, T* dst) const {
    std::fill(dst, dst + CONV_PX, T{});
    for_each_run(g, plane, i, j, [&](std::int64_t q, const T* sp, std::int64_t n) {
      for (std::int64_t t = 0; t < n; ++t) dst[q + t] = sp[t * g.sw];
    });
  }
};

// How a blocked convolution shares out its work: `groups` of pixel blocks, each split into
// `parts` ranges of its `units` (channel strips or tiles) when there are too few groups to keep
// every thread busy.
inline std::int64_t conv_parts(std::int64_t groups, std::int64_t units, std::int64_t threads) {
  return groups >= 4 * threads ? 1 : std::min(units, (4 * threads + groups - 1) / groups);
}

// Small images (few blocks) go as one group of blocks per item, so that each weight strip is read
// once for all of them (a 7x7 layer's weights do not fit in L2); larger ones one block per item.
inline std::int64_t conv_block_group(std::int64_t P) {
  const std::int64_t blocks = (P + CONV_PX - 1) / CONV_PX;
  return blocks <= 2 * max_threads() ? blocks : 1;
}

// W output values of one channel: + bias, relu, the first n stored in the output's storage.
template <class SC>
inline void store_output(typename SC::T* p, fbatch x, float bias, bool relu, std::int64_t n) {
  x = x + fbatch(bias);
  if (relu) x = xsimd::max(x, fbatch(0.0f));
  store_n(SC{}, p, x, n);
}
// The same with a residual `res` (the output's storage) added the way the unfused conv -> add
// rounds: to the convolution's output as stored, then relu (none when res is null).
template <class SC>
inline void store_output(typename SC::T* p, fbatch x, float bias, bool relu, std::int64_t n, const typename SC::T* res) {
  if (!res) return store_output<SC>(p, x, bias, relu, n);
  store_output<SC>(p, x, bias, false, n);
  store_output<SC>(p, load_n(SC{}, p, n) + load_n(SC{}, res, n), 0.0f, relu, n);
}

// Calls f(tag, C, R) with the output y and the residual (or null) as pointers of the output's
// storage type, SC = decltype(tag) for store_output<SC>.
template <class F>
inline void visit_output(DType ydt, void* y, const void* residual, F&& f) {
  visit_float_storage(ydt, [&](auto tag) {
    using T = typename decltype(tag)::T;
    f(tag, static_cast<T*>(y), static_cast<const T*>(residual));
  });
}

// Thread t's 64-byte aligned share of a scratch area of `per_thread` bytes per thread (each share
// carries 64 bytes of slack for the alignment).
inline std::byte* thread_scratch(std::byte* base, int t, std::size_t per_thread) {
  return reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(base + static_cast<std::size_t>(t) * per_thread) + 63) & ~std::uintptr_t{63});
}

#if defined(NPUSIM_CPU_AVX512)
// The register-block product both pixel-block drivers run (conv_blocks.hpp: a = a weight strip,
// b = the pixel tile; conv_small.hpp the other way round): over k < kc,
// acc[r][v] += broadcast(a[k as + r]) . b[k bs + 16 v ..] for r < NR, v < NV. The Step supplies
// the type: `Vec`, `load(unit*)` (aligned), `broadcast(unit)` and `madd(acc, broadcast, vec)`.
template <class Step, int NR, int NV, int MR, int MV>
inline void outer_product(const typename Step::Unit* a, std::int64_t as, const typename Step::Unit* b, std::int64_t bs, std::int64_t kc,
                          __m512 (&acc)[MR][MV]) {
  static_assert(NR <= MR && NV <= MV);
  for (std::int64_t k = 0; k < kc; ++k) {
    typename Step::Vec bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = Step::load(b + k * bs + 16 * v);
    for (int r = 0; r < NR; ++r) {
      const auto av = Step::broadcast(a[k * as + r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = Step::madd(acc[r][v], av, bv[v]);
    }
  }
}
#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
