// Matrix kernels: linear (weights packed once, GEMM or weight-streaming GEMV), matmul and the
// grouped/transposed variants between activations (Eigen on float32 copies), addmm, and conv2d
// by pixel blocks (f32: AVX-512 strips, conv_f32.hpp; bf16: AMX tiles, conv_amx.hpp, or AVX-512
// BF16 dot products, conv_dpbf16.hpp, 3x3 stride-1 ones by Winograd F(2x2, 3x3) on them,
// conv_winograd.hpp; otherwise im2col + packed GEMM), depthwise convs direct.
#pragma once

#include <Eigen/Core>

#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/conv_amx.hpp"
#include "npusim/target/cpu/conv_dpbf16.hpp"
#include "npusim/target/cpu/conv_winograd.hpp"
#include "npusim/target/cpu/conv_f32.hpp"
#include "npusim/target/cpu/conv_nchwc.hpp"
#include "npusim/target/cpu/gemm.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// A weight's bound tensor, required for packing.
inline const Tensor& require_weight(Ctx& c, ir::TensorId t, const char* what) {
  const Tensor* w = c.weight(t);
  if (!w) c.unsupported(std::string(what) + " must be a weight (constant at load time) to be packed");
  return *w;
}

inline std::shared_ptr<std::vector<float>> f32_copy(Ctx& c, ir::TensorId t) {
  const Tensor& w = require_weight(c, t, "bias");
  Tensor f = w.to(DType::f32);
  return c.own(std::vector<float>(f.data<float>(), f.data<float>() + f.numel()));
}

// y[..., N] = x[..., K] W[N, K]^T + b
inline Fn bind_linear(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, bool relu = false) {
  const Tensor& wt = require_weight(c, w, "linear weight");
  const std::int64_t N = wt.shape()[0], K = wt.shape()[1], M = c.numel(x) / K;
  auto packed = c.own(pack_b(wt.raw(), wt.dtype(), K, N, true));
  auto b = bias ? f32_copy(c, *bias) : nullptr;
  GemmScratch lay = GemmScratch::layout(M, K, N);
  auto pool = c.need_scratch(lay.bytes());
  AView a{c.ptr(x), c.storage(x), K, false};
  CView cv{c.ptr(y), c.storage(y), N, false};
  Epilogue ep{b ? b->data() : nullptr, relu};
  return [=] { gemm(a, M, *packed, cv, ep, lay, pool->get()); };
}

