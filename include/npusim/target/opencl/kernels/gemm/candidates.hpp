// The OpenCL target's matrix-product paths, best first, and the one binder that walks them: a new
// path is a file beside this one and an entry in the list (docs/adding-a-target.md).
#pragma once

#include "npusim/target/opencl/kernels/gemm/gemm_mma.hpp"
#include "npusim/target/opencl/kernels/gemm/gemm_tiled.hpp"
#include "npusim/target/opencl/kernels/gemm/gemv.hpp"
#include "npusim/target/opencl/kernels/gemm/gemv_q.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

using gemm_candidates = meta::list<GemvQ, Gemv, GemmMma, GemmTiled>;
static_assert(kernel_choice::check_candidate_list<GemmProblem>(gemm_candidates{}), "NPUSIM: gemm_candidates is not a well-formed candidate list");

// Binds g on the first path that takes it; `t`: a convolution's tiled operands (else derived from g).
inline void bind_product(Binder& b, const Gemm& g, const TiledArgs* t = nullptr) {
  const std::size_t i = kernel_choice::choose<Skip, gemm_candidates>(gemm_problem(g, t && t->conv, [&b] { return mma_support(b.device()); }));
  kernel_choice::with_candidate<void, gemm_candidates>(i, [&]<class C>() { C::bind(b, g, t); });
}
inline void bind_gemm(Binder& b, const Gemm& g) { bind_product(b, g); }
}  // namespace npusim::inline NPUSIM_ABI::ocl
