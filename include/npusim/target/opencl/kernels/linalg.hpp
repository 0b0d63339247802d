// Matrix kernels of the OpenCL target: linear, matmul (plain, transposed, grouped-query), addmm.
// A few rows (decode) run as GEMV (16-byte loads, up to three output segments, optional gate,
// residual and RMSNorm of the input); more rows as tiled GEMM: the tensor cores where the device
// has them (mma.hpp, gemm_mma in cl/gemm.cl) for half operands, else 64x64 FP32 tiles; K split
// over work-groups where the tiles alone would leave the device idle.
#pragma once

#include "npusim/core/quant_matrix.hpp"
#include "npusim/fusion/patterns.hpp"
#include "npusim/target/candidates.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"
#include "npusim/target/opencl/mma.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {

// ---- matrix products ---------------------------------------------------------------------------------
struct Gemm {
  TensorRef a, b, c;
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t sam = 0, sak = 1, sbk = 0, sbn = 1, scm = 0, scn = 1;
  std::int64_t nb0 = 1, nb1 = 1, sa0 = 0, sa1 = 0, adiv = 1, sb0 = 0, sb1 = 0, bdiv = 1, sc0 = 0, sc1 = 0;
  std::optional<TensorRef> bias, residual;
  std::optional<TensorRef> up;  // gated GEMV: c = silu(a W^T) * (a Up^T)
  struct Segment {              // GEMV only: more products of the same a, in the same launch
    TensorRef w;
    std::optional<TensorRef> bias;
    TensorRef c;
    std::int64_t N = 0;
  };
  std::vector<Segment> more;
  struct Norm {  // GEMV only: a is an RMSNorm's input; this is its weight, eps and rounding type
    TensorRef w;
    float eps = 0;
    DType mid = DType::f32;
  };
  std::optional<Norm> norm;
  // GEMV only, one row of x: the segments are the q, k and v projections of one token, rotated and
  // written into the KV caches in the epilogue (gemv_rope, fusion::LinearGroupRopeKv). q is the
  // rotated q's storage (the first segment's c is unused), cos and sin the token's D values.
  struct Rope {
    TensorRef cos, sin, pos, k_cache, v_cache, q;
    std::int64_t D = 0, S = 0;
    cl_int check = 0;  // the position's index check (Binder::index_check)
  };
  std::optional<Rope> rope;
  int bias_mode = 1;  // per n
  bool relu = false;
  // b, up and more[].w are packed blocks in this format (PackedWeight, gemv_q.cl); wdt is the
  // weights' storage type (what their values are dequantized to).
  std::optional<quant::BlockFormat> wq;
  DType wdt = DType::f32;
};

inline bool gemv_fits(const Gemm& g) {
  return g.sbk == 1 && g.sak == 1 && g.sbn == g.K && g.scm == g.N && g.nb0 * g.nb1 == 1 && g.scn == 1 && g.M >= 1 && g.M <= 4;
}

// K split over work-groups when the output tiles leave the device idle (few tiles, long K: batch-1
// convolutions, a prefill's projections): splits of whole `unit`-deep slices, at least 4 each.
struct KSplit {
  std::int64_t n = 1, chunk = 0;
};
inline KSplit k_split(std::int64_t K, std::int64_t tiles, std::int64_t want, std::int64_t unit) {
  const std::int64_t slices = (K + unit - 1) / unit;
  std::int64_t n = 1;
  if (tiles < want && slices >= 8) n = std::clamp<std::int64_t>((want + tiles - 1) / tiles, 1, slices / 4);
  const std::int64_t chunk = std::max<std::int64_t>((slices + n - 1) / n * unit, unit);
  return {(K + chunk - 1) / chunk, chunk};
}

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

// What the tiled paths (gemm_mma, gemm) take beside the product: the operands' storage types as
// build options, 32-bit indexing, the strides' (or a convolution's) descriptor, a convolution's
// index table, and the number of batches.
struct TiledArgs {
  std::string type_opts;
  bool idx32 = false;
  cl_mem desc = nullptr;
  bool conv = false;
  cl_mem ktab = nullptr;
  std::int64_t nbatch = 1;
};

