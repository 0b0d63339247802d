// kernel<Op, OpenCLTarget> and kernel<Pattern, OpenCLTarget>: each binds a program kernel to its
// launches (cl/*.cl). Pointwise ops, their fused chains, add+ReLU and SiLU*gate run as one small
// pointwise program (an instruction list interpreted per element, internal values rounded to their
// planned storage type as the model would); movement ops are strided copies; matrix products are
// tiled GEMM or, for a few rows (decode), GEMV; convolution is implicit GEMM.
#pragma once

#include <limits>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/mma.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {

using I64 = std::vector<std::int64_t>;
inline I64 to_i64(const Strides& s) { return I64(s.begin(), s.end()); }

// ---- strided copies --------------------------------------------------------------------------------
inline void copy(Binder& b, TensorRef src, TensorRef dst, const Shape& shape, const Strides& sst, std::int64_t soff, const Strides& dst_st,
                 std::int64_t doff) {
  I64 d{static_cast<std::int64_t>(shape.size()), soff, doff};
  d.insert(d.end(), shape.begin(), shape.end());
  d.insert(d.end(), sst.begin(), sst.end());
  d.insert(d.end(), dst_st.begin(), dst_st.end());
  const std::int64_t n = npusim::numel(shape);
  if (n == 0) return;
  b.launch1d(b.program("generic", ocl::cl_source::generic), "copy_strided", n, 256, Ptr{src}, dt_code(src.dtype), Ptr{dst}, dt_code(dst.dtype), b.desc(d),
             static_cast<cl_long>(n));
}
// Whole-tensor copy (with dtype conversion).
inline void copy_all(Binder& b, ir::TensorId from, ir::TensorId to) {
  const Shape& s = b.shape(to);
  copy(b, b.ref(from), b.ref(to), s, contiguous_strides(s), 0, contiguous_strides(s), 0);
}

// ---- pointwise programs ------------------------------------------------------------------------------
enum PwOp : int {
  pw_const = 0, pw_relu, pw_silu, pw_neg, pw_abs, pw_rsqrt, pw_sqrt, pw_recip, pw_cos, pw_sin, pw_exp, pw_log, pw_tanh, pw_erf,
  pw_sigmoid, pw_gelu, pw_hardtanh, pw_hardswish, pw_hardsigmoid, pw_leaky, pw_clamp, pw_pow,
  pw_add = 30, pw_sub, pw_rsub, pw_mul, pw_div, pw_max, pw_min, pw_gt, pw_lt, pw_ge, pw_le, pw_eq, pw_ne, pw_where, pw_cast
};

struct PwProgram {
  std::vector<cl_int> code;  // op, dst, a, b, c
  std::vector<cl_float> imm;
  int regs = 0;
  int emit(int op, int a = 0, int b = 0, int c = 0, double i0 = 0, double i1 = 0) {
    code.insert(code.end(), {op, regs, a, b, c});
    imm.push_back(static_cast<float>(i0)), imm.push_back(static_cast<float>(i1));
    return regs++;
  }
};

// Emits the instructions of one member node; `reg(t)` gives the register holding tensor t.
inline int emit_node(PwProgram& p, const ir::Node& n, const std::function<int(ir::TensorId)>& reg) {
  const std::size_t idx = ops::require_op(n);
  auto in = [&](std::size_t i) { return reg(n.inputs.at(i)); };
  return ops::dispatch_op<int>(idx, [&]<class Op>() -> int {
    auto a = ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type);
    using namespace ops;
    if constexpr (meta::contains_v<Op, unary_ops>) {
      constexpr std::pair<std::string_view, int> table[] = {
          {"relu", pw_relu}, {"silu", pw_silu}, {"neg", pw_neg}, {"abs", pw_abs}, {"rsqrt", pw_rsqrt}, {"sqrt", pw_sqrt},
          {"reciprocal", pw_recip}, {"cos", pw_cos}, {"sin", pw_sin}, {"exp", pw_exp}, {"log", pw_log}, {"tanh", pw_tanh},
          {"erf", pw_erf}, {"sigmoid", pw_sigmoid}, {"hardswish", pw_hardswish}, {"hardsigmoid", pw_hardsigmoid}};
      if constexpr (std::is_same_v<Op, Gelu>) return p.emit(pw_gelu, in(0), 0, 0, a.approximate == "tanh" ? 1.0 : 0.0);
      else if constexpr (std::is_same_v<Op, Hardtanh>) return p.emit(pw_hardtanh, in(0), 0, 0, a.min_val, a.max_val);
      else if constexpr (std::is_same_v<Op, LeakyRelu>) return p.emit(pw_leaky, in(0), 0, 0, a.negative_slope);
      else if constexpr (std::is_same_v<Op, Clamp>)
        return p.emit(pw_clamp, in(0), 0, 0, a.min ? a.min->value : -INFINITY, a.max ? a.max->value : INFINITY);
      else if constexpr (std::is_same_v<Op, ClampMin>) return p.emit(pw_clamp, in(0), 0, 0, a.min.value, INFINITY);
      else if constexpr (std::is_same_v<Op, PowScalar>) return p.emit(pw_pow, in(0), 0, 0, a.exponent.value);
      else {
        for (auto [name, op] : table)
          if (name == Op::id) return p.emit(op, in(0));
        throw Error(ErrorCode::unsupported, "no pointwise code for " + std::string(Op::id));
      }
    } else if constexpr (meta::contains_v<Op, binary_ops>) {
      constexpr std::pair<std::string_view, int> table[] = {{"add", pw_add}, {"sub", pw_sub}, {"rsub", pw_rsub}, {"mul", pw_mul}, {"div", pw_div},
                                                            {"maximum", pw_max}, {"minimum", pw_min}, {"gt", pw_gt}, {"lt", pw_lt}, {"ge", pw_ge},
                                                            {"le", pw_le}, {"eq", pw_eq}, {"ne", pw_ne}};
      int x = in(0), y = n.inputs.size() == 2 ? in(1) : p.emit(pw_const, 0, 0, 0, a.other->value);
      for (auto [name, op] : table)
        if (name == Op::id) return p.emit(op, x, y, 0, a.alpha.value);
      throw Error(ErrorCode::unsupported, "no pointwise code for " + std::string(Op::id));
    } else if constexpr (std::is_same_v<Op, Where>) {
      return p.emit(pw_where, in(0), in(1), in(2));
    } else if constexpr (std::is_same_v<Op, ToDtype>) {
      return in(0);  // the cast itself is the rounding to the output's storage, emitted by the caller
    } else {
      throw Error(ErrorCode::unsupported, "op " + std::string(Op::id) + " is not pointwise", {.node = n.name});
    }
  });
}

