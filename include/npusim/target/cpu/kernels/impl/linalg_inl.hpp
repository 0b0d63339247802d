// Definitions for npusim/target/cpu/kernels/linalg.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/linalg.hpp"

#include "npusim/core/quant.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/target/cpu/kernels/qlinear.hpp"
#include "npusim/target/cpu/parallel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

namespace detail {
inline BiasRow bias_row(Ctx& c, std::optional<ir::TensorId> bias, std::int64_t N) {
  if (!bias) return {};
  if (c.weight(*bias)) return {f32_copy(c, *bias)};
  if (c.numel(*bias) != N || c.is_blocked(*bias))
    c.unsupported("linear bias " + c.g.tensor(*bias).name + " of shape " + to_string(c.shape(*bias)) + " is not " + std::to_string(N) + " values");
  return {c.own(std::vector<float>(static_cast<std::size_t>(N))), c.ptr(*bias), c.storage(*bias)};
}

// y[M, N] = x[M, K] W^T (+ bias, relu) through the GEMM, with W packed.
inline Fn gemm_fn(Ctx& c, PackedB w, ir::TensorId x, ir::TensorId y, std::int64_t M, BiasRow b, bool relu) {
  const std::int64_t K = w.K, N = w.N;
  auto packed = c.own(std::move(w));
  GemmScratch lay = GemmScratch::layout(M, K, N);
  auto pool = c.need_scratch(lay.bytes());
  AView a{c.ptr(x), c.storage(x), K, false};
  CView cv{c.ptr(y), c.storage(y), N, false};
  Epilogue ep{b.data(), relu};
  return [=] {
    b.refresh();
    gemm(a, M, *packed, cv, ep, lay, pool->get());
  };
}

// W [N, K] (any float storage) as rows of blocks, the rows quantized in parallel; a weight bound
// packed already (u8 rows from a .npubin, quant::is_packed) is used where it lies.
inline std::shared_ptr<const std::byte> pack_blocks(Ctx& c, const Tensor& wt, ir::TensorId w, quant::BlockFormat f) {
  if (quant::is_packed(wt, c.g.tensor(w).dtype)) {
    if (!quant::holds_rows(f, wt, c.shape(w)))
      c.unsupported("packed weight " + c.g.tensor(w).name + " is not " + std::string(quant::to_string(f)) + " rows of " + to_string(c.shape(w)));
    return {wt.owner(), static_cast<const std::byte*>(wt.raw())};
  }
  auto blocks = c.own(AlignedBuf::make(quant::row_bytes(f, c.shape(w).at(1)) * static_cast<std::size_t>(c.shape(w).at(0))));
  try {
    // The pool rethrows the first thread's exception here.
    quant::pack_matrix(f, wt, blocks->p.get(), [](std::int64_t n, const auto& fn) { parallel_for(n, 64, fn); });
  } catch (Error& e) {
    e.with_node(c.node().name).with_tensor(c.g.tensor(w).name);
    throw;
  }
  return {blocks, blocks->p.get()};
}

// The q8_0/q4_0 linear (bind_linear's weight_format), on the first of qlinear_candidates that
// applies: the block GEMM for more than 4 rows, else the block GEMV row by row.
inline Fn bind_linear_blocks(Ctx& c, quant::BlockFormat f, const Tensor& wt, ir::TensorId w, ir::TensorId x, BiasRow b, ir::TensorId y, bool relu) {
  const std::int64_t N = c.shape(w).at(0), K = c.shape(w).at(1), M = c.numel(x) / K;
  const Epilogue ep{b.data(), relu};
  const QLinearBinding B{c, {f, M, N, K, pack_blocks(c, wt, w, f), c.ptr(x), c.storage(x), CView{c.ptr(y), c.storage(y), N, false}, std::move(b), ep,
                             c.node().name}};
  return with_candidate<Fn, qlinear_candidates>(choose<qlinear_candidates>(B.op.problem()), [&]<class C>() { return C::bind(B); });
}
}  // namespace detail

NPUSIM_FUNC Fn bind_linear(Ctx& c, ir::TensorId x, ir::TensorId w, std::optional<ir::TensorId> bias, ir::TensorId y, bool relu,
                           std::string_view weight_format) {
  const Tensor& wt = require_weight(c, w, "linear weight");
  const std::int64_t N = c.shape(w).at(0), K = c.shape(w).at(1), M = c.numel(x) / K;
  if (!weight_format.empty()) {
    const auto f = quant::parse_block_format(weight_format);
    if (!f) c.unsupported("no linear kernel for " + std::string(weight_format) + " weights");
    return detail::bind_linear_blocks(c, *f, wt, w, x, detail::bias_row(c, bias, N), y, relu);
  }
  if (quant::is_packed(wt, c.g.tensor(w).dtype)) c.unsupported("linear weight " + c.g.tensor(w).name + " is bound packed, but the linear has no weight_format");
  return detail::gemm_fn(c, pack_b(wt.raw(), wt.dtype(), K, N, true), x, y, M, detail::bias_row(c, bias, N), relu);
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