// gemm_mma (tensor cores; GemmMma below says when). Tile: 128 x 128 (8 warps of 64 x 32) when that
// fills the device, 64 x 128 (4 warps of 32 x 64) for few rows, 128 x 64 (8 warps of 32 x 32) for
// few columns (the small images of a CNN's last stages).
inline void launch_mma(Binder& b, const Gemm& g, const TiledArgs& t_args) {
  const std::string& type_opts = t_args.type_opts;
  const bool conv = t_args.conv, idx32 = t_args.idx32;
  const cl_mem desc = t_args.desc, ktab = t_args.ktab;
  const std::int64_t nbatch = t_args.nbatch;
  const MmaSupport& mma = mma_support(b.device());
  const int mode = g.wq ? 3 : conv ? 2 : (g.sbk == 1 && g.sbn != 1) ? 0 : 1;
  const std::int64_t cus = std::max<std::int64_t>(b.device().info().compute_units, 1);
  auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ((g.M + bm - 1) / bm) * ((g.N + bn - 1) / bn) * nbatch; };
  MmaTile t{128, 128, 64, 32};
  if (g.N <= 64) t = {128, 64, 32, 32};
  else if (g.M <= 64 || tiles(128, 128) < cus) t = {64, 128, 32, 64};
  if (auto forced = mma_tile_override()) t = *forced;
  const int nt = (t.bm / t.wm) * (t.bn / t.wn) * 32;
  const std::int64_t n_tiles = tiles(t.bm, t.bn);
  const KSplit ks = k_split(g.K, n_tiles, mma_fill(nt) * cus, 32);
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
  // Every tile full (rows, columns, whole K slices in every split): the copies need no zero-fill
  // operand (-DM_NOZF, 3% on the lm_head; the emulation has no such instruction).
  const bool full = async && !mma.emulated && g.M % t.bm == 0 && g.N % t.bn == 0 && g.K % 32 == 0;
  const std::int64_t stage_bytes = (t.bm * (32 + 8) + (mode == 0 ? t.bn * (32 + 8) : 32 * (t.bn + 8))) * 2;  // cl/gemm.cl's M_STAGE_U16
  const int stages = async && 3 * stage_bytes + 16 <= std::min<std::int64_t>(49152, static_cast<std::int64_t>(b.device().info().local_mem)) ? 3 : 2;
  const std::string opts = type_opts + (idx32 ? " -DIDX32" : "") + " -DMMA=1 -DMMA_T=" + std::to_string(dt_code(g.a.dtype)) +
                           " -DBMODE=" + std::to_string(mode) + " -DMBM=" + std::to_string(t.bm) + " -DMBN=" + std::to_string(t.bn) +
                           " -DMWM=" + std::to_string(t.wm) + " -DMWN=" + std::to_string(t.wn) + (mma.emulated ? " -DMMA_EMU=1" : "") +
                           (async ? " -DM_ASYNC=1 -DM_STAGES=" + std::to_string(stages) : "") + (full ? " -DM_NOZF=1" : "") + mma_extra_options();
  cl_program p = b.program("gemm", ocl::cl_source::gemm, opts);
  const Typed bias = g.bias ? Typed{*g.bias} : b.none();
  const Typed res = g.residual ? Typed{*g.residual} : b.none();
  cl_mem part = ks.n > 1 ? b.scratch(static_cast<std::size_t>(nbatch * ks.n * g.M * g.N) * sizeof(float)) : b.none().r.mem;
  b.launch(p, "gemm_mma",
           {static_cast<std::size_t>((g.N + t.bn - 1) / t.bn) * static_cast<std::size_t>(nt), static_cast<std::size_t>((g.M + t.bm - 1) / t.bm),
            static_cast<std::size_t>(nbatch * ks.n)},
           {static_cast<std::size_t>(nt), 1, 1}, 3, Ptr{g.a}, Ptr{g.b}, Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0), res,
           static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(g.K), desc,
           static_cast<cl_int>(conv), ktab, static_cast<cl_int>(ks.n), static_cast<cl_long>(ks.chunk), part, static_cast<cl_int>(avec),
           static_cast<cl_int>(bvec));
  if (ks.n > 1)
    b.launch1d(p, "gemm_reduce", nbatch * g.M * g.N, 256, part, static_cast<cl_int>(ks.n), Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0),
               res, static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(nbatch),
               desc, static_cast<cl_int>(conv));
}

// The 64x64-tile kernel over nbatch batches; when that leaves the device idle (few tiles, long K:
// batch-1 convolutions) K is split over work-groups and gemm_reduce adds the splits up.
inline void launch_tiled(Binder& b, const Gemm& g, const TiledArgs& t_args) {
  const bool conv = t_args.conv, idx32 = t_args.idx32;
  const cl_mem desc = t_args.desc, ktab = t_args.ktab;
  const std::int64_t nbatch = t_args.nbatch;
  const std::string opts = t_args.type_opts + (idx32 ? " -DIDX32" : "");
  cl_program p = b.program("gemm", ocl::cl_source::gemm, opts);
  const Typed bias = g.bias ? Typed{*g.bias} : b.none();
  const Typed res = g.residual ? Typed{*g.residual} : b.none();
  const std::int64_t gx = (g.N + 63) / 64, gy = (g.M + 63) / 64;
  const KSplit ks = k_split(g.K, gx * gy * nbatch, 2 * static_cast<std::int64_t>(b.device().info().compute_units), 16);
  const std::int64_t ksplit = ks.n, kchunk = ks.chunk;
  cl_mem part = ksplit > 1 ? b.scratch(static_cast<std::size_t>(nbatch * ksplit * g.M * g.N) * sizeof(float)) : b.none().r.mem;
  b.launch(p, "gemm", {static_cast<std::size_t>(gx) * 16, static_cast<std::size_t>(gy) * 16, static_cast<std::size_t>(nbatch * ksplit)}, {16, 16, 1}, 3,
           Ptr{g.a}, Ptr{g.b}, Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0), res, static_cast<cl_int>(g.residual ? 1 : 0), g.relu,
           static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(g.K), desc, static_cast<cl_int>(conv), ktab,
           static_cast<cl_int>(std::max<std::int64_t>(ksplit, 1)), static_cast<cl_long>(kchunk), part);
  if (ksplit > 1)
    b.launch1d(p, "gemm_reduce", nbatch * g.M * g.N, 256, part, static_cast<cl_int>(ksplit), Ptr{g.c}, bias, static_cast<cl_int>(g.bias ? g.bias_mode : 0),
               res, static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.M), static_cast<cl_long>(g.N), static_cast<cl_long>(nbatch),
               desc, static_cast<cl_int>(conv));
}

