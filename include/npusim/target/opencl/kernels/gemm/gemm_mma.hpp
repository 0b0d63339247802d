// The tensor-core path (GemmMma): mma.sync through inline PTX (mma.hpp), or its emulation, over
// f16/bf16 operands in 128x128 / 64x128 / 128x64 tiles (cl/gemm.cl's gemm_mma), with its tuning
// variables (NPUSIM_OPENCL_GEMM_FILL, _TILE, _OPTS; docs/opencl.md).
#pragma once

#include "npusim/target/opencl/kernels/gemm/problem.hpp"

#include <cstdlib>

namespace npusim::inline NPUSIM_ABI::ocl {


// How many gemm_mma work-groups of `items` work-items per compute unit split-K aims for when the
// output tiles alone are fewer: 2 of 128 items (1 of 256) unless NPUSIM_OPENCL_GEMM_FILL gives the
// number of 128-item groups (1-64; for tuning on other devices: docs/opencl.md).
inline std::int64_t mma_fill(int items) {
  std::int64_t fill = 2;
  if (const char* e = std::getenv("NPUSIM_OPENCL_GEMM_FILL"); e && *e) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (*end || v < 1 || v > 64)
      throw Error(ErrorCode::unsupported, "NPUSIM_OPENCL_GEMM_FILL takes a number of work-groups per compute unit", {.expected = "an integer 1-64", .found = e});
    fill = v;
  }
  return std::max<std::int64_t>(fill * 128 / items, 1);
}

// A gemm_mma tile: bm x bn outputs, warps of wm x wn.
struct MmaTile {
  int bm, bn, wm, wn;
};
// NPUSIM_OPENCL_GEMM_TILE=128x128|64x128|128x64: every gemm_mma on that tile (for tuning; unset,
// the tile follows the shape).
inline std::optional<MmaTile> mma_tile_override() {
  const char* e = std::getenv("NPUSIM_OPENCL_GEMM_TILE");
  if (!e || !*e) return std::nullopt;
  const std::string v = e;
  if (v == "128x128") return MmaTile{128, 128, 64, 32};
  if (v == "64x128") return MmaTile{64, 128, 32, 64};
  if (v == "128x64") return MmaTile{128, 64, 32, 32};
  throw Error(ErrorCode::unsupported, "NPUSIM_OPENCL_GEMM_TILE names a tensor-core tile", {.expected = "128x128, 64x128 or 128x64", .found = v});
}

// NPUSIM_OPENCL_GEMM_OPTS: build options appended to every gemm_mma program, to time a variant of
// cl/gemm.cl behind a -D switch without rebuilding npusim (tools/device/gemm_knobs.sh; docs/opencl.md).
inline std::string mma_extra_options() {
  const char* e = std::getenv("NPUSIM_OPENCL_GEMM_OPTS");
  return e && *e ? std::string(" ") + e : std::string();
}

// gemm_mma (tensor cores; GemmMma below says when). Tile: 128 x 128 (8 warps of 64 x 32) when that
// fills the device, 64 x 128 (4 warps of 32 x 64) for few rows, 128 x 64 (8 warps of 32 x 32) for
// few columns (the small images of a CNN's last stages) and for every channels-last convolution.
// A grouped product (segments, a gate) in one gemm_mma launch (-DM_SEG, -DM_GATE) needs the
// cp.async path (`async`: aligned rows) over plain weights (mode 0, the others' B of the same
// type), one batch, a plain [M, N] output, and every segment but the last in whole tiles of `bn`;
// the gate no bias. "" when it can, else why not.
inline std::string mma_grouped_refusal(const Gemm& g, int mode, bool async, std::int64_t nbatch, std::int64_t bn) {
  if (mode != 0 || !async) return "packed weights, not a linear layer's, or rows not 16-byte aligned";
  if (nbatch != 1 || g.residual || g.relu || g.scn != 1 || g.scm != g.N) return "batches, a residual, ReLU or a strided output";
  auto aligned = [&](const TensorRef& w) { return w.off % 16 == 0 && w.dtype == g.b.dtype; };
  if (g.up && (g.bias || !g.more.empty() || !aligned(*g.up))) return "a gate with a bias or segments, or its up weight unaligned";
  std::int64_t n = g.N;
  for (const Gemm::Segment& s : g.more) {
    if (n % bn) return "a segment that is not a whole number of tiles";
    if (!aligned(s.w) || s.c.dtype != g.c.dtype) return "segments of other types or unaligned";
    n = s.N;
  }
  return {};
}