// Batched matmul between activations through Eigen on float32 copies. B optionally transposed
// (K is its last dim) and grouped (one B per `group` consecutive A batches).
inline Fn bind_matmul_dense(Ctx& c, ir::TensorId a, ir::TensorId b, ir::TensorId y, bool trans_b, std::int64_t group) {
  const Shape &as = c.shape(a), &bs = c.shape(b);
  Shape beff = bs;
  if (trans_b && beff.size() >= 2) std::swap(beff[beff.size() - 1], beff[beff.size() - 2]);
  if (group > 1) {
    if (bs.size() != 4) c.unsupported("grouped matmul expects 4-D operands");
    beff[1] *= group;  // [B, Hkv, ...] read as [B, Hkv*G, ...]
  }
  ops::MatmulShapes s = ops::matmul_shapes(as, beff);
  // Matrix offsets (in whole matrices) of A and B for every batch index of the output.
  auto align = [&](Shape sh) {
    sh.resize(sh.size() - (sh.size() >= 2 ? 2 : sh.size()));
    while (sh.size() < s.batch.size()) sh.insert(sh.begin(), 1);
    return sh;
  };
  Shape ab = align(s.a_vec ? Shape{1, as[0]} : as), bsrc = align(s.b_vec ? Shape{bs[0], 1} : bs);
  const Strides ast = contiguous_strides(ab), bst = contiguous_strides(bsrc), cst = contiguous_strides(s.batch);
  std::vector<std::int64_t> a_off, b_off;
  for (std::int64_t i = 0; i < numel(s.batch); ++i) {
    std::int64_t ao = 0, bo = 0, rem = i;
    for (std::size_t d = 0; d < s.batch.size(); ++d) {
      std::int64_t idx = rem / cst[d];
      rem %= cst[d];
      if (ab[d] != 1) ao += idx * ast[d];
      std::int64_t bi = (group > 1 && d + 1 == s.batch.size()) ? idx / group : idx;  // the head dim of [B, H, L, D]
      if (bsrc[d] != 1) bo += bi * bst[d];
    }
    a_off.push_back(ao), b_off.push_back(bo);
  }
  const std::int64_t M = s.m, K = s.k, N = s.n;
  auto scratch = c.need_scratch(static_cast<std::size_t>(M * K + K * N + M * N) * 4);
  const std::byte *pa = c.ptr(a), *pb = c.ptr(b);
  std::byte* py = c.ptr(y);
  const DType da = c.storage(a), db = c.storage(b), dy = c.storage(y);
  return [=] {
    using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    float* base = reinterpret_cast<float*>(scratch->get());
    float *fa = base, *fb = base + M * K, *fy = base + M * K + K * N;
    for (std::size_t i = 0; i < a_off.size(); ++i) {
      load_row(da, pa + static_cast<std::size_t>(a_off[i] * M * K) * dtype_size(da), fa, M * K);
      load_row(db, pb + static_cast<std::size_t>(b_off[i] * K * N) * dtype_size(db), fb, K * N);
      Eigen::Map<const RowMat> A(fa, M, K);
      Eigen::Map<RowMat> Y(fy, M, N);
      if (trans_b) Y.noalias() = A * Eigen::Map<const RowMat>(fb, N, K).transpose();
      else Y.noalias() = A * Eigen::Map<const RowMat>(fb, K, N);
      store_row(dy, fy, py + static_cast<std::size_t>(static_cast<std::int64_t>(i) * M * N) * dtype_size(dy), M * N);
    }
  };
}

// y += r, then relu, over the whole tensor in y's storage (r of y's shape and layout): the
// residual of a conv_add_relu whose convolution wrote y.
inline Fn bind_residual_add(Ctx& c, ir::TensorId y, ir::TensorId r, bool relu) {
  constexpr std::int64_t CH = 1024;
  const std::int64_t n = c.numel(y);
  std::byte* py = c.ptr(y);
  const std::byte* pr = c.ptr(r);
  const DType dy = c.storage(y), dr = c.storage(r);
  return [=] {
    parallel_for((n + CH - 1) / CH, 4, [&](std::int64_t b0, std::int64_t b1) {
      alignas(64) float a[CH], s[CH];
      for (std::int64_t blk = b0; blk < b1; ++blk) {
        const std::int64_t off = blk * CH, len = std::min(CH, n - off);
        load_row(dy, py + static_cast<std::size_t>(off) * dtype_size(dy), a, len);
        load_row(dr, pr + static_cast<std::size_t>(off) * dtype_size(dr), s, len);
        for (std::int64_t i = 0; i < len; ++i) a[i] = relu ? std::max(a[i] + s[i], 0.0f) : a[i] + s[i];
        store_row(dy, a, py + static_cast<std::size_t>(off) * dtype_size(dy), len);
      }
    });
  };
}

