// Definitions for npusim/target/cpu/kernels/quantized.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"
#include "npusim/target/cpu/kernels/quantized.hpp"
#include "npusim/target/cpu/simd.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

namespace qconv_detail {
inline const std::uint8_t* qconv_rows_scratch(std::int64_t bytes) {
  thread_local std::vector<std::uint8_t> rows;
  if (static_cast<std::int64_t>(rows.size()) < bytes) rows.resize(static_cast<std::size_t>(bytes));
  return rows.data();
}
inline bool qconv_vnni_chosen() {
  return with_candidate<bool, qconv_candidates>(choose<qconv_candidates>(QconvProblem{}), []<class C>() { return C::vnni; });
}

struct ChannelParams {
  const std::int8_t* w;
  const float* scale;
  const std::int32_t* bias;
};
inline ChannelParams channel_params(Ctx& c) {
  const Tensor& w = require_weight(c, c.in(1), "qconv2d/qlinear weight");
  const Tensor& s = require_weight(c, c.in(2), "weight scales");
  const Tensor* b = c.k.inputs.size() == 4 ? &require_weight(c, c.in(3), "bias") : nullptr;
  if (w.dtype() != DType::i8 || s.dtype() != DType::f32 || (b && b->dtype() != DType::i32))
    c.unsupported("int8 weights, float32 scales and int32 bias expected as loaded");
  return {w.data<std::int8_t>(), s.data<float>(), b ? b->data<std::int32_t>() : nullptr};
}
}  // namespace qconv_detail
using namespace qconv_detail;

NPUSIM_FUNC Fn bind_quantize(Ctx& c, const ops::QuantizePerTensor::Attrs& a) {
  const ir::TensorId x = c.in(0), y = c.out();
  const std::byte* px = c.ptr(x);
  auto* py = c.ptr<std::int8_t>(y);
  const DType dx = c.storage(x);
  const std::int64_t n = c.numel(x);
  const quant::Affine af = a.affine();
  const std::string node = c.node().name;
  return [=] {
    parallel_for(n, 1 << 14, [&](std::int64_t b, std::int64_t e) {
      float* row = row_buffer(0, e - b);
      load_row(dx, px + static_cast<std::size_t>(b) * dtype_size(dx), row, e - b);
      const float inv = 1.0f / af.scale;
      std::int64_t i = b;
#if defined(__AVX512F__) && defined(__AVX512BW__)
      // Sixteen at a time, the same float operations (round to nearest even, then the zero point).
      const __m512 vi = _mm512_set1_ps(inv), zp = _mm512_set1_ps(static_cast<float>(af.zero_point));
      const __m512 lo = _mm512_set1_ps(static_cast<float>(af.qmin)), hi = _mm512_set1_ps(static_cast<float>(af.qmax));
      for (; i + 16 <= e; i += 16) {
        const __m512 v = _mm512_loadu_ps(row + (i - b));
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) break;  // the scalar loop names the NaN
        __m512 r = _mm512_add_ps(_mm512_roundscale_ps(_mm512_mul_ps(v, vi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(py + i), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(r)));
      }
#endif
      for (; i < e; ++i) {
        const float v = row[i - b];
        if (std::isnan(v)) throw Error(ErrorCode::runtime, "cannot quantize NaN", {.node = node});
        const float r = std::nearbyint(v * inv) + static_cast<float>(af.zero_point);
        py[i] = static_cast<std::int8_t>(std::clamp(r, static_cast<float>(af.qmin), static_cast<float>(af.qmax)));
      }
    });
  };
}

NPUSIM_FUNC Fn bind_dequantize(Ctx& c, const ops::DequantizePerTensor::Attrs& a) {
  const ir::TensorId x = c.in(0), y = c.out();
  const auto* px = c.ptr<const std::int8_t>(x);
  std::byte* py = c.ptr(y);
  const DType dy = c.storage(y);
  const std::int64_t n = c.numel(x);
  const quant::Affine af = a.affine();
  return [=] {
    parallel_for(n, 1 << 14, [&](std::int64_t b, std::int64_t e) {
      float* row = row_buffer(0, e - b);
      for (std::int64_t i = b; i < e; ++i) row[i - b] = af.scale * static_cast<float>(px[i] - af.zero_point);
      store_row(dy, row, py + static_cast<std::size_t>(b) * dtype_size(dy), e - b);
    });
  };
}

