// The generic path (GemmTiled): 64x64 tiles accumulating in f32 over any strides, two batch dims
// and a grouped-query broadcast (cl/gemm.cl's gemm), K split when the tiles leave the device idle.
#pragma once

#include "npusim/target/opencl/kernels/gemm/problem.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

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

struct GemmTiled {
  static constexpr std::string_view name = "gemm", what = "64x64 tiles accumulating in f32: any strides, two batch dims, grouped-query broadcast";
  static constexpr bool generic = true;
  static bool applies(const GemmProblem&, std::string*) { return true; }
  static void bind(Binder& b, const Gemm& g, const TiledArgs* t) {
    if (g.norm || g.rope)
      b.unsupported(std::string("a normalised or rotating matrix product runs only on a GEMV path") +
                    (kernel_choice::skip_env<Skip>().empty() ? " (npusim bug)" : " (NPUSIM_OPENCL_SKIP leaves it out)"));
    if (g.im2col) b.unsupported("a channels-last convolution reached the 64x64 tiles, which do not gather its image (npusim bug)");
    if (g.up || !g.more.empty()) return bind_apart(b, g, [&](const Gemm& one) { launch_tiled(b, one, tiled_args(b, one)); });
    launch_tiled(b, g, t ? *t : tiled_args(b, g));
  }
};
}  // namespace npusim::inline NPUSIM_ABI::ocl