// conv2d (+ bias, [+ residual], + relu), per image and group: depthwise direct; otherwise by pixel
// blocks (bf16: AMX tiles, else AVX-512 BF16 dot products, by Winograd where conv_winograd.hpp
// takes the geometry; f32, and f16 widened: AVX-512 strips)
// or im2col + the packed GEMM, writing NCHW; f32
// activations held channel-blocked (layout.hpp) by the blocked kernel. A residual is added in the
// epilogue of the blocked kernel and of the bf16 dot-product ones, otherwise by a pass over the
// output (the rounding of the unfused conv -> add, which the bf16 epilogue keeps).
inline Fn bind_conv(Ctx& c, ir::TensorId x, const Tensor& wt, std::shared_ptr<std::vector<float>> b, ir::TensorId y, const ops::Conv2d::Attrs& at,
                    bool relu, std::optional<ir::TensorId> residual = std::nullopt) {
  const Shape &xs = c.shape(x), &ys = c.shape(y);
  ConvGeom g{xs[0], xs[1], xs[2], xs[3], wt.shape()[0], wt.shape()[2], wt.shape()[3], ys[2], ys[3], at.groups,
             at.stride[0], at.stride[1], at.padding[0], at.padding[1], at.dilation[0], at.dilation[1]};
  const std::int64_t Cg = g.C / g.G, Kg = g.K / g.G, KK = Cg * g.kh * g.kw, M = g.OH * g.OW;
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  const std::size_t ex = dtype_size(dx), ey = dtype_size(dy);
  // bf16 activations on AVX-512 BF16 dot products (below), where AMX is not used; their epilogue
  // adds a residual held in the output's type.
  const bool dp = [&] {
#if defined(NPUSIM_CPU_CONV_DPBF16)
    return dx == DType::bf16 && dpbf16_enabled() && !amx_enabled() && !(Cg == 1 && Kg == 1);
#else
    return false;
#endif
  }();
  if (residual && !c.is_blocked(y) && !(dp && c.storage(*residual) == dy)) {
    Fn conv = bind_conv(c, x, wt, b, y, at, false), add = bind_residual_add(c, y, *residual, relu);
    return [=] { conv(), add(); };
  }
#if defined(NPUSIM_CPU_AVX512)
  // A channel-blocked input or output (layout.hpp blocks only those of f32 single-group convs).
  if (c.is_blocked(x) || c.is_blocked(y)) {
    if (dx != DType::f32 || dy != DType::f32 || g.G != 1) c.unsupported("a blocked activation around a conv the blocked kernel cannot run (npusim bug)");
    auto bc = c.own(make_blocked_conv(g, wt.raw(), wt.dtype(), b ? b->data() : nullptr, relu, c.is_blocked(x), c.is_blocked(y)));
    auto pool = c.need_scratch(bc->scratch_bytes());
    const auto* pr = residual ? c.ptr<const float>(*residual) : nullptr;
    return [=] {
      for (std::int64_t n = 0; n < g.N; ++n)
        blocked_conv(*bc, reinterpret_cast<const float*>(px) + n * g.C * g.H * g.W, reinterpret_cast<float*>(py) + n * g.K * M, pool->get(),
                     pr ? pr + n * g.K * M : nullptr);
    };
  }
#endif
  if (Cg == 1 && Kg == 1) {
    // Depthwise: direct, one channel at a time, float math.
    Tensor wf = wt.to(DType::f32);
    auto wv = c.own(std::vector<float>(wf.data<float>(), wf.data<float>() + wf.numel()));
    auto scratch = c.need_scratch(static_cast<std::size_t>(max_threads()) * static_cast<std::size_t>(g.H * g.W + M) * 4);
    return [=] {
      parallel_for_t(g.N * g.C, 1, [&](int tid, std::int64_t c0, std::int64_t c1) {
        float* in = reinterpret_cast<float*>(scratch->get()) + static_cast<std::size_t>(tid) * static_cast<std::size_t>(g.H * g.W + M);
        float* out = in + g.H * g.W;
        for (std::int64_t nc = c0; nc < c1; ++nc) {
          const std::int64_t ch = nc % g.C;
          load_row(dx, px + static_cast<std::size_t>(nc * g.H * g.W) * ex, in, g.H * g.W);
          const float* wk = wv->data() + ch * g.kh * g.kw;
          for (std::int64_t oh = 0; oh < g.OH; ++oh)
            for (std::int64_t ow = 0; ow < g.OW; ++ow) {
              float s = b ? (*b)[static_cast<std::size_t>(ch)] : 0.0f;
              for (std::int64_t i = 0; i < g.kh; ++i) {
                const std::int64_t ih = oh * g.sh - g.ph + i * g.dh;
                if (ih < 0 || ih >= g.H) continue;
                for (std::int64_t j = 0; j < g.kw; ++j) {
                  const std::int64_t iw = ow * g.sw - g.pw + j * g.dw;
                  if (iw >= 0 && iw < g.W) s += in[ih * g.W + iw] * wk[i * g.kw + j];
                }
              }
              out[oh * g.OW + ow] = relu && s < 0 ? 0.0f : s;
            }
          store_row(dy, out, py + static_cast<std::size_t>(nc * M) * ey, M);
        }
      });
    };
  }
  // Per group gi: C[Kg][M] = W_g[Kg][KK] . im2col(x_g)[KK][M], the weights packed once at load.
  const std::size_t ew = dtype_size(wt.dtype());
  auto pack_groups = [&](auto pack) {
    std::vector<std::shared_ptr<decltype(pack(px))>> v;
    for (std::int64_t gi = 0; gi < g.G; ++gi) v.push_back(c.own(pack(static_cast<const std::byte*>(wt.raw()) + static_cast<std::size_t>(gi * Kg * KK) * ew)));
    return v;
  };
  // The bound kernel: f(group weights, group input planes, group output rows, group bias) for
  // every image and group.
  auto each_group = [=](auto packs, auto f) -> Fn {
    return [=] {
      for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t gi = 0; gi < g.G; ++gi)
          f(*packs[static_cast<std::size_t>(gi)], px + static_cast<std::size_t>((n * g.C + gi * Cg) * g.H * g.W) * ex,
            py + static_cast<std::size_t>((n * g.K + gi * Kg) * M) * ey, b ? b->data() + gi * Kg : nullptr);
    };
  };
