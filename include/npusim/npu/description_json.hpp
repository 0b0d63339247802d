// NPU descriptions as JSON (schema "npusim-npu-1", docs/npu-simulation.md): a strict reader (every
// field checked, unknown keys refused, each error naming the file, the field, what was expected
// and what was found), the canonical writer (what a .npubin stores), and lookup by name among the
// bundled descriptions (data/npu/*.json, installed to share/npusim/npu) or by path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/ir/json_fwd.hpp"
#include "npusim/npu/description.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

inline constexpr const char* schema_name = "npusim-npu-1";

// A description that breaks the schema: which file, which field (a path such as "dma.latency_ns"),
// what was expected and what was found.
class DescriptionError : public Error {
 public:
  DescriptionError(std::string file, std::string field, const std::string& what, std::string expected, std::string found)
      : Error(ErrorCode::attr, "NPU description field '" + field + "': " + what, {.file = std::move(file), .expected = std::move(expected), .found = std::move(found)}),
        field_(std::move(field)) {}
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

namespace detail {

struct SchemaReader {
  std::string file;

  [[noreturn]] void fail(const std::string& field, const std::string& what, const std::string& expected, const std::string& found) const {
    throw DescriptionError(file, field, what, expected, found);
  }
  static std::string found_of(const ir::json& j);
  // Refuses keys the schema does not have (a misspelt field would otherwise be ignored).
  void only(const ir::json& obj, const std::string& path, std::initializer_list<const char*> keys) const;
  const ir::json& object(const ir::json& parent, const std::string& path, const char* key) const;
  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
  const ir::json& field(const ir::json& parent, const std::string& path, const char* key) const;
  std::string string(const ir::json& parent, const std::string& path, const char* key) const;
  // A finite number in [lo, inf) (lo excluded when `open`).
  double number(const ir::json& parent, const std::string& path, const char* key, double lo, bool open) const;
  std::int64_t integer(const ir::json& parent, const std::string& path, const char* key, std::int64_t lo, std::int64_t hi = std::int64_t{1} << 50) const;
  DType dtype(const ir::json& j, const std::string& path) const;
};

}  // namespace detail

// Reads and checks a description (schema "npusim-npu-1"); `file` names it in errors.
Description parse_description(std::string_view text, const std::string& file);

// The canonical JSON of a description (sorted keys, what parse_description reads back equal).
std::string to_json(const Description& d);

inline Description read_description_file(const std::string& path) { return parse_description(read_file(path, std::uint64_t{1} << 20), path); }

// Where bundled descriptions are looked for, in order: $NPUSIM_NPU_PATH (':'-separated), the
// directory CMake gives the library (NPUSIM_NPU_CONFIG_DIR: data/npu in the build tree,
// share/npusim/npu once installed), then `extra` (the CLI adds one relative to its executable).
std::vector<std::string> description_dirs(const std::vector<std::string>& extra = {});

// The names of the descriptions found in description_dirs(extra), sorted.
std::vector<std::string> bundled_names(const std::vector<std::string>& extra = {});

struct FoundDescription {
  Description description;
  std::string path;  // the file it came from
};

// `spec` is a bundled name ("ideal", "rk3588") or a path to a .json file.
FoundDescription find_description(const std::string& spec, const std::vector<std::string>& extra = {});

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/description_json_inl.hpp"
#endif