// Binds a kernel whose members are all pointwise (one output of the kernel's output shape).
inline void bind_pointwise(Binder& b) {
  const Kernel& k = b.k();
  const ir::TensorId out = b.out();
  const Shape& os = b.shape(out);
  std::vector<ir::TensorId> ins;
  std::map<ir::TensorId, int> regs;
  PwProgram p;
  for (auto ni : k.nodes)
    for (auto t : b.g().nodes[static_cast<std::size_t>(ni)].inputs)
      if (!regs.count(t) && std::find(k.inputs.begin(), k.inputs.end(), t) != k.inputs.end()) {
        regs[t] = p.regs++;
        ins.push_back(t);
      }
  if (ins.size() > 6) b.unsupported("a pointwise kernel with more than 6 inputs");
  for (auto ni : k.nodes) {
    const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
    int r = emit_node(p, n, [&](ir::TensorId t) {
      auto it = regs.find(t);
      if (it == regs.end()) b.unsupported("pointwise member reads an unknown value (npusim bug)");
      return it->second;
    });
    // Round to the stored type, as the model does after every op (the output is rounded on store).
    if (n.outputs[0] != out) {
      const DType st = b.storage(n.outputs[0]), irt = b.g().tensor(n.outputs[0]).dtype;
      if (is_half(st)) r = p.emit(pw_cast, r, 0, 0, dt_code(st));
      else if (!is_floating(irt)) r = p.emit(pw_cast, r, 0, 0, dt_code(irt));
    }
    regs[n.outputs[0]] = r;
  }
  if (p.regs > 32) b.unsupported("a pointwise chain longer than the program's 32 registers");
  std::vector<cl_int> prog{static_cast<cl_int>(p.code.size() / 5), regs.at(out)};
  prog.insert(prog.end(), p.code.begin(), p.code.end());
  if (p.imm.empty()) p.imm.push_back(0.0f);
  bool contig = true;
  I64 d{static_cast<std::int64_t>(os.size()), static_cast<std::int64_t>(ins.size()), 0, npusim::numel(os)};
  d.insert(d.end(), os.begin(), os.end());
  for (auto t : ins) {
    Strides st = broadcast_strides(b.shape(t), os);
    contig = contig && b.shape(t) == os;
    d.insert(d.end(), st.begin(), st.end());
  }
  d[2] = contig;
  std::array<Typed, 6> a;
  for (std::size_t i = 0; i < 6; ++i) a[i] = i < ins.size() ? b.typed(ins[i]) : b.none();
  b.launch1d(b.program("generic", ocl::cl_source::generic), "pointwise", npusim::numel(os), 256, a[0], a[1], a[2], a[3], a[4], a[5], b.typed(out),
             b.desc(d), b.constant(prog.data(), prog.size() * sizeof(cl_int)), b.constant(p.imm.data(), p.imm.size() * sizeof(cl_float)));
}

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
  int bias_mode = 1;  // per n
  bool relu = false;
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

