// The packed-weight GEMV path (GemvQ): q8_0/q4_0 blocks in the device layout cl/gemv_q.cl reads
// (and the packing into it), at most 4 rows of x.
#pragma once

#include "npusim/target/opencl/kernels/gemm/problem.hpp"

#include <cstring>

namespace npusim::inline NPUSIM_ABI::ocl {

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
}  // namespace npusim::inline NPUSIM_ABI::ocl
