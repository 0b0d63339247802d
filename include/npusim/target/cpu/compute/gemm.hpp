// Matrix products for the CPU target. C[M, N] = A[M, K] . B[K, N] (+ bias, relu), f32 accumulation.
//
// B is a weight, packed once at load into panels of NR = 16 columns: panel p holds B[k][16p..16p+15]
// for every k, contiguous, in the weight's storage type (f32, f16 or bf16 — widened in registers,
// never stored wider). A (activations, any float storage, row-major or K-major) is packed per call
// into 6-row f32 strips. Each thread owns a range of column panels, so a weight byte is read by one
// thread exactly once per call: for M = 1 (decode) the kernel streams the weights at memory speed.
// The micro-kernel is 6 x 32 (12 accumulator vectors), K blocked by 256. bf16 x bf16 products of
// more than 4 rows use the bf16 hardware instead: AMX tiles where the CPU and OS allow them
// (amx_gemm), else AVX-512 BF16 dot products where the CPU has them (dpbf16_gemm, 12 x 32 tiles).
//
// Each way of running a product is a candidate type in compute/gemm/ (applies + run), listed best
// first in gemm_candidates below; gemm() runs the first that applies (candidates.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/gemm/amx.hpp"
#include "npusim/target/cpu/compute/gemm/dpbf16.hpp"
#include "npusim/target/cpu/compute/gemm/f32.hpp"
#include "npusim/target/cpu/compute/gemm/gemv.hpp"
#include "npusim/target/cpu/compute/gemm_core.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// Matrix products with packed weights (linear, addmm), best first, the generic one last.
using gemm_candidates = meta::list<GemmAmx, GemmDpbf16, GemmGemv, GemmF32>;
static_assert(check_candidate_list<GemmProblem>(gemm_candidates{}), "NPUSIM: gemm_candidates: names must be unique, the last and only the last generic");

// C = A . B (+ epilogue). M rows of A; B packed (K x N), by the first of gemm_candidates that
// applies.
inline void gemm(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
  using Run = void (*)(const AView&, std::int64_t, const PackedB&, const CView&, const Epilogue&, const GemmScratch&, std::byte*);
  const std::size_t i = choose<gemm_candidates>(GemmProblem{M, a.dtype, b.dtype, b.pairs, a.k_major});
  with_candidate<Run, gemm_candidates>(i, []<class C>() -> Run { return &C::run; })(a, M, b, c, ep, s, scratch);
}

// ---- convolution GEMM: C[Cout][P] = W[Cout][K] . B[K][P] ----------------------------------------
// The weights are the left operand, packed once at load into 6-row f32 strips (a compute-bound
// path, so widening them once beats widening in every inner loop); B is the im2col matrix (or,
// for 1x1 convolutions, the input itself) read in place, row k holding all P output pixels; C is
// the NCHW output, written row by row with bias and relu. No per-call packing. (The blocked f32
// convolution, conv_f32.hpp, packs its weights the same way in strips of 12 rows.)
struct PackedStrips {
  std::int64_t rows = 0, K = 0, strips = 0, mr = MR;
  AlignedBuf data;  // [strip][K][mr] f32
  const float* strip(std::int64_t s) const { return data.as<float>() + s * K * mr; }
};

inline PackedStrips pack_strips(const void* w, DType dtype, std::int64_t rows, std::int64_t K, std::int64_t mr = MR) {
  PackedStrips p;
  p.rows = rows, p.K = K, p.mr = mr, p.strips = (rows + mr - 1) / mr;
  p.data = AlignedBuf::make(static_cast<std::size_t>(p.strips * K * mr) * 4);
  float* d = p.data.as<float>();
  std::vector<float> row(static_cast<std::size_t>(K));
  for (std::int64_t r = 0; r < p.strips * mr; ++r) {
    if (r < rows) load_row(dtype, static_cast<const std::byte*>(w) + static_cast<std::size_t>(r * K) * dtype_size(dtype), row.data(), K);
    else std::fill(row.begin(), row.end(), 0.0f);
    for (std::int64_t k = 0; k < K; ++k) d[(r / mr) * K * mr + k * mr + r % mr] = row[static_cast<std::size_t>(k)];
  }
  return p;
}