// A GEMV's output segments (g and g.more: the q/k/v projections of one x), padded to the three
// that gemv (gemm.cl) and gemv_q (gemv_q.cl) take, with each segment's end row.
struct GemvSegments {
  std::vector<Gemm::Segment> seg;
  std::array<std::int64_t, 3> end{};
};
inline GemvSegments gemv_segments(Binder& b, const Gemm& g) {
  GemvSegments s{{{g.b, g.bias, g.c, g.N}}};
  s.seg.insert(s.seg.end(), g.more.begin(), g.more.end());
  if (s.seg.size() > 3 || (s.seg.size() > 1 && (g.residual || g.up))) b.unsupported("GEMV segments with a residual or gate (npusim bug)");
  for (std::size_t i = 0, at = 0; i < 3; ++i) s.end[i] = static_cast<std::int64_t>(at += static_cast<std::size_t>(i < s.seg.size() ? s.seg[i].N : 0));
  while (s.seg.size() < 3) s.seg.push_back({b.none().r, std::nullopt, b.none().r, 0});
  return s;
}
// Launches a GEMV kernel over `groups` work-groups of 128: the arguments both kernels start with
// (x, the segments, the residual, ReLU, K, vec, the gate's up-projection), then `more`.
template <class... More>
void launch_gemv(Binder& b, cl_program p, const char* fn, std::size_t groups, const Gemm& g, const GemvSegments& s, cl_int vec, More&&... more) {
  auto bias = [&](const Gemm::Segment& sg) { return sg.bias ? Typed{*sg.bias} : b.none(); };
  const auto& sg = s.seg;
  b.launch(p, fn, {groups * 128, 1, 1}, {128, 1, 1}, 1, Ptr{g.a}, static_cast<cl_long>(g.sam),                                  //
           Ptr{sg[0].w}, bias(sg[0]), static_cast<cl_int>(sg[0].bias.has_value()), Ptr{sg[0].c}, static_cast<cl_long>(s.end[0]),  //
           Ptr{sg[1].w}, bias(sg[1]), static_cast<cl_int>(sg[1].bias.has_value()), Ptr{sg[1].c}, static_cast<cl_long>(s.end[1]),  //
           Ptr{sg[2].w}, bias(sg[2]), static_cast<cl_int>(sg[2].bias.has_value()), Ptr{sg[2].c}, static_cast<cl_long>(s.end[2]),  //
           g.residual ? Typed{*g.residual} : b.none(), static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.K), vec,
           g.up ? Ptr{*g.up} : Ptr{b.none().r}, g.up.has_value(), std::forward<More>(more)...);
}

// The float GEMV (gemm.cl's gemv, gemv_rope with a RoPE epilogue): few rows, B read along K (a
// linear layer's weight), 16-byte loads when aligned.
inline void launch_gemv_float(Binder& b, const Gemm& g) {
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.b.dtype}, {"TC", g.c.dtype}});
  const std::size_t ea = dtype_size(g.a.dtype), eb = dtype_size(g.b.dtype);
  bool vec = g.K % 8 == 0 && g.sam % 8 == 0 && g.a.off % 32 == 0 && g.b.off % 32 == 0 && ea >= 2 && eb >= 2 && (!g.up || g.up->off % 32 == 0);
  const GemvSegments s = gemv_segments(b, g);
  for (const auto& sg : s.seg)
    if (sg.N) vec = vec && sg.w.off % 32 == 0 && sg.w.dtype == g.b.dtype;
  cl_program p = b.program("gemm", ocl::cl_source::gemm, opts + " -DGV_M=" + std::to_string(g.M));
  const std::size_t groups = static_cast<std::size_t>((s.end[2] + 3) / 4);
  const Typed nw = g.norm ? Typed{g.norm->w} : b.none();
  const auto eps = static_cast<cl_float>(g.norm ? g.norm->eps : 0.0f);
  const cl_int mid = dt_code(g.norm ? g.norm->mid : DType::f32);
  if (!g.rope) return launch_gemv(b, p, "gemv", groups, g, s, vec, nw, g.norm.has_value(), eps, mid);
  const Gemm::Rope& r = *g.rope;
  if (g.M != 1 || g.more.size() != 2 || r.D % 4 || s.end[0] % r.D || (s.end[1] - s.end[0]) % r.D || (s.end[2] - s.end[1]) % r.D)
    b.unsupported("a gemv_rope over more than one token or heads that are not whole (npusim bug)");
  launch_gemv(b, p, "gemv_rope", groups, g, s, vec, nw, g.norm.has_value(), eps, mid, Typed{r.cos}, Typed{r.sin}, Typed{r.pos}, Typed{r.k_cache},
              Typed{r.v_cache}, dt_code(r.q.dtype), static_cast<cl_long>(r.D), static_cast<cl_long>(r.S), b.errors(), r.check);
}