// gemm_mma (tensor cores) for a product launch_tiled would run, when the device has them and both
// operands are f16 or both bf16. Tile: 128 x 128 (8 warps of 64 x 32) when that fills the device,
// 64 x 128 (4 warps of 32 x 64) for few rows, 128 x 64 (8 warps of 32 x 32) for few columns (the
// small images of a CNN's last stages). Returns false where it does not apply.
inline bool launch_mma(Binder& b, const Gemm& g, const std::string& type_opts, cl_mem desc, bool conv, cl_mem ktab, std::int64_t nbatch, bool idx32) {
  if (g.a.dtype != g.b.dtype || !is_half(g.a.dtype)) return false;
  const MmaSupport& mma = mma_support(b.device());
  if (!mma.ok) return false;
  const int mode = conv ? 2 : (g.sbk == 1 && g.sbn != 1) ? 0 : 1;
  const std::int64_t cus = std::max<std::int64_t>(b.device().info().compute_units, 1);
  auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ((g.M + bm - 1) / bm) * ((g.N + bn - 1) / bn) * nbatch; };
  struct Tile {
    int bm, bn, wm, wn;
  } t{128, 128, 64, 32};
  if (g.N <= 64) t = {128, 64, 32, 32};
  else if (g.M <= 64 || tiles(128, 128) < cus) t = {64, 128, 32, 64};
  const int nt = (t.bm / t.wm) * (t.bn / t.wn) * 32;
  const std::int64_t n_tiles = tiles(t.bm, t.bn);
  const KSplit ks = k_split(g.K, n_tiles, nt == 128 ? 2 * cus : cus, 32);
  auto mult8 = [](std::int64_t v) { return v % 8 == 0; };
  // 16-byte loads where every 8-element chunk of a row starts 16-byte aligned (a convolution's A is
  // its weight, rows of K).
  const bool avec = g.sak == 1 && mult8(g.K) && (g.a.off % 16) == 0 && (conv || (mult8(g.sam) && mult8(g.sa0) && mult8(g.sa1)));
  bool bvec = false;
  if (mode == 0) bvec = mult8(g.K) && mult8(g.sbn) && (g.b.off % 16) == 0 && mult8(g.sb0) && mult8(g.sb1);
  if (mode == 1) bvec = g.sbn == 1 && mult8(g.N) && mult8(g.sbk) && (g.b.off % 16) == 0 && mult8(g.sb0) && mult8(g.sb1);
  const std::string opts = type_opts + (idx32 ? " -DIDX32" : "") + " -DMMA=1 -DMMA_T=" + std::to_string(dt_code(g.a.dtype)) +
                           " -DBMODE=" + std::to_string(mode) + " -DMBM=" + std::to_string(t.bm) + " -DMBN=" + std::to_string(t.bn) +
                           " -DMWM=" + std::to_string(t.wm) + " -DMWN=" + std::to_string(t.wn) + (mma.emulated ? " -DMMA_EMU=1" : "");
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
  return true;
}

// The 64x64-tile kernel over nbatch batches; when that leaves the device idle (few tiles, long K:
// batch-1 convolutions) K is split over work-groups and gemm_reduce adds the splits up. Half
// operands go to the tensor cores where the device has them (launch_mma).
inline void launch_tiled(Binder& b, const Gemm& g, const std::string& type_opts, bool idx32, cl_mem desc, bool conv, cl_mem ktab, std::int64_t nbatch) {
  if (launch_mma(b, g, type_opts, desc, conv, ktab, nbatch, idx32)) return;
  const std::string opts = type_opts + (idx32 ? " -DIDX32" : "");
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

inline void bind_gemm(Binder& b, const Gemm& g) {
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.b.dtype}, {"TC", g.c.dtype}});
  const Typed res = g.residual ? Typed{*g.residual} : b.none();
  // Few rows, B read along K (a linear layer's weight): GEMV, 16-byte loads when aligned.
  if (gemv_fits(g)) {
    const std::size_t ea = dtype_size(g.a.dtype), eb = dtype_size(g.b.dtype);
    bool vec = g.K % 8 == 0 && g.sam % 8 == 0 && g.a.off % 32 == 0 && g.b.off % 32 == 0 && ea >= 2 && eb >= 2 && (!g.up || g.up->off % 32 == 0);
    std::vector<Gemm::Segment> seg{{g.b, g.bias, g.c, g.N}};
    seg.insert(seg.end(), g.more.begin(), g.more.end());
    if (seg.size() > 3 || (seg.size() > 1 && (g.residual || g.up))) b.unsupported("GEMV segments with a residual or gate (npusim bug)");
    std::int64_t total = 0;
    for (const auto& sg : seg) vec = vec && sg.w.off % 32 == 0 && sg.w.dtype == g.b.dtype, total += sg.N;
    std::array<std::int64_t, 3> end{};
    for (std::size_t i = 0, at = 0; i < 3; ++i) end[i] = static_cast<std::int64_t>(at += static_cast<std::size_t>(i < seg.size() ? seg[i].N : 0));
    while (seg.size() < 3) seg.push_back({b.none().r, std::nullopt, b.none().r, 0});
    auto bias = [&](const Gemm::Segment& sg) { return sg.bias ? Typed{*sg.bias} : b.none(); };
    const std::size_t groups = static_cast<std::size_t>((total + 3) / 4);
    cl_program p = b.program("gemm", ocl::cl_source::gemm, opts + " -DGV_M=" + std::to_string(g.M));
    b.launch(p, "gemv", {groups * 128, 1, 1}, {128, 1, 1}, 1, Ptr{g.a}, static_cast<cl_long>(g.sam),                                   //
             Ptr{seg[0].w}, bias(seg[0]), static_cast<cl_int>(seg[0].bias.has_value()), Ptr{seg[0].c}, static_cast<cl_long>(end[0]),  //
             Ptr{seg[1].w}, bias(seg[1]), static_cast<cl_int>(seg[1].bias.has_value()), Ptr{seg[1].c}, static_cast<cl_long>(end[1]),  //
             Ptr{seg[2].w}, bias(seg[2]), static_cast<cl_int>(seg[2].bias.has_value()), Ptr{seg[2].c}, static_cast<cl_long>(end[2]),  //
             res, static_cast<cl_int>(g.residual ? 1 : 0), g.relu, static_cast<cl_long>(g.K), vec, g.up ? Ptr{*g.up} : Ptr{b.none().r},
             g.up.has_value(), g.norm ? Typed{g.norm->w} : b.none(), g.norm.has_value(), static_cast<cl_float>(g.norm ? g.norm->eps : 0.0f),
             dt_code(g.norm ? g.norm->mid : DType::f32));
    return;
  }
  if (g.up || g.norm || !g.more.empty()) b.unsupported("a gated, normalised or segmented matrix product outside GEMV (npusim bug)");
  constexpr std::int64_t lim = std::int64_t{1} << 31;
  const bool idx32 = (g.M - 1) * g.sam + (g.K - 1) * g.sak < lim && (g.K - 1) * g.sbk + (g.N - 1) * g.sbn < lim;
  I64 d{g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn, g.nb1, g.sa0, g.sa1, g.adiv, g.sb0, g.sb1, g.bdiv, g.sc0, g.sc1};
  launch_tiled(b, g, opts, idx32, b.desc(d), false, b.none().r.mem, g.nb0 * g.nb1);
}