#if defined(NPUSIM_CPU_AMX)
  // bf16 activations on an AMX machine: tile products, the weights as bf16 rows.
  if (dx == DType::bf16 && amx_enabled()) {
    auto packs = pack_groups([&](const std::byte* w) { return pack_amx_conv_weights(w, wt.dtype(), Kg, KK); });
    auto pool = c.need_scratch(amx_conv_scratch_bytes(packs[0]->Kp));
    return each_group(packs, [=](const AmxConvWeights& w, const std::byte* in, std::byte* out, const float* bias) {
      amx_conv(g, w, reinterpret_cast<const std::uint16_t*>(in), out, dy, bias, relu, pool->get());
    });
  }
#endif
#if defined(NPUSIM_CPU_CONV_DPBF16)
#if defined(NPUSIM_CPU_CONV_WINOGRAD)
  // 3x3 stride-1 layers by Winograd F(2x2, 3x3) (conv_winograd.hpp).
  if (dp && winograd_used(g)) {
    auto packs = pack_groups([&](const std::byte* w) { return pack_winograd_weights(w, wt.dtype(), Kg, Cg); });
    auto pool = c.need_scratch(winograd_scratch_bytes(packs[0]->KP));
    const std::byte* pr = residual ? c.ptr(*residual) : nullptr;
    return each_group(packs, [=](const WinogradWeights& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_winograd(g, w, reinterpret_cast<const std::uint16_t*>(in), out, dy, bias, relu, pool->get(), pr ? pr + (out - py) : nullptr);
    });
  }
#endif
  // bf16 activations where AMX is not used, on AVX-512 BF16 dot products: pixel blocks gathered as
  // k pairs, the weights as strips of bf16 pairs; small images with channels along the vectors
  // (ResNet on an AMD EPYC: see docs/benchmarks.md).
  if (dp) {
    const bool small = conv_small_image(M);
    auto packs = pack_groups([&](const std::byte* w) { return pack_pair_strips(w, wt.dtype(), Kg, KK, small ? CONV_CV_MR : CONV_MR); });
    auto pool = c.need_scratch(small ? conv_small_scratch_bytes(packs[0]->KP, M) : conv_blocks_scratch_bytes(packs[0]->KP, packs[0]->strips, M));
    const std::byte* pr = residual ? c.ptr(*residual) : nullptr;
    return each_group(packs, [=](const PairStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      const auto* x16 = reinterpret_cast<const std::uint16_t*>(in);
      const void* res = pr ? pr + (out - py) : nullptr;
      if (small) conv_small<ConvDpbf16Step>(g, w, x16, out, dy, bias, relu, pool->get(), res);
      else conv_blocks<ConvDpbf16Step>(g, w, x16, out, dy, bias, relu, pool->get(), res);
    });
  }
