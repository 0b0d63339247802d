// Definitions for npusim/target/cpu/kernels/linalg.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/linalg.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_linear(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, bool relu) {
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

NPUSIM_FUNC Fn bind_matmul_dense(Ctx& c, ir::TensorId a, ir::TensorId b, ir::TensorId y, bool trans_b, std::int64_t group) {
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

}  // namespace npusim::inline NPUSIM_ABI::cpu
