// AMX (Intel Advanced Matrix Extensions) support for bf16 GEMM: detection plus the OS permission
// request Linux requires before a process touches tile registers. Built only when the compiler
// targets AMX (-march=native on such a CPU); everything else uses the AVX/FMA paths.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "npusim/version.hpp"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define NPUSIM_CPU_AMX 1
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

// True when AMX-BF16 may be used by this process (asked for once; NPUSIM_NO_AMX=1 turns it off).
inline bool amx_enabled() {
#if defined(NPUSIM_CPU_AMX)
  static const bool ok = [] {
    if (const char* e = std::getenv("NPUSIM_NO_AMX"); e && *e && *e != '0') return false;
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
#endif

}  // namespace npusim::inline NPUSIM_ABI::cpu