#endif
#if defined(NPUSIM_CPU_AVX512)
  // f16 activations, and bf16 where neither AMX nor the dot products are used, kh x kw > 1: the
  // input widened once into f32 scratch, then the f32 kernels below, whose epilogue stores the
  // output's type (ResNet-50 bf16 on an AMD EPYC: its 3x3 layers 0.6-0.7x the time of im2col +
  // GEMM on widened tiles; its 1x1 layers, which the GEMM reads in place, 1.0-1.15x, so they stay
  // there).
  if (dx != DType::f32 && g.kh * g.kw > 1) {
    const bool small = conv_small_image(M);
    auto packs = pack_groups([&](const std::byte* w) { return pack_strips(w, wt.dtype(), Kg, KK, small ? CONV_CV_MR : CONV_MR); });
    const std::size_t conv_bytes =
        ((small ? conv_small_scratch_bytes(KK, M) : conv_blocks_scratch_bytes(KK, packs[0]->strips, M)) + 63) / 64 * 64;
    const std::int64_t xn = g.N * g.C * g.H * g.W;
    auto pool = c.need_scratch(conv_bytes + static_cast<std::size_t>(xn) * 4);
    return [=] {
      std::byte* base = pool->get();
      float* xf = reinterpret_cast<float*>(base + conv_bytes);
      constexpr std::int64_t chunk = 4096;
      parallel_for((xn + chunk - 1) / chunk, 4, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i)
          load_row(dx, px + static_cast<std::size_t>(i * chunk) * ex, xf + i * chunk, std::min(chunk, xn - i * chunk));
      });
      for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t gi = 0; gi < g.G; ++gi) {
          const float* in = xf + (n * g.C + gi * Cg) * g.H * g.W;
          std::byte* out = py + static_cast<std::size_t>((n * g.K + gi * Kg) * M) * ey;
          const float* bias = b ? b->data() + gi * Kg : nullptr;
          const PackedStrips& w = *packs[static_cast<std::size_t>(gi)];
          if (small) conv_small<ConvF32Step>(g, w, in, out, dy, bias, relu, base);
          else conv_blocks<ConvF32Step>(g, w, in, out, dy, bias, relu, base);
        }
    };
  }
  // f32 activations, small images (<= 64 pixels): channels along the vectors, 48-channel strips.
  if (dx == DType::f32 && conv_small_image(M)) {
    auto packs = pack_groups([&](const std::byte* w) { return pack_strips(w, wt.dtype(), Kg, KK, CONV_CV_MR); });
    auto pool = c.need_scratch(conv_small_scratch_bytes(KK, M));
    return each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_small<ConvF32Step>(g, w, reinterpret_cast<const float*>(in), out, dy, bias, relu, pool->get());
    });
  }
  // f32 activations: pixel blocks gathered per thread, 12-channel strips.
  if (dx == DType::f32) {
    auto packs = pack_groups([&](const std::byte* w) { return pack_strips(w, wt.dtype(), Kg, KK, CONV_MR); });
    auto pool = c.need_scratch(conv_blocks_scratch_bytes(KK, packs[0]->strips, M));
    return each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
      conv_blocks<ConvF32Step>(g, w, reinterpret_cast<const float*>(in), out, dy, bias, relu, pool->get());
    });
  }
