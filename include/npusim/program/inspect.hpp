// Human-readable and JSON views of a CompiledProgram (`npusim inspect [--json]`).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "npusim/config.hpp"
#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

std::string human_bytes(std::int64_t b);

struct InspectOptions {
  bool kernels = true;   // one line per kernel
  bool buffers = false;  // one line per stored tensor
  // The file's weights section (program::embedded_info); unset: not shown.
  std::optional<EmbeddedWeightsInfo> embedded;
  // A line under each kernel (partition, kernel index -> text; empty: none): the CLI puts the
  // NPU estimate there, which this layer does not compute.
  std::function<std::string(std::size_t, std::size_t)> kernel_note;
};

std::string embedded_text(const EmbeddedWeightsInfo& w);

// Pipeline stages (--stages): per stage, its partitions, the weights they bind and the bytes that
// cross into it and out to the caller per run (`inspect` and `explain` print describe_stages).
struct StageSummary {
  std::vector<std::int32_t> partitions;
  std::int64_t weights = 0, weight_bytes = 0;
  std::int64_t bytes_in = 0, bytes_from_caller = 0, bytes_to_caller = 0;
};
std::vector<StageSummary> stage_summaries(const CompiledProgram& p);
std::string describe_stages(const CompiledProgram& p);
// "  (stage a -> b)" for a transfer between two stages; empty otherwise.
std::string stage_note(const CompiledProgram& p, const partition::Transfer& t);

std::string inspect_text(const CompiledProgram& p, const InspectOptions& o = {});

// `embedded`: the file's weights section (program::embedded_info), reported as "embedded_weights".
std::string inspect_json(const CompiledProgram& p, const std::optional<EmbeddedWeightsInfo>& embedded = std::nullopt);

}  // namespace npusim::inline NPUSIM_ABI::program

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/program/impl/inspect_inl.hpp"
#endif
