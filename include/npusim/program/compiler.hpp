// The compiler driver: IR graph + target description -> CompiledProgram.
//   check (ops known, attrs supported, shapes agree)
//   passes: in-place normalisation, no-op removal, BatchNorm folding, constant folding, DCE
//   partition by target support (with forced fallbacks), then per part: fusion and buffer planning.
// It includes no target and no runtime: targets are described by partition::TargetInfo, and
// constant folding evaluates through a callback.
#pragma once

#include "npusim/config.hpp"
#include "npusim/fusion/fuse.hpp"
#include "npusim/partition/stages.hpp"
#include "npusim/partition/support.hpp"
#include "npusim/passes/const_fold.hpp"
#include "npusim/passes/dtype_policy.hpp"
#include "npusim/passes/quantize_int8.hpp"
#include "npusim/passes/quantize_weights.hpp"
#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

struct CompileOptions {
  DType compute = DType::f32;
  fusion::FuseOptions fuse;               // disabled patterns
  partition::ForceFallback force;         // debug: ops/nodes forced to the fallback
  passes::Evaluator evaluator;            // constant folding (none: no folding)
  bool fold_batch_norm = true;
  passes::WeightQuantOptions weight_quant;  // linear weights in q8_0/q4_0 blocks (docs/quantization.md)
  passes::Int8Options int8;               // post-training int8 from observed ranges (npusim quantize)
  // Tensors (by name, in the graph after the passes) made extra program outputs, after the graph's
  // own: what calibration and the per-layer accuracy report read. A name not there is an error.
  std::vector<std::string> observe;
  // Pipeline stages (partition/stages.hpp, docs/scale-out.md): 1 is one stage; N > 1 cuts the graph
  // into N contiguous stages, each its own partitions (Partition::stage).
  int stages = 1;
  bool verify = false;                    // re-check every node after each pass (tests)
};

// The graph passes, in order, on a checked graph: what compile() runs before partitioning (and
// what `npusim explain` runs to show the graph the partitioner saw). Weight recipes and pass
// counts go to p; returns the dtype policy the later stages use.
passes::DTypePolicy run_passes(ir::Graph& g, const partition::TargetInfo& target, const CompileOptions& opt, CompiledProgram& p);

CompiledProgram compile(ir::Graph g, const partition::TargetInfo& target, const CompileOptions& opt = {});

}  // namespace npusim::inline NPUSIM_ABI::program

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/program/impl/compiler_inl.hpp"
#endif
