// GEMM candidate gemm_amx: bf16 x bf16 on AMX tiles (compute/amx.hpp), where the build, the CPU
// and the OS allow them.
#pragma once

#include <cstring>
#include <string>

#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/amx.hpp"
#include "npusim/target/cpu/compute/gemm_core.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// The bf16 tile paths take bf16 activations and pair-packed weights, A along its rows, more than
// 4 rows (fewer stream the weights once: GemmGemv).
inline bool gemm_bf16_rows(const GemmProblem& p, std::string* why) {
  if (p.a != DType::bf16 || !p.pairs)
    return decline(why, [&] {
      return "needs bf16 activations and weights (found " + std::string(dtype_name(p.a)) + " activations, " + std::string(dtype_name(p.w)) + " weights)";
    });
  if (p.k_major) return decline(why, "needs A read along its rows (this operand is transposed)");
  if (p.M <= 4) return decline(why, [&] { return std::to_string(p.M) + " row(s): at most 4 rows stream the weights once (gemm_gemv)"; });
  return true;
}

#if defined(NPUSIM_CPU_AMX)
// bf16 x bf16 -> f32 on AMX tiles: per thread a range of panel pairs; 32x32 output blocks from
// 2x2 tiles, K in chunks of 32. A is read in place when its rows are already 32-aligned in M
// and K, otherwise from a zero-padded copy.
inline void amx_gemm(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) {
  const std::int64_t K = b.K, Kp = b.Kp, Mp = (M + 31) / 32 * 32;
  const std::uint16_t* A = static_cast<const std::uint16_t*>(a.data);
  std::int64_t lda = a.ld;
  if (M % 32 || K % 32) {
    auto* pad = reinterpret_cast<std::uint16_t*>(s.a(scratch));
    std::memset(pad, 0, static_cast<std::size_t>(Mp * Kp) * 2);
    for (std::int64_t m = 0; m < M; ++m) std::memcpy(pad + m * Kp, A + m * a.ld, static_cast<std::size_t>(K) * 2);
    A = pad, lda = Kp;
  }
  const std::int64_t pairs = (b.panels + 1) / 2;
  parallel_for_t(pairs, 1, [&](int tid, std::int64_t q0, std::int64_t q1) {
    const int t = tid;
    float* ct = s.cblk(scratch, t);  // 32 x 32 f32
    TileConfig cfg;
    _tile_loadconfig(&cfg);
    for (std::int64_t q = q0; q < q1; ++q) {
      const PanelPair pp(b, q);
      for (std::int64_t m0 = 0; m0 < Mp; m0 += 32) {
        amx_block_32x32(A + m0 * lda, lda, pp.b0, pp.b1, 2 * NR * 2, Kp, ct);
        write_c(ct, 32, m0, std::min<std::int64_t>(32, M - m0), pp.n0, pp.cols, c, ep);
      }
    }
    _tile_release();
  });
}
#endif

struct GemmAmx {
  static constexpr std::string_view name = "gemm_amx", what = "bf16 on AMX tiles";
  static constexpr bool generic = false;
  static bool applies([[maybe_unused]] const GemmProblem& p, std::string* why) {
#if defined(NPUSIM_CPU_AMX)
    if (!amx_enabled()) return decline(why, "the OS did not grant the AMX tile state");
    return gemm_bf16_rows(p, why);
#else
    return decline(why, "not built with AMX-BF16 (the compiler's target has no -mamx-bf16)");
#endif
  }
#if defined(NPUSIM_CPU_AMX)
  static void run(const AView& a, std::int64_t M, const PackedB& b, const CView& c, const Epilogue& ep, const GemmScratch& s, std::byte* scratch) { amx_gemm(a, M, b, c, ep, s, scratch); }
#else
  // Never chosen in this build (applies declines); the chooser's table still names it.
  static void run(const AView&, std::int64_t, const PackedB&, const CView&, const Epilogue&, const GemmScratch&, std::byte*) {
    throw Error(ErrorCode::unsupported, "gemm_amx chosen in a build without it (npusim bug)");
  }
#endif
};

}  // namespace npusim::inline NPUSIM_ABI::cpu
