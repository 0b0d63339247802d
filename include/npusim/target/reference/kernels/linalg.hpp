// Reference kernels: matrix products and convolution through Eigen (float32, Eigen's own
// blocking and threads), convolution as im2col + GEMM per group.
#pragma once

#include <Eigen/Core>

#include "npusim/core/quant.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ref {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;
}  // namespace ref

template <>
struct kernel<ops::Linear, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Linear::Attrs& a, ref::Args& args) {
    if (a.weight_format.empty()) return multiply(args, args.x(1));
    const quant::BlockFormat f = *quant::parse_block_format(a.weight_format);
    const Tensor& w = args.x(1);
    multiply(args, w.dtype() == DType::u8 ? packed_values(f, w, args.x(0).shape().back()) : quantized_values(f, w));
  }
  // Per node (make_node_fn): a quantized weight's values are computed once and kept for as long
  // as the same weight comes (a bound weight: every call). The cache holds the source tensor, so
  // its storage cannot be freed and reused by another tensor while compared against.
  static ref::NodeFn make(const ops::Linear::Attrs& a) {
    if (a.weight_format.empty()) return [](ref::Args& args) { multiply(args, args.x(1)); };
    struct Cache {
      Tensor src, values;
      bool filled = false;
    };
    auto cache = std::make_shared<Cache>();
    const quant::BlockFormat f = *quant::parse_block_format(a.weight_format);
    return [f, cache](ref::Args& args) {
      const Tensor& w = args.x(1);
      if (!cache->filled || cache->src.raw() != w.raw() || cache->src.shape() != w.shape() || cache->src.dtype() != w.dtype())
        cache->values = w.dtype() == DType::u8 ? packed_values(f, w, args.x(0).shape().back()) : quantized_values(f, w), cache->src = w,
        cache->filled = true;
      multiply(args, cache->values);
    };
  }
  // The values of a weight bound already packed (u8 rows of blocks, from a .npubin).
  static Tensor packed_values(quant::BlockFormat f, const Tensor& rows, std::int64_t k) {
    const std::int64_t n = rows.shape().at(0);
    if (!quant::holds_rows(f, rows, {n, k}))
      throw Error(ErrorCode::shape, "packed linear weight does not hold rows of blocks of the input's width",
                  {.expected = std::string(quant::to_string(f)) + " rows of K = " + std::to_string(k), .found = "u8 " + to_string(rows.shape())});
    Tensor r = Tensor::empty(DType::f32, {n, k});
    const auto* src = static_cast<const std::byte*>(rows.raw());
    quant::threaded_rows(n, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i)
        quant::dequantize_row(f, src + static_cast<std::size_t>(i) * static_cast<std::size_t>(rows.shape()[1]),
                              std::span<float>(r.data<float>() + i * k, static_cast<std::size_t>(k)));
    });
    return r;
  }
  // y = x w^T (+ bias), in f32.
  static void multiply(ref::Args& args, const Tensor& w) {
    const Tensor& x = args.x(0);
    Tensor& y = args.alloc(0);
    const std::int64_t k = x.shape().back(), n = w.shape()[0], m = x.numel() / std::max<std::int64_t>(k, 1);
    ref::MapC X(x.data<float>(), m, k), W(w.data<float>(), n, k);
    ref::Map Y(y.data<float>(), m, n);
    Y.noalias() = X * W.transpose();
    if (args.in.size() == 3) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(args.x(2).data<float>(), n);
  }
  // A quantized weight computes as its blocks' values: quantized, then dequantized, in f32 (rows
  // spread over threads: a 1.5B model's weights are quantized in seconds, not minutes).
  static Tensor quantized_values(quant::BlockFormat f, const Tensor& w) {
    const std::int64_t n = w.shape()[0], k = w.shape()[1];
    Tensor r = Tensor::empty(DType::f32, w.shape());
    quant::threaded_rows(n, [&](std::int64_t lo, std::int64_t hi) {
      std::vector<std::byte> row(quant::row_bytes(f, k));
      for (std::int64_t i = lo; i < hi; ++i) {
        std::span<const float> src(w.data<float>() + i * k, static_cast<std::size_t>(k));
        std::span<float> dst(r.data<float>() + i * k, static_cast<std::size_t>(k));
        try {
          quant::quantize_row(f, src, row.data());
        } catch (const Error& err) {
          throw Error(err.code(), err.message() + " in row " + std::to_string(i), err.context());
        }
        quant::dequantize_row(f, row.data(), dst);
      }
    });
    return r;
  }
};

