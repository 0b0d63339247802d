// AMX (Intel Advanced Matrix Extensions) support for bf16 GEMM: detection plus the OS permission
// request Linux requires before a process touches tile registers. Built only when the compiler
// targets AMX (-march=native on such a CPU); everything else uses the AVX/FMA paths.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "npusim/version.hpp"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define NPUSIM_CPU_AMX 1
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

// True when AMX-BF16 may be used by this process (the build has it and the OS grants the tile
// state; asked for once). NPUSIM_CPU_SKIP=conv_amx,gemm_amx leaves it unused (candidates.hpp).
inline bool amx_enabled() {
#if defined(NPUSIM_CPU_AMX)
  static const bool ok = [] {
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

#if defined(NPUSIM_CPU_AMX)
// Tile configuration: tiles 0-3 accumulators (16x16 f32), 4-5 A (16 rows x 32 bf16), 6-7 B
// (16 k-pair rows x 16 columns x 2).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) colsb[t] = 64, rows[t] = 16;
  }
};

// c[32][32] (f32, rows 32 floats apart) = A . B over K (a multiple of 32), on the loaded tile
// configuration: A is 32 bf16 rows `lda` elements apart; B is two 16-column operands in the k-pair
// layout (pair row kk = k 2kk and 2kk+1 interleaved) whose pair rows lie `ldb` bytes apart.
inline void amx_block_32x32(const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b0, const std::uint16_t* b1, std::int64_t ldb, std::int64_t K,
                            float* c) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (std::int64_t k0 = 0; k0 < K; k0 += 32) {
    const std::int64_t kb = (k0 / 2) * (ldb / 2);  // 16 pair rows per step, in elements
    _tile_loadd(4, a + k0, lda * 2);
    _tile_loadd(5, a + 16 * lda + k0, lda * 2);
    _tile_loadd(6, b0 + kb, ldb);
    _tile_loadd(7, b1 + kb, ldb);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  _tile_stored(2, c + 16 * 32, 128);
  _tile_stored(3, c + 16 * 32 + 16, 128);
}
#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