NPUSIM_FUNC Fn bind_qconv2d(Ctx& c, const ops::QConv2d::Attrs& a) {
  const ir::TensorId x = c.in(0), y = c.out();
  const Shape &xs = c.shape(x), &ws = c.shape(c.in(1)), &ys = c.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], kh = ws[2], kw = ws[3], OH = ys[2], OW = ys[3];
  const std::int64_t G = a.groups, Cg = C / G, Kg = K / G;
  const ChannelParams cp = channel_params(c);
  const qconv::ConvLayout l = qconv::conv_layout(Cg, H, W, kh, kw, a);
  struct Group {
    qconv::Packed p;
    qconv::VectorParams v;
  };
  auto groups = c.own(std::vector<Group>());
  for (std::int64_t g = 0; g < G; ++g) {
    // Run t, byte b: kernel row t, tap b / C, channel b % C (merged); else tap t, channel b.
    const std::int8_t* wg = cp.w + g * Kg * Cg * kh * kw;
    auto w_at = [&](std::int64_t k, std::int64_t t, std::int64_t b) -> std::int8_t {
      const std::int64_t i = l.merged ? t : t / kw, j = l.merged ? b / Cg : t % kw, ch = l.merged ? b % Cg : b;
      return wg[((k * Cg + ch) * kh + i) * kw + j];
    };
    qconv::Packed p = qconv::pack(Kg, l.T, l.Cb, w_at, cp.scale + g * Kg, cp.bias ? cp.bias + g * Kg : nullptr, a);
    qconv::VectorParams v = qconv::vector_params(p);
    groups->push_back({std::move(p), std::move(v)});
  }
  auto index = c.own(qconv::conv_index(l, kh, kw, OH, OW, a));
  const auto* px = c.ptr<const std::int8_t>(x);
  auto* py = c.ptr<std::int8_t>(y);
  const bool vnni = qconv_vnni_chosen();
  const auto zx = static_cast<std::int32_t>(a.x_zero_point);
  // Channels last (layout.hpp): the input's pixels are contiguous, the output's channels too.
  const bool in_nhwc = c.is_channels_last(x), out_nhwc = c.is_channels_last(y);
  if ((in_nhwc || out_nhwc) && G != 1) c.unsupported("a grouped int8 convolution on channels-last tensors (npusim bug: layout.hpp)");
  return [=] {
    auto* img = const_cast<std::uint8_t*>(qconv_rows_scratch(l.image_bytes()));
    const qconv::Problem pr = out_nhwc ? qconv::Problem{OH * OW, index->data(), 1, K, true} : qconv::Problem{OH * OW, index->data(), OH * OW, 1, false};
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t g = 0; g < G; ++g) {
        const std::int8_t* xn = in_nhwc ? px + n * H * W * C : px + (n * C + g * Cg) * H * W;
        const bool in_place = in_nhwc && l.in_place();
        if (!in_place) qconv::to_image(xn, in_nhwc, l, zx, img);
        qconv::run((*groups)[static_cast<std::size_t>(g)].p, (*groups)[static_cast<std::size_t>(g)].v,
                   in_place ? reinterpret_cast<const std::uint8_t*>(xn) : img, pr,
                   py + (out_nhwc ? n * OH * OW * K : (n * K + g * Kg) * OH * OW), vnni);
      }
  };
}

NPUSIM_FUNC Fn bind_qlinear(Ctx& c, const ops::QLinear::Attrs& a) {
  const ir::TensorId x = c.in(0), y = c.out();
  const std::int64_t Nf = c.shape(c.in(1))[0], Kf = c.shape(c.in(1))[1], M = c.numel(x) / Kf;
  const ChannelParams cp = channel_params(c);
  auto w_at = [&](std::int64_t k, std::int64_t, std::int64_t b) { return cp.w[k * Kf + b]; };
  auto packed = c.own(qconv::pack(Nf, 1, Kf, w_at, cp.scale, cp.bias, a));
  auto vp = c.own(qconv::vector_params(*packed));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(M));
  for (std::int64_t m = 0; m < M; ++m) idx[static_cast<std::size_t>(m)] = m * Kf;
  auto index = c.own(std::move(idx));
  const auto* px = c.ptr<const std::int8_t>(x);
  auto* py = c.ptr<std::int8_t>(y);
  const bool vnni = qconv_vnni_chosen();
  return [=] {
    auto* rows = const_cast<std::uint8_t*>(qconv_rows_scratch(M * Kf + 4));
    for (std::int64_t i = 0; i < M * Kf; ++i) rows[i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(px[i]) ^ 0x80u);
    std::memset(rows + M * Kf, 0, 4);
    const qconv::Problem pr{M, index->data(), 1, Nf};
    qconv::run(*packed, *vp, rows, pr, py, vnni);
  };
}