inline void launch_gemv_q(Binder& b, const Gemm& g);
inline std::string block_format_option(quant::BlockFormat f) { return std::string(" -DGQ_FMT=") + (f == quant::BlockFormat::q8_0 ? "1" : "2"); }

// ---- The matrix-product paths as candidates (target/candidates.hpp) ----------------------------
// One chooser walks gemm_candidates best first for every product the target binds (linears, matmuls,
// convolutions' implicit GEMMs); NPUSIM_OPENCL_SKIP=gemv,gemm_mma leaves paths out (to compare
// them, or to work around one), checked against the names. K split over work-groups is not a path
// of its own: the tiled paths split K themselves when their tiles would leave the device idle.
struct Skip {
  static constexpr const char* env = "NPUSIM_OPENCL_SKIP";
  static constexpr std::string_view target = "OpenCL";
};

// A product as the paths see it.
struct GemmProblem {
  std::int64_t M = 0, N = 0, K = 0;
  DType a = DType::f32, b = DType::f32;  // storage types; b: the value type of packed weights
  std::optional<quant::BlockFormat> packed;
  bool gemv_shape = false;  // gemv_fits: at most 4 rows, B a linear layer's weight, no batch
  bool conv = false;        // a convolution's implicit GEMM
  bool gemv_only = false;   // a gate, a folded RMSNorm, several segments or a RoPE epilogue
  // The device's tensor-core path, asked only when a product gets that far (on NVIDIA the first
  // question runs the probe).
  std::function<MmaSupport()> mma;
};
inline GemmProblem gemm_problem(const Gemm& g, bool conv, std::function<MmaSupport()> mma) {
  GemmProblem p;
  p.M = g.M, p.N = g.N, p.K = g.K, p.a = g.a.dtype, p.b = g.wq ? g.wdt : g.b.dtype, p.packed = g.wq;
  p.gemv_shape = !conv && gemv_fits(g), p.conv = conv;
  p.gemv_only = g.up || g.norm || !g.more.empty() || g.rope;
  p.mma = std::move(mma);
  return p;
}
// What a non-convolution product gives the tiled paths.
inline TiledArgs tiled_args(Binder& b, const Gemm& g) {
  if (g.wq && (g.sbk != 1 || g.sbn != g.K || g.nb0 * g.nb1 != 1)) b.unsupported("packed weights outside a linear layer (npusim bug)");
  TiledArgs t;
  t.type_opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.wq ? g.wdt : g.b.dtype}, {"TC", g.c.dtype}}) + (g.wq ? block_format_option(*g.wq) : "");
  constexpr std::int64_t lim = std::int64_t{1} << 31;
  t.idx32 = (g.M - 1) * g.sam + (g.K - 1) * g.sak < lim && (g.K - 1) * g.sbk + (g.N - 1) * g.sbn < lim;
  I64 d{g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn, g.nb1, g.sa0, g.sa1, g.adiv, g.sb0, g.sb1, g.bdiv, g.sc0, g.sc1};
  t.desc = b.desc(d), t.ktab = b.none().r.mem, t.nbatch = g.nb0 * g.nb1;
  return t;
}

inline bool decline_gemv_shape(const GemmProblem& p, std::string* why) {
  if (p.conv) return kernel_choice::decline(why, "a convolution's implicit GEMM");
  return kernel_choice::decline(why, [&] { return std::to_string(p.M) + " rows, or not a linear layer's weight (a GEMV takes at most 4 rows of one batch)"; });
}