template <>
struct kernel<ops::Matmul, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Matmul::Attrs&, ref::Args& args) {
    const Tensor &a = args.x(0), &b = args.x(1);
    Tensor& y = args.alloc(0);
    ops::MatmulShapes s = ops::matmul_shapes(a.shape(), b.shape());
    // Batch offsets of a and b under broadcasting (in units of whole matrices).
    Shape ab(a.shape().begin(), a.shape().end() - (s.a_vec ? 1 : 2));
    Shape bb(b.shape().begin(), b.shape().end() - (s.b_vec ? 1 : 2));
    std::array<Strides, 3> st{contiguous_strides(s.batch), broadcast_strides(ab, s.batch), broadcast_strides(bb, s.batch)};
    const float *pa = a.data<float>(), *pb = b.data<float>();
    float* py = y.data<float>();
    const std::int64_t am = s.m * s.k, bm = s.k * s.n, ym = s.m * s.n;
    strided_for_each_batch(s.batch, st, [&](std::int64_t yo, std::int64_t ao, std::int64_t bo) {
      ref::MapC A(pa + ao * am, s.m, s.k), B(pb + bo * bm, s.k, s.n);
      ref::Map Y(py + yo * ym, s.m, s.n);
      Y.noalias() = A * B;
    });
  }
  template <class F>
  static void strided_for_each_batch(const Shape& batch, const std::array<Strides, 3>& st, F&& f) {
    ref::strided_for_each<3>(batch, st, [&](const std::array<std::int64_t, 3>& o) { f(o[0], o[1], o[2]); });
  }
};

template <>
struct kernel<ops::Addmm, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Addmm::Attrs& a, ref::Args& args) {
    const Tensor &bias = args.x(0), &m1 = args.x(1), &m2 = args.x(2);
    Tensor& y = args.alloc(0);
    const std::int64_t m = m1.shape()[0], k = m1.shape()[1], n = m2.shape()[1];
    ref::Map Y(y.data<float>(), m, n);
    Y.noalias() = static_cast<float>(a.alpha.value) * (ref::MapC(m1.data<float>(), m, k) * ref::MapC(m2.data<float>(), k, n));
    Tensor bb = ref::strided_copy(bias, y.shape(), broadcast_strides(bias.shape(), y.shape()));
    Y += static_cast<float>(a.beta.value) * ref::MapC(bb.data<float>(), m, n);
  }
};

template <>
struct kernel<ops::Conv2d, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Conv2d::Attrs& a, ref::Args& args) {
    const Tensor &x = args.x(0), &w = args.x(1);
    Tensor& y = args.alloc(0);
    const auto [N, C, H, W, K, kh, kw, OH, OW, G, Cg, Kg, rows, cols] = ref::ConvDims(x.shape(), w.shape(), y.shape(), a.groups);
    std::vector<float> col(static_cast<std::size_t>(rows * cols));
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t g = 0; g < G; ++g) {
        ref::im2col(px + (n * C + g * Cg) * H * W, Cg, H, W, kh, kw, OH, OW, a.stride, a.padding, a.dilation, 0.0f, [](float v) { return v; },
                    col.data());
        ref::MapC Wg(w.data<float>() + g * Kg * rows, Kg, rows), Col(col.data(), rows, cols);
        ref::Map Yg(py + (n * K + g * Kg) * cols, Kg, cols);
        Yg.noalias() = Wg * Col;
      }
    }
    if (args.in.size() == 3) {
      const float* b = args.x(2).data<float>();
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t k = 0; k < K; ++k)
          for (std::int64_t i = 0; i < cols; ++i) py[(n * K + k) * cols + i] += b[k];
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
