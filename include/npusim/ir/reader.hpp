// torch_ir JSON -> ir::Graph, with structural validation (see ../shared/docs/ir-format.md):
// producer links over node names and graph inputs, topological order, consistent tensor metas,
// weight placeholders through weight_name_mapping, lifted constants, exact int64 attributes.
// Attribute *semantics* (schema defaults, supported values) are checked per op in ops/.
#pragma once

#include <string>
#include <string_view>

#include "npusim/ir/graph.hpp"
#include "npusim/ir/json_fwd.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

struct ReadOptions {
  std::size_t max_json_depth = default_max_json_depth;
  std::uint64_t max_file_bytes = std::uint64_t{1} << 31;
};

// A parsed torch_ir document (the JSON root) -> Graph; `src` names it in errors.
Graph read_ir_json(const json& root, const std::string& src);
Graph read_ir_string(std::string_view text, const std::string& source = "<memory>", const ReadOptions& opt = {});
Graph read_ir_file(const std::string& path, const ReadOptions& opt = {});

}  // namespace npusim::inline NPUSIM_ABI::ir

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/ir/impl/reader_inl.hpp"
#endif