struct GemvQ {
  static constexpr std::string_view name = "gemv_q", what = "q8_0/q4_0 weights, at most 4 rows: a team of 4-32 items per row of W (gemv_q.cl)";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    if (!p.packed) return kernel_choice::decline(why, "float weights");
    if (!p.gemv_shape) return decline_gemv_shape(p, why);
    return true;
  }
  static void bind(Binder& b, const Gemm& g, const TiledArgs*) { launch_gemv_q(b, g); }
};
struct Gemv {
  static constexpr std::string_view name = "gemv", what = "float weights, at most 4 rows: a 32-item team per output, 16-byte loads (gemm.cl's gemv, gemv_rope)";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    if (p.packed) return kernel_choice::decline(why, "packed weights");
    if (!p.gemv_shape) return decline_gemv_shape(p, why);
    return true;
  }
  static void bind(Binder& b, const Gemm& g, const TiledArgs*) { launch_gemv_float(b, g); }
};
struct GemmMma {
  static constexpr std::string_view name = "gemm_mma",
                                    what = "tensor cores (mma.sync through inline PTX, or emulated): f16 or bf16 operands, 128x128 / 64x128 / 128x64 tiles";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    if (p.gemv_only) return kernel_choice::decline(why, "a gate, folded norm, segments or RoPE epilogue: only the GEMVs run them");
    if (p.a != p.b || !is_half(p.a))
      return kernel_choice::decline(why, [&] { return "operands " + std::string(dtype_short_name(p.a)) + " x " + std::string(dtype_short_name(p.b)) + " (it needs both f16 or both bf16)"; });
    if (const MmaSupport m = p.mma ? p.mma() : MmaSupport{}; !m.ok) return kernel_choice::decline(why, [&] { return m.why.empty() ? "no device to ask" : m.why; });
    return true;
  }
  static void bind(Binder& b, const Gemm& g, const TiledArgs* t) { launch_mma(b, g, t ? *t : tiled_args(b, g)); }
};
struct GemmTiled {
  static constexpr std::string_view name = "gemm", what = "64x64 tiles accumulating in f32: any strides, two batch dims, grouped-query broadcast";
  static constexpr bool generic = true;
  static bool applies(const GemmProblem&, std::string*) { return true; }
  static void bind(Binder& b, const Gemm& g, const TiledArgs* t) {
    if (g.up || g.norm || !g.more.empty() || g.rope)
      b.unsupported(std::string("a gated, normalised, segmented or rotating matrix product runs only on a GEMV path") +
                    (kernel_choice::skip_env<Skip>().empty() ? " (npusim bug)" : " (NPUSIM_OPENCL_SKIP leaves it out)"));
    launch_tiled(b, g, t ? *t : tiled_args(b, g));
  }
};
using gemm_candidates = meta::list<GemvQ, Gemv, GemmMma, GemmTiled>;
static_assert(kernel_choice::check_candidate_list<GemmProblem>(gemm_candidates{}), "NPUSIM: gemm_candidates is not a well-formed candidate list");

// Binds g on the first path that takes it; `t`: a convolution's tiled operands (else derived from g).
inline void bind_product(Binder& b, const Gemm& g, const TiledArgs* t = nullptr) {
  const std::size_t i = kernel_choice::choose<Skip, gemm_candidates>(gemm_problem(g, t && t->conv, [&b] { return mma_support(b.device()); }));
  kernel_choice::with_candidate<void, gemm_candidates>(i, [&]<class C>() { C::bind(b, g, t); });
}
inline void bind_gemm(Binder& b, const Gemm& g) { bind_product(b, g); }

// W [N, K] in q8_0/q4_0 blocks in the device layout gemv_q.cl reads: the codes of every block, row
// after row (32 bytes for q8_0, 16 for q4_0: GGML's, without the scale), then every block's f16
// scale in the same order. Packed as core/quant.hpp packs rows, so the values are the same on
// every target.
inline std::vector<std::byte> regroup_device_blocks(quant::BlockFormat f, const std::byte* rows, std::int64_t N, std::int64_t K) {
  const std::int64_t nb = quant::blocks_per_row(K);
  const std::size_t bb = quant::block_bytes(f), cb = bb - 2;
  std::vector<std::byte> out(static_cast<std::size_t>(N * nb) * bb);
  std::byte* scales = out.data() + static_cast<std::size_t>(N * nb) * cb;
  for (std::int64_t i = 0; i < N * nb; ++i) {
    const std::byte* blk = rows + static_cast<std::size_t>(i) * bb;
    std::memcpy(out.data() + static_cast<std::size_t>(i) * cb, blk + 2, cb);
    std::memcpy(scales + static_cast<std::size_t>(i) * 2, blk, 2);
  }
  return out;
}
inline std::vector<std::byte> pack_device_blocks(quant::BlockFormat f, const Tensor& w) {
  const std::int64_t N = w.shape().at(0), K = w.shape().at(1);
  std::vector<std::byte> rows(quant::row_bytes(f, K) * static_cast<std::size_t>(N));
  quant::pack_matrix(f, w, rows.data(), quant::threaded_rows);
  return regroup_device_blocks(f, rows.data(), N, K);
}
// The same layout from rows packed already (u8 [N, row_bytes(K)], a .npubin's), for W [N, K].
inline std::vector<std::byte> regroup_device_blocks(quant::BlockFormat f, const Tensor& rows, const Shape& w) {
  if (w.size() != 2 || rows.dtype() != DType::u8 || rows.shape() != Shape{w[0], static_cast<std::int64_t>(quant::row_bytes(f, w[1]))})
    throw Error(ErrorCode::shape, "packed weight does not hold its tensor's rows of blocks",
                {.expected = std::string(quant::to_string(f)) + " rows of " + to_string(w), .found = std::string(dtype_name(rows.dtype())) + " " + to_string(rows.shape())});
  return regroup_device_blocks(f, static_cast<const std::byte*>(rows.raw()), w[0], w[1]);
}

// Work-items per row of gemv_q (its `team` argument): enough that each takes at most 8 parts of 16
// bytes of a row's codes (q4_0: a block, q8_0: half a block), 4 to 32.
inline int gemv_q_team(quant::BlockFormat f, std::int64_t K) {
  const std::int64_t parts = (K + 31) / 32 * (f == quant::BlockFormat::q8_0 ? 2 : 1);
  int t = 4;
  while (t < 32 && parts > 8 * t) t *= 2;
  return t;
}

