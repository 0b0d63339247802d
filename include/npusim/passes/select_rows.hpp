// Output row selection: an LLM's prefill returns the logits of every position ([B, S, V]) but
// generation reads one row. This pass gives the graph a new input (an integer [1], the row to keep)
// and computes only that row of one output: an index_select is put where the computation of the
// output becomes row by row along dim 1 (the final norm and the lm_head, and whatever before them
// feeds nothing else), so every node after it runs on one row instead of S.
//
// Row by row: pointwise ops (broadcasting operands without the row dim are shared by every row),
// shape-keeping views, linear, reductions and softmax over dims after 1, layer_norm over trailing
// dims. The region grows backwards from the output's producer while every reader of a node's
// outputs is in the region (nothing outside sees fewer rows); metadata asserts on its tensors are
// dropped. The selected output becomes [B, 1, ...]; every other output is unchanged.
#pragma once

#include <cstddef>
#include <string>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

struct RowSelection {
  std::size_t nodes = 0;    // nodes that now run on one row
  std::size_t selects = 0;  // index_select nodes added (one per tensor entering the region)
  std::string input;        // the new graph input's name (empty: nothing selected)
};

// Selects rows of graph output `output` (index into g.outputs) by a new int64 [1] graph input
// named `input` (made unique). Nothing changes where the output has one row already. Throws
// ErrorCode::graph when the output is not [B, S, ...] or its producer does not work row by row.
RowSelection select_output_row(ir::Graph& g, std::size_t output, const std::string& input);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/select_rows_inl.hpp"
#endif