NPUSIM_FUNC Fn bind_qadd(Ctx& c, const ops::QAdd::Attrs& a) {
  const auto* pa = c.ptr<const std::int8_t>(c.in(0));
  const auto* pb = c.ptr<const std::int8_t>(c.in(1));
  auto* py = c.ptr<std::int8_t>(c.out());
  const std::int64_t n = c.numel(c.out());
  const ops::QAddParams p(a);
  const bool biased = c.is_channels_last(c.out());  // layout.hpp: then its inputs are too
  return [=] {
    parallel_for(n, 1 << 14, [&](std::int64_t b, std::int64_t e) {
      qconv::add(p, pa + b, pb + b, py + b, e - b, biased);
    });
  };
}

NPUSIM_FUNC Fn bind_qcat(Ctx& c, const ops::QCat::Attrs& a) {
  const ir::TensorId y = c.out();
  const Shape& ys = c.shape(y);
  const auto rescale = ops::qcat_rescales(a);
  const auto split = ops::cat_split(ys, a.dim);  // not a structured binding: the lambda captures them (Clang 14)
  const std::int64_t outer = split.first, inner = split.second;
  const auto d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(ys.size())));
  struct Part {
    const std::int8_t* x;
    std::int64_t len, at;
    ops::QCatRescale r;
  };
  std::vector<Part> parts;
  std::int64_t at = 0;
  for (std::size_t i = 0; i < c.node().inputs.size(); ++i) {
    const ir::TensorId x = c.node().inputs[i];
    const std::int64_t len = c.shape(x).empty() ? 0 : c.shape(x)[d] * inner;
    parts.push_back({c.ptr<const std::int8_t>(x), len, at, rescale[i]});
    at += len;
  }
  auto* py = c.ptr<std::int8_t>(y);
  const std::int64_t row = ys.empty() ? 0 : ys[d] * inner;
  return [=] {
    for (const Part& p : parts)
      for (std::int64_t o = 0; o < outer; ++o) {
        std::int8_t* dst = py + o * row + p.at;
        const std::int8_t* src = p.x + o * p.len;
        if (p.r.identity) std::memcpy(dst, src, static_cast<std::size_t>(p.len));
        else
          for (std::int64_t j = 0; j < p.len; ++j) dst[j] = p.r(src[j]);
      }
  };
}

NPUSIM_FUNC Fn bind_qmax_pool2d(Ctx& c, const ops::QMaxPool2d::Attrs& a) {
  const ir::TensorId x = c.in(0), y = c.out();
  const Shape &xs = c.shape(x), &ys = c.shape(y);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  const auto* px = c.ptr<const std::int8_t>(x);
  auto* py = c.ptr<std::int8_t>(y);
  // Channels last (layout.hpp: then both are): biased codes, whose unsigned order is the codes'
  // order, a pixel's C channels at a time; else plane by plane.
  const bool nhwc = c.is_channels_last(x);
  if (nhwc != c.is_channels_last(y)) c.unsupported("qmax_pool2d between layouts (npusim bug: layout.hpp)");
  return [=] {
    auto window = [&](std::int64_t oh, std::int64_t ow, auto&& tap) {
      for (std::int64_t i = 0; i < a.kernel_size[0]; ++i) {
        const std::int64_t ih = oh * a.stride[0] - a.padding[0] + i * a.dilation[0];
        if (ih < 0 || ih >= H) continue;
        for (std::int64_t j = 0; j < a.kernel_size[1]; ++j) {
          const std::int64_t iw = ow * a.stride[1] - a.padding[1] + j * a.dilation[1];
          if (iw >= 0 && iw < W) tap(ih, iw);
        }
      }
    };
    if (nhwc) {
      const auto* ux = reinterpret_cast<const std::uint8_t*>(px);
      auto* uy = reinterpret_cast<std::uint8_t*>(py);
      parallel_for(N * OH, 2, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
          const std::int64_t n = r / OH, oh = r % OH;
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            std::uint8_t* o = uy + ((n * OH + oh) * OW + ow) * C;
            std::memset(o, 0, static_cast<std::size_t>(C));
            window(oh, ow, [&](std::int64_t ih, std::int64_t iw) {
              const std::uint8_t* in = ux + ((n * H + ih) * W + iw) * C;
              for (std::int64_t ch = 0; ch < C; ++ch) o[ch] = std::max(o[ch], in[ch]);
            });
          }
        }
      });
      return;
    }
    parallel_for(N * C, 4, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t p = b; p < e; ++p)
        for (std::int64_t oh = 0; oh < OH; ++oh)
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            std::int8_t m = -128;
            window(oh, ow, [&](std::int64_t ih, std::int64_t iw) { m = std::max(m, px[(p * H + ih) * W + iw]); });
            py[(p * OH + oh) * OW + ow] = m;
          }
    });
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