// Batched matmul a @ B where B(k, n) of batch z = b[boff(z) + k*sbk + n*sbn]; batch dims broadcast
// (at most two after merging contiguous ones); `group` maps a's dim -3 onto b's by division.
inline void bind_matmul(Binder& b, ir::TensorId ta, ir::TensorId tb, ir::TensorId tc, bool b_transposed, std::int64_t group = 1) {
  const Shape& as = b.shape(ta);
  Shape bs = b.shape(tb);
  if (b_transposed && bs.size() >= 2) std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  if (group > 1) bs[bs.size() - 3] *= group;
  ops::MatmulShapes s = ops::matmul_shapes(as, bs);
  Gemm g;
  g.a = b.ref(ta), g.b = b.ref(tb), g.c = b.ref(tc);
  g.M = s.m, g.N = s.n, g.K = s.k;
  g.sam = s.a_vec ? 0 : s.k, g.sak = 1;
  const std::int64_t bn_phys = b_transposed ? (s.b_vec ? 1 : s.k) : 1, bk_phys = b_transposed ? 1 : (s.b_vec ? 1 : s.n);
  g.sbk = bk_phys, g.sbn = bn_phys;
  if (s.b_vec) g.sbk = 1, g.sbn = 0;
  g.scm = s.n, g.scn = 1;
  // Batch strides in elements, broadcast (0) where a dim is 1.
  Shape ab(as.begin(), as.end() - (s.a_vec ? 1 : 2)), bb(b.shape(tb).begin(), b.shape(tb).end() - (s.b_vec ? 1 : 2));
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
  if (merged.size() > 2) b.unsupported("matmul with more than two non-contiguous batch dims");
  while (merged.size() < 2) merged.insert(merged.begin(), {1, 0, 0, 0});
  g.nb0 = merged[0][0], g.sa0 = merged[0][1], g.sb0 = merged[0][2], g.sc0 = merged[0][3];
  g.nb1 = merged[1][0], g.sa1 = merged[1][1], g.sb1 = merged[1][2], g.sc1 = merged[1][3];
  if (group > 1) g.bdiv = group, g.sb1 = merged[1][2];
  bind_gemm(b, g);
}

// y = x W^T (+ bias) over x's last dim.
inline Gemm linear_gemm(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y) {
  Gemm g;
  g.a = b.ref(x), g.b = b.ref(w), g.c = b.ref(y);
  g.K = b.shape(x).back(), g.N = b.shape(w)[0], g.M = g.K ? b.numel(x) / g.K : 0;
  g.sam = g.K, g.sak = 1, g.sbk = 1, g.sbn = g.K, g.scm = g.N, g.scn = 1;
  if (bias) g.bias = b.ref(*bias);
  return g;
}
inline void bind_linear(Binder& b, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y) {
  bind_gemm(b, linear_gemm(b, x, w, bias, y));
}

}  // namespace ocl

// ---- ops -------------------------------------------------------------------------------------------------
// Pointwise: one program per kernel.
template <class Op>
  requires(Op::op_class == ops::OpClass::elementwise && !std::is_same_v<Op, ops::ToDtype>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_pointwise(b); }
};

template <>
struct kernel<ops::ToDtype, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::copy_all(b, b.node().inputs.at(0), b.out()); }
};

// Views and no-ops move no bytes (the planner gives views their source's storage).
template <class Op>
  requires(meta::contains_v<Op, ops::view_ops> || std::is_same_v<Op, ops::AssertMetadata>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    if (b.k().kind != "view" && !b.k().outputs.empty() && std::is_same_v<Op, ops::GetItem>) b.unsupported("getitem outside a view kernel");
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Transpose> || std::is_same_v<Op, ops::TransposeT> || std::is_same_v<Op, ops::Permute>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& xs = b.shape(x);
    ops::Ints p = Op::perm(b.attrs<Op>(), xs.size());
    Strides cs = contiguous_strides(xs), st(p.size());
    Shape os(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) st[i] = cs[static_cast<std::size_t>(p[i])], os[i] = xs[static_cast<std::size_t>(p[i])];
    ocl::copy(b, b.ref(x), b.ref(b.out()), os, st, 0, contiguous_strides(os), 0);
  }
};

template <>
struct kernel<ops::Expand, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& os = b.shape(b.out());
    ocl::copy(b, b.ref(x), b.ref(b.out()), os, broadcast_strides(b.shape(x), os), 0, contiguous_strides(os), 0);
  }
};

namespace ocl {
// Copies [start, start + len*step) of dim d of x into `to` (shaped like the slice, or squeezed).
inline void slice_to(Binder& b, ir::TensorId x, std::size_t d, std::int64_t start, std::int64_t len, std::int64_t step, ir::TensorId to) {
  Shape s = b.shape(x);
  Strides st = contiguous_strides(s);
  const std::int64_t off = start * st[d];
  s[d] = len, st[d] *= step;
  ocl::copy(b, b.ref(x), b.ref(to), s, st, off, contiguous_strides(s), 0);
}
}  // namespace ocl

