// Shared pieces of the reference target's kernels: the kernel argument bundle, runtime dtypes
// (the reference computes every float in float32, integers in int64), and strided iteration.
#pragma once

#include <array>
#include <functional>
#include <span>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/ops/op_base.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI {

struct ReferenceTarget;

namespace ref {

// The dtype a tensor of IR dtype `t` has inside the reference target.
constexpr DType runtime_dtype(DType t) {
  if (is_floating(t)) return DType::f32;
  if (t == DType::boolean) return DType::boolean;
  return DType::i64;
}

struct Args {
  std::span<const Tensor> in;            // runtime tensors, one per node input
  std::span<const ops::TensorSpec> in_specs;   // IR specs of the inputs
  std::span<const ops::TensorSpec> out_specs;  // IR specs of the outputs
  std::vector<Tensor>& out;              // kernels fill every entry
  std::vector<bool>& aliased;            // set when out[i] shares storage with an input

  Tensor& alloc(std::size_t i) {
    out[i] = Tensor::empty(runtime_dtype(out_specs[i].dtype), out_specs[i].shape);
    return out[i];
  }
  void alias(std::size_t i, const Tensor& t) {
    out[i] = t.reshaped(out_specs[i].shape);
    aliased[i] = true;
  }
  const Tensor& x(std::size_t i = 0) const { return in[i]; }
};

// A node's kernel call, its attributes parsed (reference_target.hpp declares it too).
using NodeFn = std::function<void(Args&)>;

// Calls f(offsets) for every element of `shape` in row-major order, where offsets[k] is the
// element offset of that index under strides st[k].
template <std::size_t K, class F>
void strided_for_each(const Shape& shape, const std::array<Strides, K>& st, F&& f) {
  const std::int64_t n = numel(shape);
  if (n == 0) return;
  const std::size_t r = shape.size();
  std::array<std::int64_t, K> off{};
  if (r == 0) {
    f(off);
    return;
  }
  const std::int64_t inner = shape[r - 1];
  std::array<std::int64_t, K> ist{};
  for (std::size_t k = 0; k < K; ++k) ist[k] = st[k][r - 1];
  std::vector<std::int64_t> idx(r, 0);
  for (std::int64_t outer = 0, outers = n / inner; outer < outers; ++outer) {
    std::array<std::int64_t, K> o = off;
    for (std::int64_t i = 0; i < inner; ++i) {
      f(o);
      for (std::size_t k = 0; k < K; ++k) o[k] += ist[k];
    }
    for (std::size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      for (std::size_t k = 0; k < K; ++k) off[k] += st[k][d];
      if (idx[d] < shape[d]) break;
      for (std::size_t k = 0; k < K; ++k) off[k] -= st[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Copies `src` (contiguous storage read through `src_strides` at `src_offset`) into a new
// contiguous tensor of shape `shape`; element type preserved.
inline Tensor strided_copy(const Tensor& src, const Shape& shape, const Strides& src_strides, std::int64_t src_offset = 0) {
  Tensor out = Tensor::empty(src.dtype(), shape);
  const std::size_t es = dtype_size(src.dtype());
  const auto* s = static_cast<const std::byte*>(src.raw());
  auto* d = static_cast<std::byte*>(out.raw());
  std::array<Strides, 2> st{contiguous_strides(shape), src_strides};
  visit_dtype(src.dtype(), [&]<class T>() {
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
      auto* dt = reinterpret_cast<T*>(d);
      auto* stp = reinterpret_cast<const T*>(s) + src_offset;
      strided_for_each<2>(shape, st, [&](const std::array<std::int64_t, 2>& o) { dt[o[0]] = stp[o[1]]; });
    } else {
      strided_for_each<2>(shape, st, [&](const std::array<std::int64_t, 2>& o) {
        std::memcpy(d + o[0] * static_cast<std::int64_t>(es), s + (src_offset + o[1]) * static_cast<std::int64_t>(es), es);
      });
    }
  });
  return out;
}

inline std::size_t uidx(std::int64_t i) { return static_cast<std::size_t>(i); }

// A convolution's sizes: input [N, C, H, W], weight [K, C / G, kh, kw], output [N, K, OH, OW];
// per group Cg input and Kg output channels, rows = Cg * kh * kw of im2col, cols = OH * OW.
struct ConvDims {
  std::int64_t N, C, H, W, K, kh, kw, OH, OW, G, Cg, Kg, rows, cols;
  ConvDims(const Shape& x, const Shape& w, const Shape& y, std::int64_t groups)
      : N(x[0]), C(x[1]), H(x[2]), W(x[3]), K(w[0]), kh(w[2]), kw(w[3]), OH(y[2]), OW(y[3]), G(groups), Cg(C / G), Kg(K / G), rows(Cg * kh * kw),
        cols(OH * OW) {}
};

// A convolution's im2col of one image's group: row (c, i, j) of Cg * kh * kw, column (oh, ow) of
// OH * OW; dst[row * OH * OW + col] = value(x[c][ih][iw]) where the tap is inside the input, else
// `outside` (the real value 0). `src` points at the group's first channel plane of H x W.
template <class S, class D, class F>
void im2col(const S* src, std::int64_t Cg, std::int64_t H, std::int64_t W, std::int64_t kh, std::int64_t kw, std::int64_t OH, std::int64_t OW,
            const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding, const std::vector<std::int64_t>& dilation, D outside,
            F&& value, D* dst) {
  const std::int64_t cols = OH * OW;
  for (std::int64_t c = 0; c < Cg; ++c)
    for (std::int64_t i = 0; i < kh; ++i)
      for (std::int64_t j = 0; j < kw; ++j) {
        D* row = dst + ((c * kh + i) * kw + j) * cols;
        const S* plane = src + c * H * W;
        for (std::int64_t oh = 0; oh < OH; ++oh) {
          const std::int64_t ih = oh * stride[0] - padding[0] + i * dilation[0];
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            const std::int64_t iw = ow * stride[1] - padding[1] + j * dilation[1];
            row[oh * OW + ow] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? value(plane[ih * W + iw]) : outside;
          }
        }
      }
}

}  // namespace ref
}  // namespace npusim::inline NPUSIM_ABI