// The GEMV over packed blocks (GemvQ), up to 4 rows (decode): gemv_q, a team of 4-32 items per row
// of W (and of the gate's up-projection, in the same pass); more rows (prefill) go to the tiled
// paths (tensor cores where the device has them), which dequantize the blocks as they load each
// tile (gemm.cl, -DGQ_FMT). The RMSNorm fusion stays with the float GEMV (normalising x in every
// team cost more than the launch it saves: docs/benchmarks.md).
inline void launch_gemv_q(Binder& b, const Gemm& g) {
  if (g.norm) b.unsupported("a normalised GEMV over packed weights (npusim bug: linear_group folds no rmsnorm in front of them)");
  const GemvSegments s = gemv_segments(b, g);
  const int team = gemv_q_team(*g.wq, g.K);
  const std::int64_t rows_per_group = 128 / team;
  const bool xvec = g.a.off % 16 == 0 && g.sam % 8 == 0;  // x's 8-value loads aligned
  bool wvec = !g.up || g.up->off % 16 == 0;                 // the codes' 16-byte loads
  for (const auto& sg : s.seg) wvec = wvec && sg.w.off % 16 == 0;
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TC", g.c.dtype}}) + block_format_option(*g.wq) + " -DGV_M=" + std::to_string(g.M);
  launch_gemv(b, b.program("gemv_q", ocl::cl_source::gemv_q, opts), "gemv_q", static_cast<std::size_t>((s.end[2] + rows_per_group - 1) / rows_per_group),
              g, s, static_cast<cl_int>((xvec ? 1 : 0) | (wvec ? 2 : 0)), static_cast<cl_int>(team));
}

// Batched matmul a @ B where B(k, n) of batch z = b[boff(z) + k*sbk + n*sbn]; batch dims broadcast
// (at most two after merging contiguous ones); `group` maps a's dim -3 onto b's by division.
// Its strides and batches from the shapes alone (as stored: bs_stored is B before any transpose), the
// operands' buffers left unset; nullopt for more than two non-contiguous batch dims.
inline std::optional<Gemm> matmul_layout(const Shape& as, const Shape& bs_stored, bool b_transposed, std::int64_t group = 1) {
  Shape bs = bs_stored;
  if (b_transposed && bs.size() >= 2) std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  if (group > 1) bs[bs.size() - 3] *= group;
  ops::MatmulShapes s = ops::matmul_shapes(as, bs);
  Gemm g;
  g.M = s.m, g.N = s.n, g.K = s.k;
  g.sam = s.a_vec ? 0 : s.k, g.sak = 1;
  const std::int64_t bn_phys = b_transposed ? (s.b_vec ? 1 : s.k) : 1, bk_phys = b_transposed ? 1 : (s.b_vec ? 1 : s.n);
  g.sbk = bk_phys, g.sbn = bn_phys;
  if (s.b_vec) g.sbk = 1, g.sbn = 0;
  g.scm = s.n, g.scn = 1;
  // Batch strides in elements, broadcast (0) where a dim is 1.
  Shape ab(as.begin(), as.end() - (s.a_vec ? 1 : 2)), bb(bs_stored.begin(), bs_stored.end() - (s.b_vec ? 1 : 2));
  Strides sa = broadcast_strides(ab, s.batch), sc = contiguous_strides(s.batch);
  Shape bb_logical = bb;
  if (group > 1) bb_logical.back() *= group;
  Strides sb = broadcast_strides(bb_logical, s.batch);
  if (group > 1) {  // physical strides of b's batch (its head dim has H/group entries), 0 where broadcast
    Strides real = contiguous_strides(bb);
    const std::size_t off = s.batch.size() - bb.size();
    for (std::size_t i = 0; i < bb.size(); ++i)
      if (sb[off + i] != 0) sb[off + i] = real[i];
  }
  const std::int64_t am = s.a_vec ? s.k : s.m * s.k, bm = s.b_vec ? s.k : s.k * s.n, cm = s.m * s.n;
  std::vector<std::array<std::int64_t, 4>> dims;  // size, sa, sb, sc (elements)
  for (std::size_t i = 0; i < s.batch.size(); ++i) dims.push_back({s.batch[i], sa[i] * am, sb[i] * bm, sc[i] * cm});
  std::vector<std::array<std::int64_t, 4>> merged;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i][0] == 1) continue;
    const bool last_grouped = group > 1 && i + 1 == dims.size();
    if (!merged.empty() && !last_grouped) {
      auto& m = merged.back();
      if (m[1] == dims[i][1] * dims[i][0] && m[2] == dims[i][2] * dims[i][0] && m[3] == dims[i][3] * dims[i][0]) {
        m = {m[0] * dims[i][0], dims[i][1], dims[i][2], dims[i][3]};
        continue;
      }
    }
    merged.push_back(dims[i]);
  }
  if (merged.size() > 2) return std::nullopt;
  while (merged.size() < 2) merged.insert(merged.begin(), {1, 0, 0, 0});
  g.nb0 = merged[0][0], g.sa0 = merged[0][1], g.sb0 = merged[0][2], g.sc0 = merged[0][3];
  g.nb1 = merged[1][0], g.sa1 = merged[1][1], g.sb1 = merged[1][2], g.sc1 = merged[1][3];
  if (group > 1) g.bdiv = group, g.sb1 = merged[1][2];
  return g;
}
inline void bind_matmul(Binder& b, ir::TensorId ta, ir::TensorId tb, ir::TensorId tc, bool b_transposed, std::int64_t group = 1) {
  std::optional<Gemm> g = matmul_layout(b.shape(ta), b.shape(tb), b_transposed, group);
  if (!g) b.unsupported("matmul with more than two non-contiguous batch dims");
  g->a = b.ref(ta), g->b = b.ref(tb), g->c = b.ref(tc);
  bind_gemm(b, *g);
}