template <>
struct kernel<ops::Slice, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::Slice>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    ops::SliceRange r = ops::clamp_slice(b.shape(x)[d], a.start, a.end, a.step);
    ocl::slice_to(b, x, d, r.start, r.length, r.step, b.out());
  }
};

template <>
struct kernel<ops::Select, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::Select>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    ocl::slice_to(b, x, d, ops::Select::resolved_index(a, b.shape(x)[d]), 1, 1, b.out());
  }
};

template <>
struct kernel<ops::Cat, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Shape& os = b.shape(b.out());
    if (npusim::numel(os) == 0) return;
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::Cat>().dim, static_cast<std::int64_t>(os.size())));
    const Strides ost = contiguous_strides(os);
    std::int64_t at = 0;
    for (ir::TensorId t : b.node().inputs) {
      if (ops::Cat::skipped({b.shape(t), DType::f32})) continue;
      ocl::copy(b, b.ref(t), b.ref(b.out()), b.shape(t), contiguous_strides(b.shape(t)), 0, ost, at * ost[d]);
      at += b.shape(t)[d];
    }
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Chunk> || std::is_same_v<Op, ops::Split> || std::is_same_v<Op, ops::Unbind>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(b.shape(x).size())));
    const auto& outs = b.node().outputs;
    std::int64_t at = 0;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      std::int64_t len = 1;
      if constexpr (!std::is_same_v<Op, ops::Unbind>) len = Op::sizes(a, b.shape(x)[d]).at(k);
      if (len > 0) ocl::slice_to(b, x, d, at, len, 1, outs[k]);
      at += len;
    }
  }
};

namespace ocl {
inline void bind_reduce(Binder& b, ir::TensorId x, const std::vector<bool>& red, int op) {
  const Shape& xs = b.shape(x);
  const Strides st = contiguous_strides(xs);
  I64 ks, kst, rs, rst;
  for (std::size_t i = 0; i < xs.size(); ++i)
    (red[i] ? rs : ks).push_back(xs[i]), (red[i] ? rst : kst).push_back(st[i]);
  std::int64_t count = 1;
  for (auto v : rs) count *= v;
  I64 d{static_cast<std::int64_t>(ks.size()), static_cast<std::int64_t>(rs.size()), count};
  for (auto* v : {&ks, &kst, &rs, &rst}) d.insert(d.end(), v->begin(), v->end());
  const std::int64_t nout = b.numel(b.out());
  b.launch1d(b.program("generic", ocl::cl_source::generic), "reduce", nout, 64, b.typed(x), b.typed(b.out()), b.desc(d), static_cast<cl_long>(nout),
             static_cast<cl_int>(op));
}
}  // namespace ocl

template <class Op>
  requires(std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Amax> || std::is_same_v<Op, ops::Amin>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    std::vector<bool> red;
    ops::reduced_shape(b.shape(x), a.dim.value_or(ops::Ints{}), a.keepdim, &red);
    constexpr int op = std::is_same_v<Op, ops::Sum> ? 0 : std::is_same_v<Op, ops::Mean> ? 1 : std::is_same_v<Op, ops::Amax> ? 2 : 3;
    ocl::bind_reduce(b, x, red, op);
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Argmax> || std::is_same_v<Op, ops::Argmin>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<Op>();
    const ir::TensorId x = b.node().inputs.at(0);
    const std::size_t r = b.shape(x).size();
    std::vector<bool> red(r, !a.dim.has_value());
    if (a.dim) red[static_cast<std::size_t>(normalize_dim(*a.dim, static_cast<std::int64_t>(r)))] = true;
    ocl::bind_reduce(b, x, red, std::is_same_v<Op, ops::Argmax> ? 4 : 5);
  }
};

template <class Op>
  requires(std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape& s = b.shape(x);
    const std::size_t d = s.empty() ? 0 : static_cast<std::size_t>(normalize_dim(b.attrs<Op>().dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1, len = s.empty() ? 1 : s[d];
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    b.launch1d(b.program("generic", ocl::cl_source::generic), "softmax", outer * inner, 64, b.typed(x), b.typed(b.out()), static_cast<cl_long>(outer),
               static_cast<cl_long>(len), static_cast<cl_long>(inner), static_cast<cl_int>(Op::log));
  }
};

template <>
struct kernel<ops::LayerNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::LayerNorm>();
    const auto& in = b.node().inputs;
    const std::int64_t n = npusim::numel(Shape(a.normalized_shape.begin(), a.normalized_shape.end()));
    const std::int64_t rows = n ? b.numel(in[0]) / n : 0;
    auto opt = [&](std::size_t i) { return in.size() > i ? b.typed(in[i]) : b.none(); };
    b.launch(b.program("generic", ocl::cl_source::generic), "layernorm", {static_cast<std::size_t>(rows) * 256, 1, 1}, {256, 1, 1}, 1, b.typed(in[0]), opt(1),
             static_cast<cl_int>(in.size() > 1), opt(2), static_cast<cl_int>(in.size() > 2), b.typed(b.out()), static_cast<cl_long>(n),
             static_cast<cl_float>(a.eps));
  }
};

