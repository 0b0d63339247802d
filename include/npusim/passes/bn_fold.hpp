// BatchNorm folding: conv2d -> batch_norm (inference form) becomes one conv2d whose weight and
// bias are derived weights, recorded as a bn_fold recipe (applied at load time). A conv without
// bias gains one (the folded shift). A BatchNorm that cannot be folded (its input is not a conv
// output read only by it, or its parameters are computed) stays a kernel: it is never dropped.
#pragma once

#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

struct BnFoldResult {
  int folded = 0;
  int kept = 0;  // BatchNorms left as kernels
};

BnFoldResult fold_batch_norms(ir::Graph& g, std::vector<weights::Recipe>& recipes);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/bn_fold_inl.hpp"
#endif