// y = x W^T (+ bias) over x's last dim; `read`: the tensor a reads instead of x (an RMSNorm's
// input where the GEMV normalises it itself; x then has no storage).
// A linear layer's product y = x W^T from the shapes alone (x [..., K], W [N, K]), the buffers unset.
inline Gemm linear_layout(const Shape& x, const Shape& w) {
  Gemm g;
  g.K = x.back(), g.N = w.at(0), g.M = g.K ? numel(x) / g.K : 0;
  g.sam = g.K, g.sak = 1, g.sbk = 1, g.sbn = g.K, g.scm = g.N, g.scn = 1;
  return g;
}
// addmm's bias + x W from the shapes alone (x [M, K], W [K, N]: read along N), the buffers unset.
inline Gemm addmm_layout(const Shape& x, const Shape& w) {
  Gemm g;
  g.M = x.at(0), g.K = x.at(1), g.N = w.at(1);
  g.sam = g.K, g.sak = 1, g.sbk = g.N, g.sbn = 1, g.scm = g.N, g.scn = 1;
  return g;
}

inline Gemm linear_gemm_into(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, TensorRef c,
                             std::optional<ir::TensorId> read = {}) {
  Gemm g = linear_layout(b.shape(x), b.shape(w));
  const PackedWeight* p = b.packed(w);
  g.a = b.ref(read ? *read : x), g.b = p ? p->blocks : b.ref(w), g.c = c;
  if (bias) g.bias = b.ref(*bias);
  if (p) g.wq = p->format, g.wdt = p->dtype;
  return g;
}
inline Gemm linear_gemm(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y,
                        std::optional<ir::TensorId> read = {}) {
  return linear_gemm_into(b, x, w, bias, b.ref(y), read);
}
inline void bind_linear(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y) {
  bind_gemm(b, linear_gemm(b, x, w, bias, y));
}
// A linear's weight as its kernel reads it: the packed blocks where it has them.
inline TensorRef weight_ref(const Binder& b, ir::TensorId w) {
  const PackedWeight* p = b.packed(w);
  return p ? p->blocks : b.ref(w);
}
inline std::optional<ir::TensorId> linear_bias(const ir::Node& n) { return n.inputs.size() > 2 ? std::optional(n.inputs[2]) : std::nullopt; }
// A fused kernel's GEMV (the patterns promise it fits: at most fusion::gemv_rows rows).
inline void bind_gemv(Binder& b, const Gemm& g) {
  if (!gemv_fits(g)) b.unsupported("a " + b.k().kind + " kernel that is no GEMV (npusim bug)");
  bind_gemm(b, g);
}
}  // namespace ocl

template <>
struct kernel<ops::Linear, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    ocl::bind_linear(b, in.at(0), in.at(1), in.size() > 2 ? std::optional(in[2]) : std::nullopt, b.out());
  }
};

template <>
struct kernel<ops::Matmul, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_matmul(b, b.node().inputs.at(0), b.node().inputs.at(1), b.out(), false); }
};

// addmm with alpha = beta = 1 and a 1-D bias (the refusal hook sends others to the fallback).
template <>
struct kernel<ops::Addmm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    ocl::Gemm g = ocl::addmm_layout(b.shape(in.at(1)), b.shape(in.at(2)));
    g.a = b.ref(in[1]), g.b = b.ref(in[2]), g.c = b.ref(b.out());
    g.bias = b.ref(in[0]);
    ocl::bind_gemm(b, g);
  }
};

template <>
struct kernel<fusion::GqaMatmul, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), b.k().bool_param("trans_b"), b.k().int_param("group", 1));
  }
};

template <>
struct kernel<fusion::MatmulTransB, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), true); }
};

// linear -> add(residual) (fusion::LinearAdd): the residual in the GEMV/GEMM epilogue.
template <>
struct kernel<fusion::LinearAdd, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::Node& lin = *b.member<ops::Linear>();
    ocl::Gemm g = ocl::linear_gemm(b, lin.inputs[0], lin.inputs[1], ocl::linear_bias(lin), b.out());
    g.residual = b.ref(b.k().inputs.back());
    ocl::bind_gemm(b, g);
  }
};

// silu(linear(x, Wg)) * linear(x, Wu) (fusion::LinearSiluGate): one gated GEMV reading both weights.
template <>
struct kernel<fusion::LinearSiluGate, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    ocl::Gemm g = ocl::linear_gemm(b, b.in(0), b.in(1), std::nullopt, b.out());
    g.up = ocl::weight_ref(b, b.in(2));
    ocl::bind_gemv(b, g);
  }
};