namespace ocl {
inline void bind_batchnorm(Binder& b, const ir::Node& bn, ir::TensorId x, ir::TensorId y, bool relu) {
  auto a = ops::read_attrs<ops::BatchNorm::Attrs>(bn.attrs, bn.op_type);
  const bool affine = bn.inputs.size() == 5;
  const Shape& xs = b.shape(x);
  const std::int64_t C = xs.size() > 1 ? xs[1] : 1, n = npusim::numel(xs), inner = n / std::max<std::int64_t>(xs[0] * C, 1);
  Typed mean = b.typed(bn.inputs[affine ? 3 : 1]), var = b.typed(bn.inputs[affine ? 4 : 2]);
  Typed w = affine ? b.typed(bn.inputs[1]) : b.none(), bias = affine ? b.typed(bn.inputs[2]) : b.none();
  b.launch1d(b.program("generic", ocl::cl_source::generic), "batchnorm", n, 256, b.typed(x), mean, var, w, bias, static_cast<cl_int>(affine), b.typed(y),
             static_cast<cl_long>(n), static_cast<cl_long>(C), static_cast<cl_long>(inner), static_cast<cl_float>(a.eps), relu);
}
}  // namespace ocl

template <>
struct kernel<ops::BatchNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_batchnorm(b, b.node(), b.node().inputs.at(0), b.out(), false); }
};

template <class Op>
  requires(std::is_same_v<Op, ops::MaxPool2d> || std::is_same_v<Op, ops::AvgPool2d> || std::is_same_v<Op, ops::AdaptiveAvgPool2d>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    const Shape &xs = b.shape(x), &ys = b.shape(b.out());
    const std::size_t r = xs.size();
    const std::int64_t H = xs[r - 2], W = xs[r - 1], OH = ys[r - 2], OW = ys[r - 1], NC = npusim::numel(xs) / std::max<std::int64_t>(H * W, 1);
    ocl::I64 d{NC, H, W, OH, OW, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0};
    int kind = 2;
    auto a = b.attrs<Op>();
    if constexpr (!std::is_same_v<Op, ops::AdaptiveAvgPool2d>) {
      d[5] = a.kernel_size[0], d[6] = a.kernel_size[1], d[7] = a.stride[0], d[8] = a.stride[1], d[9] = a.padding[0], d[10] = a.padding[1];
      if constexpr (std::is_same_v<Op, ops::MaxPool2d>) {
        d[11] = a.dilation[0], d[12] = a.dilation[1], kind = 0;
      } else {
        d[13] = a.count_include_pad, d[14] = a.divisor_override.value_or(0), kind = 1;
      }
    }
    b.launch1d(b.program("generic", ocl::cl_source::generic), "pool2d", NC * OH * OW, 64, b.typed(x), b.typed(b.out()), b.desc(d), static_cast<cl_int>(kind));
  }
};

namespace ocl {
inline void gather_rows(Binder& b, ir::TensorId x, ir::TensorId idx, ir::TensorId y, std::size_t d, const char* what, bool negatives) {
  const Shape& s = b.shape(x);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t n = b.numel(idx);
  const cl_int code = b.index_check(b.node(), idx, what, s[d], negatives);
  b.launch1d(b.program("generic", ocl::cl_source::generic), "gather_rows", outer * n * inner, 256, b.typed(x), b.typed(idx), b.typed(y),
             static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(n), static_cast<cl_long>(inner), negatives, b.errors(), code);
}
}  // namespace ocl

template <>
struct kernel<ops::Embedding, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::gather_rows(b, b.node().inputs.at(0), b.node().inputs.at(1), b.out(), 0, "embedding", false); }
};

template <>
struct kernel<ops::IndexSelect, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.node().inputs.at(0);
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::IndexSelect>().dim, static_cast<std::int64_t>(b.shape(x).size())));
    ocl::gather_rows(b, x, b.node().inputs.at(1), b.out(), d, "index_select", true);
  }
};

// index_copy: out = self with rows at `index` replaced. When the executor gave the output self's
// storage (a KV cache read by nothing else), only the new rows are written.
template <>
struct kernel<ops::IndexCopy, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const auto& in = b.node().inputs;
    const ir::TensorId self = in.at(0), idx = in.at(1), src = in.at(2), y = b.out();
    const Shape& s = b.shape(self);
    if (!(b.ref(self) == b.ref(y))) ocl::copy_all(b, self, y);
    if (s.empty()) b.unsupported("index_copy of a 0-d tensor");
    auto d = static_cast<std::size_t>(normalize_dim(b.attrs<ops::IndexCopy>().dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const std::int64_t n = b.numel(idx);
    const cl_int code = b.index_check(b.node(), idx, "index_copy", s[d], true);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "scatter_rows", outer * n * inner, 256, b.typed(src), b.typed(idx), b.typed(y),
               static_cast<cl_long>(outer), static_cast<cl_long>(s[d]), static_cast<cl_long>(n), static_cast<cl_long>(inner), b.errors(), code);
  }
};

template <>
struct kernel<ops::RotaryHop, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId inv = b.node().inputs.at(0), pos = b.node().inputs.at(1);
    const std::int64_t half = b.numel(inv), tokens = b.numel(pos);
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rotary_embedding", tokens * half, 64, b.typed(inv), b.typed(pos), b.typed(b.out(0)),
               b.typed(b.out(1)), static_cast<cl_long>(tokens), static_cast<cl_long>(half));
  }
};

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
    ocl::Gemm g;
    g.a = b.ref(in.at(1)), g.b = b.ref(in.at(2)), g.c = b.ref(b.out());
    g.M = b.shape(in[1])[0], g.K = b.shape(in[1])[1], g.N = b.shape(in[2])[1];
    g.sam = g.K, g.sak = 1, g.sbk = g.N, g.sbn = 1, g.scm = g.N, g.scn = 1;
    g.bias = b.ref(in[0]);
    ocl::bind_gemm(b, g);
  }
};

