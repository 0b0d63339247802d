// The launch of generic.cl's silu_mul, y = silu(a) * b over n contiguous values (silu(a) rounded to
// the type code `round` first, -1: not): the SiLU*gate pattern's kernel (pointwise.hpp) and a gated
// product's last step where its two products run apart (gemm/problem.hpp's bind_apart).
#pragma once

#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

inline void launch_silu_mul(Binder& b, Typed a, Typed gate_b, Typed y, std::int64_t n, cl_int round) {
  const std::int64_t items = (n + 7) / 8;  // generic.cl's PW_SILU_MUL values per work-item
  b.launch1d(b.program("generic", ocl::cl_source::generic), "silu_mul", items, 256, a, gate_b, y, static_cast<cl_long>(n), round);
}

}  // namespace npusim::inline NPUSIM_ABI::ocl