inline void launch_mma(Binder& b, const Gemm& g, const TiledArgs& t_args) {
  const std::string& type_opts = t_args.type_opts;
  const bool conv = t_args.conv, idx32 = t_args.idx32;
  const cl_mem desc = t_args.desc, ktab = g.im2col ? g.im2col->tab : t_args.ktab;
  const std::int64_t nbatch = t_args.nbatch;
  const MmaSupport& mma = mma_support(b.device());
  const int mode = g.wq ? 3 : conv ? 2 : (g.sbk == 1 && g.sbn != 1) ? 0 : 1;
  const std::int64_t cus = std::max<std::int64_t>(b.device().info().compute_units, 1);
  // A gate's tile makes bn / 2 columns of C from bn rows of B and U; segments tile one after another.
  const bool gate = g.up.has_value(), seg = !g.more.empty();
  std::int64_t n_all = gate ? 2 * g.N : g.N;
  for (const Gemm::Segment& s : g.more) n_all += s.N;
  auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ((g.M + bm - 1) / bm) * ((n_all + bn - 1) / bn) * nbatch; };
  MmaTile t{128, 128, 64, 32};
  if (n_all <= 64) t = {128, 64, 32, 32};
  else if (g.M <= 64 || tiles(128, 128) < (gate ? 2 : 1) * cus) t = {64, 128, 32, 64};  // a gate: no split-K, so more tiles
  if (g.channels_last) t = {128, 64, 32, 32};
  if (auto forced = mma_tile_override()) t = *forced;
  auto mult8 = [](std::int64_t v) { return v % 8 == 0; };
  // 16-byte loads where every 8-element chunk of a row starts 16-byte aligned (a convolution's A is
  // its weight, rows of K).
  const bool avec = g.sak == 1 && mult8(g.K) && (g.a.off % 16) == 0 && (conv || (mult8(g.sam) && mult8(g.sa0) && mult8(g.sa1)));
  bool bvec = false;
  if (mode == 0) bvec = mult8(g.K) && mult8(g.sbn) && (g.b.off % 16) == 0 && mult8(g.sb0) && mult8(g.sb1);
  if (mode == 1) bvec = g.sbn == 1 && mult8(g.N) && mult8(g.sbk) && (g.b.off % 16) == 0 && mult8(g.sb0) && mult8(g.sb1);
  if (mode == 3) bvec = g.b.off % 8 == 0;  // the codes' 8-byte loads
  // Aligned rows (A, and B as W rows or K rows) go to local memory by cp.async, in as many stages as
  // 48 KB hold (the most NVIDIA's OpenCL gives a work-group): 3 for the 64 x 128 and 128 x 64
  // tiles, 2 for 128 x 128.
  const bool async = mode <= 1 && avec && bvec;
  if (g.im2col && (mode != 0 || !async || nbatch != 1 || g.grouped()))
    b.unsupported("a channels-last convolution whose operands the cp.async tiles cannot take (npusim bug)");
  if ((gate || seg) && !mma_grouped_refusal(g, mode, async, nbatch, t.bn).empty())
    return bind_apart(b, g, [&](const Gemm& one) { launch_mma(b, one, tiled_args(b, one)); });
  const int nt = (t.bm / t.wm) * (t.bn / t.wn) * 32;
  const std::int64_t n_tiles = tiles(t.bm, t.bn);
  const KSplit ks = gate ? KSplit{1, g.K} : k_split(g.K, n_tiles, mma_fill(nt) * cus, 32);
  // Every tile full (rows, columns, whole K slices in every split): the copies need no zero-fill
  // operand (-DM_NOZF, 3% on the lm_head; the emulation has no such instruction).
  bool full = async && !mma.emulated && g.M % t.bm == 0 && (gate ? g.N % (t.bn / 2) : g.N % t.bn) == 0 && g.K % 32 == 0;
  for (const Gemm::Segment& s : g.more) full = full && s.N % t.bn == 0;
  const std::int64_t stage_bytes = (t.bm * (32 + 8) + (mode == 0 ? t.bn * (32 + 8) : 32 * (t.bn + 8))) * 2;  // cl/gemm.cl's M_STAGE_U16
  const int stages = async && 3 * stage_bytes + 16 <= std::min<std::int64_t>(49152, static_cast<std::int64_t>(b.device().info().local_mem)) ? 3 : 2;
  const std::string opts = type_opts + (idx32 ? " -DIDX32" : "") + " -DMMA=1 -DMMA_T=" + std::to_string(dt_code(g.a.dtype)) +
                           " -DBMODE=" + std::to_string(mode) + " -DMBM=" + std::to_string(t.bm) + " -DMBN=" + std::to_string(t.bn) +
                           " -DMWM=" + std::to_string(t.wm) + " -DMWN=" + std::to_string(t.wn) + (mma.emulated ? " -DMMA_EMU=1" : "") +
                           (async ? " -DM_ASYNC=1 -DM_STAGES=" + std::to_string(stages) : "") + (full ? " -DM_NOZF=1" : "") +
                           (seg ? " -DM_SEG=1" : "") + (gate ? " -DM_GATE=1" : "") + (g.im2col ? " -DA_IM2COL=1" : "") + mma_extra_options();
  cl_program p = b.program("gemm", ocl::cl_source::gemm, opts);
  const Typed bias = g.bias ? Typed{*g.bias} : b.none();
  const Typed res = g.residual ? Typed{*g.residual} : b.none();
  cl_mem part = ks.n > 1 ? b.scratch(static_cast<std::size_t>(nbatch * ks.n * g.M * n_all) * sizeof(float)) : b.none().r.mem;
  std::int64_t gx = gate ? (g.N + t.bn / 2 - 1) / (t.bn / 2) : (g.N + t.bn - 1) / t.bn;
  for (const Gemm::Segment& s : g.more) gx += (s.N + t.bn - 1) / t.bn;
  const std::array<std::size_t, 3> global{static_cast<std::size_t>(gx) * static_cast<std::size_t>(nt), static_cast<std::size_t>((g.M + t.bm - 1) / t.bm),
                                          static_cast<std::size_t>(nbatch * ks.n)};
  const std::array<std::size_t, 3> local{static_cast<std::size_t>(nt), 1, 1};
  auto launch = [&](auto&&... extra) {
    b.launch(p, "gemm_mma", global, local, 3, Ptr{g.a}, Ptr{g.b}, Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0), res,
             static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(g.K), desc,
             static_cast<cl_int>(conv), ktab, static_cast<cl_int>(ks.n), static_cast<cl_long>(ks.chunk), part, static_cast<cl_int>(avec),
             static_cast<cl_int>(bvec), extra...);
  };
  if (seg) {
    auto at = [&](std::size_t i) { return i < g.more.size() ? g.more[i] : Gemm::Segment{b.none().r, std::nullopt, b.none().r, 0}; };
    const Gemm::Segment s1 = at(0), s2 = at(1);
    auto sb = [&](const Gemm::Segment& s) { return s.bias ? Typed{*s.bias} : b.none(); };
    launch(Ptr{s1.w}, Ptr{s1.c}, sb(s1), static_cast<cl_int>(s1.bias ? 1 : 0), static_cast<cl_long>(s1.N),  //
           Ptr{s2.w}, Ptr{s2.c}, sb(s2), static_cast<cl_int>(s2.bias ? 1 : 0), static_cast<cl_long>(s2.N));
    if (ks.n > 1)  // the splits added up per segment, each into its own output with its own bias
      b.launch1d(p, "gemm_reduce_seg", g.M * n_all, 256, part, static_cast<cl_int>(ks.n), static_cast<cl_long>(g.M), static_cast<cl_long>(g.N),
                 static_cast<cl_long>(s1.N), static_cast<cl_long>(s2.N), Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? 1 : 0), Ptr{s1.c}, sb(s1),
                 static_cast<cl_int>(s1.bias ? 1 : 0), Ptr{s2.c}, sb(s2), static_cast<cl_int>(s2.bias ? 1 : 0));
    return;
  } else if (gate) {
    launch(Ptr{*g.up});
  } else if (const auto& c = g.im2col) {
    auto i32 = [](std::int64_t v) { return static_cast<cl_int>(v); };
    launch(i32(c->H), i32(c->W), i32(c->C), i32(c->OW), i32(c->OHW), i32(c->sh), i32(c->sw), i32(c->ph), i32(c->pw));
  } else {
    launch();
  }
  if (ks.n > 1)
    b.launch1d(p, "gemm_reduce", nbatch * g.M * g.N, 256, part, static_cast<cl_int>(ks.n), Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0),
               res, static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(nbatch),
               desc, static_cast<cl_int>(conv));
}

struct GemmMma {
  static constexpr std::string_view name = "gemm_mma",
                                    what = "tensor cores (mma.sync through inline PTX, or emulated): f16 or bf16 operands, 128x128 / 64x128 / 128x64 tiles; q/k/v segments and a SiLU gate in one launch";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    if (p.gemv_only) return kernel_choice::decline(why, "a folded norm or RoPE epilogue: only the GEMVs run them");
    if (p.a != p.b || !is_half(p.a))
      return kernel_choice::decline(why, [&] { return "operands " + std::string(dtype_short_name(p.a)) + " x " + std::string(dtype_short_name(p.b)) + " (it needs both f16 or both bf16)"; });
    if (const MmaSupport m = p.mma ? p.mma() : MmaSupport{}; !m.ok) return kernel_choice::decline(why, [&] { return m.why.empty() ? "no device to ask" : m.why; });
    return true;
  }
  static void bind(Binder& b, const Gemm& g, const TiledArgs* t) { launch_mma(b, g, t ? *t : tiled_args(b, g)); }
};
}  // namespace npusim::inline NPUSIM_ABI::ocl