#endif
  // Otherwise: the whole image's im2col into 32-pixel tiles, then the packed GEMM (6-row strips).
  static_assert(CONV_CB == CONV_PX);
  auto packs = pack_groups([&](const std::byte* w) { return pack_strips(w, wt.dtype(), Kg, KK); });
  const std::int64_t blocks = (M + CONV_CB - 1) / CONV_CB;
  const std::size_t tiles_bytes = (conv_tiles_bytes(KK, M) + 63) / 64 * 64;
  auto pool = c.need_scratch(tiles_bytes + conv_gemm_scratch_bytes());
  // im2col of one block into its tile: row (c, i, j), column = pixel 32 blk + q; the block's runs
  // inside the plane are converted, the rest stays zero.
  auto fill_tile = [=](auto tag, const typename decltype(tag)::T* src0, std::int64_t blk, float* tile) {
    const ConvBlock cb(g, blk, false);
    float* dst = tile;
    for (std::int64_t ch = 0; ch < Cg; ++ch)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j, dst += CONV_CB) {
          std::fill(dst, dst + CONV_CB, 0.0f);
          cb.for_each_run(g, src0 + ch * g.H * g.W, i, j, [&](std::int64_t q, const auto* sp, std::int64_t n) {
            if (g.sw == 1) convert<decltype(tag), SF32>(sp, dst + q, n);
            else
              for (std::int64_t t = 0; t < n; ++t) dst[q + t] = to_f32(tag, sp[t * g.sw]);
          });
        }
  };
  return each_group(packs, [=](const PackedStrips& w, const std::byte* in, std::byte* out, const float* bias) {
    std::byte* base = pool->get();
    float* tiles = reinterpret_cast<float*>(base);
    parallel_for(blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
      visit_float_storage(dx, [&](auto tag) {
        for (std::int64_t blk = b0; blk < b1; ++blk) fill_tile(tag, reinterpret_cast<const typename decltype(tag)::T*>(in), blk, tiles + blk * KK * CONV_CB);
      });
    });
    conv_gemm(w, tiles, M, out, dy, M, bias, relu, base + tiles_bytes);
  });
}

// A convolution's weights and f32 bias, with a BatchNorm the compiler could not fold (e.g. a
// shared conv output) folded in here, once, in double.
struct ConvWeights {
  Tensor w;
  std::shared_ptr<std::vector<float>> bias;  // may be null
};
inline ConvWeights conv_weights(Ctx& c, const ir::Node& conv, const ir::Node* bn) {
  const auto bias = conv.inputs.size() == 3 ? std::optional(conv.inputs[2]) : std::nullopt;
  if (!bn) return {require_weight(c, conv.inputs[1], "conv weight"), bias ? f32_copy(c, *bias) : nullptr};
  const bool affine = bn->inputs.size() == 5;
  const double eps = ops::read_attrs<ops::BatchNorm::Attrs>(bn->attrs, bn->op_type).eps;
  auto f64 = [&](ir::TensorId t) { return require_weight(c, t, "batch_norm parameter").to(DType::f64); };
  Tensor w = f64(conv.inputs[1]), mean = f64(bn->inputs[affine ? 3 : 1]), var = f64(bn->inputs[affine ? 4 : 2]);
  const std::int64_t cout = w.shape()[0], per = w.numel() / cout;
  Tensor wf = Tensor::empty(DType::f32, w.shape());
  auto b = c.own(std::vector<float>(static_cast<std::size_t>(cout)));
  Tensor cb = bias ? f64(*bias) : Tensor(), gm = affine ? f64(bn->inputs[1]) : Tensor(), bt = affine ? f64(bn->inputs[2]) : Tensor();
  for (std::int64_t o = 0; o < cout; ++o) {
    const double sc = (gm.defined() ? gm.data<double>()[o] : 1.0) / std::sqrt(var.data<double>()[o] + eps);
    for (std::int64_t i = 0; i < per; ++i) wf.data<float>()[o * per + i] = static_cast<float>(w.data<double>()[o * per + i] * sc);
    (*b)[static_cast<std::size_t>(o)] =
        static_cast<float>(((cb.defined() ? cb.data<double>()[o] : 0.0) - mean.data<double>()[o]) * sc + (bt.defined() ? bt.data<double>()[o] : 0.0));
  }
  return {*c.own(wf), b};
}

inline Fn bind_conv(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, const ops::Conv2d::Attrs& at, bool relu,
                    std::optional<ir::TensorId> residual = std::nullopt) {
  return bind_conv(c, x, require_weight(c, w, "conv weight"), bias ? f32_copy(c, *bias) : nullptr, y, at, relu, residual);
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
