// What every matrix-product path of the OpenCL target shares (kernels/gemm/*.hpp): a product as
// the binder describes it (Gemm), as the chooser sees it (GemmProblem), the tiled paths' extra
// operands, K split over work-groups, and the GEMV launch both GEMV paths make.
#pragma once

#include "npusim/core/quant_matrix.hpp"
#include "npusim/target/candidates.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/silu_mul.hpp"
#include "npusim/target/opencl/mma.hpp"

#include <functional>

namespace npusim::inline NPUSIM_ABI::ocl {

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
  // A channels-last convolution's implicit im2col A (gemm_mma's -DA_IM2COL, cl/gemm.cl): a is the
  // NHWC image x [images, H, W, C], tab its chunk table (one int4 per 8 channels of K), M the
  // output pixels, N the output channels; b the weight as [Cout][kh][kw][C] rows.
  struct Im2col {
    cl_mem tab = nullptr;
    std::int64_t H = 0, W = 0, C = 0, OW = 0, OHW = 0, sh = 1, sw = 1, ph = 0, pw = 0;
  };
  std::optional<Im2col> im2col;
  // A channels-last convolution (pointwise ones too, which have no im2col): gemm_mma takes its
  // 128x64 tile of 8 warps of 32x32 for it (on the H200, ResNet-50 0.94-1.04 ms against 1.16-1.25
  // with the shape-chosen tiles; docs/benchmarks.md).
  bool channels_last = false;
  int bias_mode = 1;  // per n
  bool relu = false;
  // b, up and more[].w are packed blocks in this format (PackedWeight, gemv_q.cl); wdt is the
  // weights' storage type (what their values are dequantized to).
  std::optional<quant::BlockFormat> wq;
  DType wdt = DType::f32;
  // A folded RMSNorm or a RoPE epilogue: what only the GEMV kernels compute. A gate or more
  // segments (grouped) the GEMVs and the tensor cores compute in one launch, the others apart.
  bool gemv_epilogue() const { return norm || rope; }
  bool grouped() const { return up || !more.empty(); }
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

// A grouped product as its products apart (each a launch of `one`), where one launch cannot take it:
// every segment by itself; a gate's two products into transient buffers (stored in C's type, as
// the fused kernels round them), then silu_mul.
template <class One>
void bind_apart(Binder& b, const Gemm& g, One&& one) {
  if (g.norm || g.rope) b.unsupported("a normalised or rotating matrix product runs only on a GEMV path (npusim bug)");
  Gemm g0 = g;
  g0.more.clear(), g0.up.reset();
  if (g.up) {
    const std::size_t bytes = static_cast<std::size_t>(g.M * g.N) * dtype_size(g.c.dtype);
    const TensorRef out = g.c;
    g0.c = {b.reusable(101, bytes), 0, g.c.dtype};
    one(g0);
    Gemm gu = g0;
    gu.b = *g.up, gu.c = {b.reusable(102, bytes), 0, g.c.dtype};
    one(gu);
    launch_silu_mul(b, Typed{g0.c}, Typed{gu.c}, Typed{out}, g.M * g.N, dt_code(g.c.dtype));  // f32: rounding to it changes nothing
    return;
  }
  one(g0);
  for (const Gemm::Segment& s : g.more) {
    Gemm gs = g0;
    gs.b = s.w, gs.bias = s.bias, gs.c = s.c, gs.N = s.N, gs.scm = s.N;
    one(gs);
  }
}

inline std::string block_format_option(quant::BlockFormat f) { return std::string(" -DGQ_FMT=") + (f == quant::BlockFormat::q8_0 ? "1" : "2"); }

// ---- The matrix-product paths as candidates (target/candidates.hpp) ----------------------------
// One chooser walks gemm_candidates (gemm/candidates.hpp) best first for every product the target
// binds (linears, matmuls, convolutions' implicit GEMMs); each path is a type in a file of its own
// (gemv_q.hpp, gemv.hpp, gemm_mma.hpp, gemm_tiled.hpp). NPUSIM_OPENCL_SKIP=gemv,gemm_mma leaves
// paths out (to compare them, or to work around one), checked against the names. K split over
// work-groups is not a path of its own: the tiled paths split K themselves when their tiles would
// leave the device idle.
struct Skip {
  static constexpr const char* env = "NPUSIM_OPENCL_SKIP";
  static constexpr std::string_view target = "OpenCL";
};

// Which paths a kernel's product may take, as each kernel<X, OpenCLTarget> that binds one declares
// (`static constexpr Product product`): any; grouped (a gate or several segments: the GEMVs and
// the tensor cores in one launch, the 64x64 tiles apart); or only a GEMV's (a folded RMSNorm or a
// RoPE epilogue, which only the GEMV kernels compute; a linear_group with its norm). explain
// --kernels reads it where the binder has the Gemm's fields (GemmProblem::gemv_only, grouped).
enum class Product { any, grouped, gemv_only };

// A product as the paths see it.
struct GemmProblem {
  std::int64_t M = 0, N = 0, K = 0;
  DType a = DType::f32, b = DType::f32;  // storage types; b: the value type of packed weights
  std::optional<quant::BlockFormat> packed;
  bool gemv_shape = false;  // gemv_fits: at most 4 rows, B a linear layer's weight, no batch
  bool conv = false;        // a convolution's implicit GEMM
  bool gemv_only = false;   // a folded RMSNorm or a RoPE epilogue
  bool grouped = false;     // a gate or several segments
  bool im2col = false;      // a channels-last convolution's gathered A (the tensor cores only)
  // The device's tensor-core path, asked only when a product gets that far (on NVIDIA the first
  // question runs the probe).
  std::function<MmaSupport()> mma;
};
inline GemmProblem gemm_problem(const Gemm& g, bool conv, std::function<MmaSupport()> mma) {
  GemmProblem p;
  p.M = g.M, p.N = g.N, p.K = g.K, p.a = g.a.dtype, p.b = g.wq ? g.wdt : g.b.dtype, p.packed = g.wq;
  conv = conv || g.im2col.has_value();
  p.gemv_shape = !conv && gemv_fits(g), p.conv = conv, p.im2col = g.im2col.has_value();
  p.gemv_only = g.gemv_epilogue(), p.grouped = g.grouped();
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
  const std::vector<std::int64_t> d{g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn, g.nb1, g.sa0, g.sa1, g.adiv, g.sb0, g.sb1, g.bdiv, g.sc0, g.sc1};
  t.desc = b.desc(d), t.ktab = b.none().r.mem, t.nbatch = g.nb0 * g.nb1;
  return t;
}

inline bool decline_gemv_shape(const GemmProblem& p, std::string* why) {
  if (p.conv) return kernel_choice::decline(why, "a convolution's implicit GEMM");
  return kernel_choice::decline(why, [&] { return std::to_string(p.M) + " rows, or not a linear layer's weight (a GEMV takes at most 4 rows of one batch)"; });
}
}  // namespace npusim::inline NPUSIM_ABI::ocl
