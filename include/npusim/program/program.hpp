// CompiledProgram: everything a target needs to run a model, self-contained and versioned. One or
// more partitions (a target part, or a fallback part for what the target cannot run), each with
// its transformed graph, kernel schedule and buffer plan; the transfers between partitions; the
// weight bindings (state_dict keys) and recipes for derived weights; compile statistics.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "npusim/fusion/kernel.hpp"
#include "npusim/partition/boundary.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/plan/buffer_plan.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::program {

inline constexpr char npubin_magic[8] = {'N', 'P', 'U', 'B', 'I', 'N', '\r', '\n'};
// Version 2 may carry a weights section after the program (npubin_weights.hpp); version 1 files
// (no weights section) are still read.
inline constexpr std::uint32_t npubin_format_version = 2;
inline constexpr std::uint32_t npubin_oldest_version = 1;

struct Partition {
  std::string target;  // target name, or the fallback's ("reference")
  bool fallback = false;
  std::int32_t stage = 0;  // pipeline stage (docs/scale-out.md); 0 without stages
  ir::Graph graph;     // inputs: graph inputs or tensors from earlier partitions (by name)
  std::vector<Kernel> kernels;
  plan::BufferPlan plan;
};

struct CompileStats {
  std::int64_t nodes_in = 0;          // IR nodes read
  std::int64_t nodes_after_passes = 0;
  std::int64_t kernels_unfused = 0;   // compute kernels the same graph would need without fusion
  std::int64_t kernels = 0;           // all partitions
  std::int64_t view_kernels = 0;      // zero-copy
  std::int64_t fused_kernels = 0;
  ir::AttrMap pass_counts;            // what each pass changed
  friend bool operator==(const CompileStats&, const CompileStats&) = default;
};

struct IoSpec {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  friend bool operator==(const IoSpec&, const IoSpec&) = default;
};

// What a file's weights section holds (`npusim inspect`).
struct EmbeddedWeightsInfo {
  bool present = false;
  std::int64_t tensors = 0, aliases = 0;
  std::uint64_t bytes = 0;          // tensor data (without alignment padding)
  std::uint64_t section_bytes = 0;  // the whole section: head, index, padded data, checksums
  std::uint64_t block_bytes = 0;
  std::vector<std::string> notes;   // when written: what was not embedded, and why
};

// The NPU a program was compiled against (`npusim compile --npu`): the description as canonical
// JSON (npu/description_json.hpp reads it; program/ does not interpret it) and the operand dtype
// of the estimate. The estimate itself is recomputed from these and the kernels when shown.
struct NpuRecord {
  std::string description;
  DType dtype = DType::f32;
  friend bool operator==(const NpuRecord&, const NpuRecord&) = default;
};

struct CompiledProgram {
  std::string model_name;
  std::string source;          // IR file compiled
  std::string npusim_version;
  std::string target;
  DType compute = DType::f32;
  partition::TargetLimits limits;
  std::vector<IoSpec> inputs, outputs;  // graph inputs / outputs (IR dtype), in order
  std::vector<Partition> partitions;
  std::vector<partition::Transfer> transfers;
  std::vector<weights::Recipe> recipes;
  CompileStats stats;
  std::optional<NpuRecord> npu;  // absent unless compiled with an NPU description
};

// Pipeline stages the program was cut into (1 without --stages): its partitions' highest stage + 1.
inline std::int32_t stage_count(const CompiledProgram& p) {
  std::int32_t n = 1;
  for (const auto& part : p.partitions) n = std::max(n, part.stage + 1);
  return n;
}

}  // namespace npusim::inline NPUSIM_ABI::program
