// The float GEMV path (Gemv): at most 4 rows of x against a linear layer's weight, a 32-item team per
// output (cl/gemm.cl's gemv; gemv_rope with the RoPE and KV-cache epilogue).
#pragma once

#include "npusim/target/opencl/kernels/gemm/problem.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

// The float GEMV (gemm.cl's gemv, gemv_rope with a RoPE epilogue): few rows, B read along K (a
// linear layer's weight), 16-byte loads when aligned.
inline void launch_gemv_float(Binder& b, const Gemm& g) {
  const std::string opts = Binder::type_options({{"TA", g.a.dtype}, {"TB", g.b.dtype}, {"TC", g.c.dtype}});
  const std::size_t ea = dtype_size(g.a.dtype), eb = dtype_size(g.b.dtype);
  bool vec = g.K % 8 == 0 && g.sam % 8 == 0 && g.a.off % 32 == 0 && g.b.off % 32 == 0 && ea >= 2 && eb >= 2 && (!g.up || g.up->off % 32 == 0);
  const GemvSegments s = gemv_segments(b, g);
  for (const auto& sg : s.seg)
    if (sg.N) vec = vec && sg.w.off % 32 == 0 && sg.w.dtype == g.b.dtype;
  cl_program p = b.program("gemm", ocl::cl_source::gemm, opts + " -DGV_M=" + std::to_string(g.M));
  const std::size_t groups = static_cast<std::size_t>((s.end[2] + 3) / 4);
  const Typed nw = g.norm ? Typed{g.norm->w} : b.none();
  const auto eps = static_cast<cl_float>(g.norm ? g.norm->eps : 0.0f);
  const cl_int mid = dt_code(g.norm ? g.norm->mid : DType::f32);
  if (!g.rope) return launch_gemv(b, p, "gemv", groups, g, s, vec, nw, g.norm.has_value(), eps, mid);
  const Gemm::Rope& r = *g.rope;
  if (g.M != 1 || g.more.size() != 2 || r.D % 4 || s.end[0] % r.D || (s.end[1] - s.end[0]) % r.D || (s.end[2] - s.end[1]) % r.D)
    b.unsupported("a gemv_rope over more than one token or heads that are not whole (npusim bug)");
  launch_gemv(b, p, "gemv_rope", groups, g, s, vec, nw, g.norm.has_value(), eps, mid, Typed{r.cos}, Typed{r.sin}, Typed{r.pos}, Typed{r.k_cache},
              Typed{r.v_cache}, dt_code(r.q.dtype), static_cast<cl_long>(r.D), static_cast<cl_long>(r.S), b.errors(), r.check);
}

struct Gemv {
  static constexpr std::string_view name = "gemv", what = "float weights, at most 4 rows: a 32-item team per output, 16-byte loads (gemm.cl's gemv, gemv_rope)";
  static constexpr bool generic = false;
  static bool applies(const GemmProblem& p, std::string* why) {
    if (p.packed) return kernel_choice::decline(why, "packed weights");
    if (!p.gemv_shape) return decline_gemv_shape(p, why);
    return true;
  }
  static void bind(Binder& b, const Gemm& g, const TiledArgs*) { launch_gemv_float(b, g); }
};
}  // namespace npusim::inline NPUSIM_ABI::ocl