namespace ocl {
inline void bind_conv(Binder& b, const ir::Node& conv, ir::TensorId y, bool relu, bool has_bias, std::optional<ir::TensorId> residual = {}) {
  auto a = ops::read_attrs<ops::Conv2d::Attrs>(conv.attrs, conv.op_type);
  const ir::TensorId x = conv.inputs.at(0), w = conv.inputs.at(1);
  const Shape &xs = b.shape(x), &ws = b.shape(w), &ys = b.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3], G = a.groups;
  Gemm g;
  g.a = b.ref(w), g.b = b.ref(x), g.c = b.ref(y), g.relu = relu;
  g.M = K / G, g.N = OH * OW, g.K = (C / G) * kh * kw;
  if (has_bias && conv.inputs.size() > 2) g.bias = b.ref(conv.inputs[2]), g.bias_mode = 2;
  if (residual) g.residual = b.ref(*residual);
  const bool pointwise = kh == 1 && kw == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.padding[0] == 0 && a.padding[1] == 0 && G == 1;
  if (pointwise) {  // 1x1: a plain GEMM per image
    g.sam = g.K, g.sak = 1, g.sbk = H * W, g.sbn = 1, g.scm = OH * OW, g.scn = 1;
    g.nb1 = N, g.sb1 = C * H * W, g.sc1 = K * OH * OW;
    bind_gemm(b, g);
    return;
  }
  if (C * H * W >= (std::int64_t{1} << 31) || g.M * g.K >= (std::int64_t{1} << 31)) b.unsupported("a convolution with more than 2^31 input elements per image");
  // Per reduction index k = (c, r, s): the input offset and the window offsets, computed once.
  std::vector<cl_int> tab;
  for (std::int64_t c = 0; c < C / G; ++c)
    for (std::int64_t r = 0; r < kh; ++r)
      for (std::int64_t s = 0; s < kw; ++s)
        tab.insert(tab.end(), {static_cast<cl_int>(c * H * W + r * a.dilation[0] * W + s * a.dilation[1]), static_cast<cl_int>(r * a.dilation[0]),
                               static_cast<cl_int>(s * a.dilation[1]), 0});
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.b.dtype}, {"TC", g.c.dtype}});
  I64 d{C, H, W, OH, OW, kh, kw, a.stride[0], a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], G, K};
  g.bias_mode = 2;
  launch_tiled(b, g, opts, true, b.desc(d), true, b.constant(tab.data(), tab.size() * sizeof(cl_int)), N * G);
}
}  // namespace ocl

template <>
struct kernel<ops::Conv2d, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_conv(b, b.node(), b.out(), false, true); }
};

namespace ocl {
// q [B, Hq, L, D], k/v [B, Hkv, S, D], mask broadcast to [B, Hq, L, S] -> out [B, Hq, L, Dv].
inline void bind_attention(Binder& b, ir::TensorId q, ir::TensorId k, ir::TensorId v, std::optional<ir::TensorId> mask, ir::TensorId out,
                           double scale, bool causal) {
  Shape qs = b.shape(q), ks = b.shape(k), vs = b.shape(v);
  if (qs.size() == 3) qs.insert(qs.begin(), 1), ks.insert(ks.begin(), 1), vs.insert(vs.begin(), 1);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) b.unsupported("attention on tensors that are not rank 3 or 4");
  const std::int64_t B = qs[0], Hq = qs[1], L = qs[2], D = qs[3], S = ks[2], Dv = vs[3], Hkv = ks[1];
  if (Hkv == 0 || Hq % Hkv || D > 256 || Dv > 256) b.unsupported("attention with head dim > 256 or query heads not a multiple of KV heads");
  I64 d{B, Hq, L, S, D, Dv, Hq / Hkv, 0, 0, 0, 0};
  int mask_kind = 0;
  if (mask) {
    Shape full{B, Hq, L, S};
    Shape ms = b.shape(*mask);
    while (ms.size() < 4) ms.insert(ms.begin(), 1);
    Strides st = broadcast_strides(ms, full);
    d[7] = st[0], d[8] = st[1], d[9] = st[2], d[10] = st[3];
    mask_kind = b.storage(*mask) == DType::boolean ? 2 : 1;
  }
  const bool vec = D % 8 == 0 && b.ref(k).off % 32 == 0 && dtype_size(b.storage(k)) >= 2;
  if (b.storage(k) != b.storage(v)) b.unsupported("attention with K and V stored in different types");
  cl_program p = b.program("attention", ocl::cl_source::attention, Binder::type_options({{"TK", b.storage(k)}}));
  // Few query rows (decode): split the keys over work-groups and merge the splits after. At most
  // 32 splits, so a long cache does not multiply the work-groups: a 32k cache has as many as a
  // 2k one, and within a split only the keys up to the last unmasked one are read.
  const std::int64_t rows = B * Hq * L;
  const std::int64_t chunk = rows < 256 ? std::max<std::int64_t>(64, (S + 31) / 32) : std::max<std::int64_t>(S, 1), nsplit = (S + chunk - 1) / chunk;
  cl_mem part = nsplit > 1 ? b.scratch(static_cast<std::size_t>(rows * nsplit * (Dv + 2)) * sizeof(float)) : b.none().r.mem;
  b.launch(p, "attention", {static_cast<std::size_t>(rows * nsplit) * 128, 1, 1}, {128, 1, 1}, 1, b.typed(q), b.ptr(k), b.ptr(v),
           mask ? b.typed(*mask) : b.none(), static_cast<cl_int>(mask_kind), b.typed(out), b.desc(d), static_cast<cl_float>(scale), causal, vec,
           static_cast<cl_int>(nsplit), static_cast<cl_long>(chunk), part);
  if (nsplit > 1)
    b.launch(p, "attention_combine", {static_cast<std::size_t>(rows) * 128, 1, 1}, {128, 1, 1}, 1, part, static_cast<cl_int>(nsplit),
             static_cast<cl_long>(Dv), b.typed(out));
}
}  // namespace ocl