namespace ocl {
// The product of a linear_group (fusion::LinearGroup, and the GEMV of fusion::LinearGroupRopeKv):
// one segment per linear in node order, the RMSNorm folded in when the kernel has it; out(i, y)
// gives where segment i's output y goes.
inline Gemm linear_group_gemm(Binder& b, const std::function<TensorRef(std::size_t, ir::TensorId)>& out) {
  const Kernel& k = b.k();
  std::vector<const ir::Node*> lins;
  for (auto ni : k.nodes)
    if (const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)]; ops::find_op(n.op_type) == ops::op_index_v<ops::Linear>) lins.push_back(&n);
  const bool norm = k.bool_param("has_norm");
  const ir::Node& first = *lins.at(0);
  const ir::TensorId h = first.inputs[0];
  Gemm g = linear_gemm_into(b, h, first.inputs[1], linear_bias(first), out(0, first.outputs[0]), norm ? std::optional(b.in(0)) : std::nullopt);
  for (std::size_t i = 1; i < lins.size(); ++i) {
    const ir::Node& l = *lins[i];
    g.more.push_back({weight_ref(b, l.inputs[1]), linear_bias(l) ? std::optional(b.ref(l.inputs[2])) : std::nullopt, out(i, l.outputs[0]),
                      b.shape(l.inputs[1]).at(0)});
  }
  if (norm) {
    // The norm's last node multiplies by its weight: the other operand's storage is where the
    // normalised value is rounded before that.
    const ir::Node& wmul = b.g().nodes.at(static_cast<std::size_t>(b.g().tensor(h).producer));
    const ir::TensorId mid = wmul.inputs.at(0) == b.in(1) ? wmul.inputs.at(1) : wmul.inputs.at(0);
    g.norm = Gemm::Norm{b.ref(b.in(1)), static_cast<float>(k.param("eps", 1e-6)), b.storage(mid)};
  }
  return g;
}
}  // namespace ocl

// [RMSNorm ->] up to three linears of one input (fusion::LinearGroup): one GEMV with an output
// segment per linear; with the norm, each work-group reduces x's row itself while its first weight
// words are in flight.
template <>
struct kernel<fusion::LinearGroup, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    ocl::bind_gemv(b, ocl::linear_group_gemm(b, [&](std::size_t, ir::TensorId y) { return b.ref(y); }));
  }
};

// [RMSNorm ->] q/k/v linears -> rope_kv (fusion::LinearGroupRopeKv): linear_group's GEMV, whose
// epilogue rotates q and k and writes k and v into the caches (gemv_rope). The projections are not
// stored: the first segment's output is the rotated q (in the projection's storage type, as
// rope_kv reads it), the others point at the caches, which the epilogue writes at the position.
template <>
struct kernel<fusion::LinearGroupRopeKv, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const std::int64_t at = k.int_param("rope_at", -1);  // cos, then sin, pos, k_cache, v_cache
    if (at < 0 || static_cast<std::size_t>(at) + 5 > k.inputs.size()) b.unsupported("linear_group_rope_kv without its rotary inputs (npusim bug)");
    const auto r0 = static_cast<std::size_t>(at);
    const ir::TensorId cos = b.in(r0), sin = b.in(r0 + 1), pos = b.in(r0 + 2), kc = b.in(r0 + 3), vc = b.in(r0 + 4);
    const ir::Node *ck = nullptr, *cv = nullptr;
    for (auto ni : k.nodes) {
      const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
      if (ops::find_op(n.op_type) == ops::op_index_v<ops::IndexCopy>) (n.inputs.at(0) == kc ? ck : cv) = &n;
    }
    if (!ck || !cv || cv->inputs.at(0) != vc || !(b.ref(ck->outputs[0]) == b.ref(kc)) || !(b.ref(cv->outputs[0]) == b.ref(vc)))
      b.unsupported("linear_group_rope_kv whose caches are not written in place (npusim bug)");
    ir::TensorId q = ir::no_tensor;
    for (auto t : k.outputs)
      if (t != ck->outputs[0] && t != cv->outputs[0]) q = t;
    const Shape& cache = b.shape(kc);
    const std::int64_t D = cache.at(3);
    if (q == ir::no_tensor || b.numel(cos) != D || b.numel(sin) != D || cache[0] != 1)
      b.unsupported("linear_group_rope_kv without one token's rotated q, cos and sin (npusim bug)");
    ocl::Gemm g = ocl::linear_group_gemm(b, [&](std::size_t i, ir::TensorId y) {
      const ocl::TensorRef r = b.ref(i == 0 ? q : i == 1 ? kc : vc);
      return ocl::TensorRef{r.mem, r.off, b.storage(y)};
    });
    g.rope = ocl::Gemm::Rope{b.ref(cos), b.ref(sin), b.ref(pos), b.ref(kc), b.ref(vc), b.ref(q), D, cache[2],
                             b.index_check(*ck, pos, "index_copy", cache[2], true)};
    ocl::bind_gemv(b, g);
  }
};

}  // namespace npusim::inline NPUSIM_ABI