namespace gemm_detail {
// acc[6 rows][NP*16 columns] over all K; B rows at b + k*ldb (storage S, unaligned).
template <int NP, class S>
inline void conv_micro(const float* a, const typename S::T* b, std::int64_t ldb, std::int64_t K, fbatch (&acc)[MR][NP * (NR / W)]) {
  constexpr int V = static_cast<int>(W), NV = NP * static_cast<int>(NR) / V;
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = fbatch(0.0f);
  for (std::int64_t k = 0; k < K; ++k) {
    fbatch bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load(S{}, b + k * ldb + v * V);
    for (int r = 0; r < MR; ++r) {
      const fbatch av(a[k * MR + r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(av, bv[v], acc[r][v]);
    }
  }
}
}  // namespace gemm_detail

// B for conv_gemm, in tiles: tile t holds B[k][32t .. 32t+31] for every k, contiguous f32
// (columns past P are zero). Produced by the im2col/transform pass, so the GEMM reads only
// contiguous memory.
inline constexpr std::int64_t CONV_CB = 2 * NR;
inline std::size_t conv_tiles_bytes(std::int64_t K, std::int64_t P) {
  return static_cast<std::size_t>(((P + CONV_CB - 1) / CONV_CB) * K * CONV_CB) * 4;
}
inline std::size_t conv_gemm_scratch_bytes() { return static_cast<std::size_t>(max_threads()) * (MR * CONV_CB * 4 + 128); }

// One block of 32 output pixels (columns n0 .. n0+cols-1, tile = its B) for strips s0..s1 of
// the weights: C rows written with bias and relu. `tailc` (MR x 32 floats) takes a partial block.
template <class SC>
inline void conv_block(const PackedStrips& a, const float* tile, std::int64_t n0, std::int64_t cols, std::int64_t s0, std::int64_t s1,
                       typename SC::T* C, std::int64_t ldc, const float* bias, bool relu, float* tailc) {
  constexpr int NV = static_cast<int>(CONV_CB / static_cast<std::int64_t>(W));
  for (std::int64_t s = s0; s < s1; ++s) {
    const std::int64_t r0 = s * MR, rows = std::min(MR, a.rows - r0);
    fbatch acc[MR][NV];
    gemm_detail::conv_micro<2, SF32>(a.strip(s), tile, CONV_CB, a.K, acc);
    for (std::int64_t r = 0; r < rows; ++r) {
      const fbatch bb(bias ? bias[r0 + r] : 0.0f);
      for (int v = 0; v < NV; ++v) {
        fbatch x = acc[r][v] + bb;
        if (relu) x = xsimd::max(x, fbatch(0.0f));
        if (cols == CONV_CB) store(SC{}, C + (r0 + r) * ldc + n0 + v * static_cast<std::int64_t>(W), x);
        else x.store_unaligned(tailc + r * CONV_CB + v * static_cast<std::int64_t>(W));
      }
      if (cols != CONV_CB)
        for (std::int64_t j = 0; j < cols; ++j) C[(r0 + r) * ldc + n0 + j] = from_f32(SC{}, tailc[r * CONV_CB + j]);
    }
  }
}

inline void conv_gemm(const PackedStrips& a, const float* tiles, std::int64_t P, void* c, DType cdt, std::int64_t ldc, const float* bias, bool relu,
                      std::byte* scratch) {
  const std::int64_t K = a.K, blocks = (P + CONV_CB - 1) / CONV_CB;
  const std::size_t per_thread = MR * CONV_CB * 4 + 128;
  // Work items: (column block, strip group); small images split the strips instead of the columns.
  const std::int64_t groups = blocks >= 2 * max_threads() ? 1 : std::min<std::int64_t>(a.strips, 2 * max_threads());
  const std::int64_t flops_per_item = 2 * K * CONV_CB * MR * std::max<std::int64_t>(1, a.strips / groups);
  parallel_for_t(blocks * groups, std::max<std::int64_t>(1, (1 << 20) / flops_per_item), [&](int tid, std::int64_t i0, std::int64_t i1) {
    const std::size_t t = static_cast<std::size_t>(tid);
    float* tailc = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(scratch + t * per_thread) + 63) & ~std::uintptr_t{63});
    visit_float_storage(cdt, [&](auto ctag) {
      using SC = decltype(ctag);
      auto* C = static_cast<typename SC::T*>(c);
      for (std::int64_t it = i0; it < i1; ++it) {
        const std::int64_t blk = it / groups, grp = it % groups, n0 = blk * CONV_CB, cols = std::min(CONV_CB, P - n0);
        conv_block<SC>(a, tiles + blk * K * CONV_CB, n0, cols, a.strips * grp / groups, a.strips * (grp + 1) / groups, C, ldc, bias, relu, tailc);
      }
    });
  });
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