template <>
struct kernel<ops::ScaledDotProductAttention, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::ScaledDotProductAttention>();
    const auto& in = b.node().inputs;
    const double scale = ops::ScaledDotProductAttention::effective_scale(a, b.shape(in[0]).back());
    ocl::bind_attention(b, in[0], in[1], in[2], in.size() > 3 ? std::optional(in[3]) : std::nullopt, b.out(), scale, a.is_causal);
  }
};

// ---- fusion patterns -------------------------------------------------------------------------------------
template <class P>
  requires(std::is_same_v<P, fusion::EltwiseChain> || std::is_same_v<P, fusion::AddRelu> || std::is_same_v<P, fusion::SiluGate>)
struct kernel<P, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_pointwise(b); }
};

template <>
struct kernel<fusion::Attention, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    ocl::bind_attention(b, b.in(0), b.in(1), b.in(2), k.inputs.size() > 3 ? std::optional(b.in(3)) : std::nullopt,
                        b.out(), k.param("scale", 1.0), false);
  }
};

template <>
struct kernel<fusion::GqaMatmul, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::AttrValue* t = b.k().params.find("trans_b");
    ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), t && t->is_bool() && t->as_bool(), b.k().int_param("group", 1));
  }
};

template <>
struct kernel<fusion::MatmulTransB, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_matmul(b, b.in(0), b.in(1), b.out(), true); }
};

template <>
struct kernel<fusion::MaskedSoftmax, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), mask = b.in(1);
    const Shape& xs = b.shape(x);
    Strides ms = broadcast_strides(b.shape(mask), xs);
    ocl::I64 d{static_cast<std::int64_t>(xs.size())};
    d.insert(d.end(), xs.begin(), xs.end());
    d.insert(d.end(), ms.begin(), ms.end());
    const std::int64_t rows = xs.empty() ? 1 : b.numel(x) / xs.back();
    b.launch1d(b.program("generic", ocl::cl_source::generic), "masked_softmax", rows, 64, b.typed(x), b.typed(mask), b.typed(b.out()), b.desc(d),
               static_cast<cl_long>(rows), static_cast<cl_float>(b.k().param("scale", 1.0)));
  }
};

namespace ocl {
// The stored type of the value an RMSNorm's weight multiplies (the model rounds to it first).
inline DType rmsnorm_mid(const Binder& b, const Kernel& k) {
  if (k.inputs.size() < 2) return DType::f32;
  const ir::Node& last = b.g().nodes[static_cast<std::size_t>(k.nodes.back())];
  return b.storage(last.inputs[0] == k.inputs[1] ? last.inputs[1] : last.inputs[0]);
}
}  // namespace ocl

template <>
struct kernel<fusion::RmsNorm, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const bool has_w = k.inputs.size() > 1;
    const ir::TensorId x = b.in(0);
    const std::int64_t n = b.shape(x).back(), rows = n ? b.numel(x) / n : 0;
    const DType mid = ocl::rmsnorm_mid(b, k);
    b.launch(b.program("generic", ocl::cl_source::generic), "rmsnorm", {static_cast<std::size_t>(rows) * 256, 1, 1}, {256, 1, 1}, 1, b.typed(x),
             has_w ? b.typed(b.in(1)) : b.none(), has_w, b.typed(b.out()), static_cast<cl_long>(n), static_cast<cl_float>(k.param("eps", 1e-6)),
             ocl::dt_code(mid));
  }
};

template <>
struct kernel<fusion::Rotary, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const ir::TensorId x = b.in(0), c = b.in(1), s = b.in(2);
    const Shape& xs = b.shape(x);
    Strides cs = broadcast_strides(b.shape(c), xs), ss = broadcast_strides(b.shape(s), xs);
    ocl::I64 d{static_cast<std::int64_t>(xs.size())};
    d.insert(d.end(), xs.begin(), xs.end());
    d.insert(d.end(), cs.begin(), cs.end());
    d.insert(d.end(), ss.begin(), ss.end());
    b.launch1d(b.program("generic", ocl::cl_source::generic), "rotary", b.numel(x), 256, b.typed(x), b.typed(c), b.typed(s), b.typed(b.out()), b.desc(d),
               static_cast<cl_long>(b.numel(x)));
  }
};

template <>
struct kernel<fusion::ConvBnRelu, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    const ir::Node& conv = b.node(0);
    const ir::Node* bn = b.member<ops::BatchNorm>();
    const bool relu = b.member<ops::Relu>() != nullptr;
    if (!bn) {
      ocl::bind_conv(b, conv, b.out(), relu, true);
      return;
    }
    ocl::bind_conv(b, conv, b.out(), false, true);  // conv into the output, then BN (+ReLU) in place
    ocl::bind_batchnorm(b, *bn, b.out(), b.out(), relu);
    (void)k;
  }
};

}  // namespace npusim::inline NPUSIM_ABI
