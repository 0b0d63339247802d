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
#include "npusim/core/range.hpp"
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
  // A number (an integer) within the range the figure can physically have (npu::ranges).
  double number(const ir::json& parent, const std::string& path, const char* key, const NumberRange& r) const;
  std::int64_t integer(const ir::json& parent, const std::string& path, const char* key, const NumberRange& r) const;
  DType dtype(const ir::json& j, const std::string& path) const;
};

}  // namespace detail

// What each figure of a description may be: what the physics of a chip allows, with margin, so
// that an estimate from any accepted description is a finite number of a sensible size
// (docs/npu-simulation.md, "Ranges"). A figure outside is refused by name, never computed with.
namespace ranges {
inline constexpr NumberRange clock_mhz{1, 10000, false, false, "MHz"};                      // 1 MHz .. 10 GHz
inline constexpr NumberRange mac_dim{1, 65536, false, true, ""};                           // rows, columns
inline constexpr NumberRange vector_width{1, 1 << 20, false, true, "bytes"};
inline constexpr NumberRange transcendental_ops{1, 1000, false, false, "vector operations"};
inline constexpr NumberRange sram_bytes{1, double(std::int64_t{1} << 40), false, true, "bytes"};    // up to 1 TiB
inline constexpr NumberRange sram_region{0, double(std::int64_t{1} << 40), false, true, "bytes"};
inline constexpr NumberRange sram_banks{1, 1 << 20, false, true, ""};
inline constexpr NumberRange bandwidth_gb_per_s{0.001, 100000, false, false, "GB/s"};       // 1 MB/s .. 100 TB/s
inline constexpr NumberRange latency_ns{0, 1e6, false, false, "ns"};                        // up to 1 ms
inline constexpr NumberRange host_gflops{0.001, 1e7, false, false, "GFLOP/s"};              // 1 MFLOP/s .. 10 PFLOP/s
inline constexpr NumberRange transfer_latency_us{0, 1e6, false, false, "us"};               // up to 1 s
}  // namespace ranges

// Reads and checks a description (schema "npusim-npu-1"); `file` names it in errors.
Description parse_description(std::string_view text, const std::string& file);

// The canonical JSON of a description (sorted keys, what parse_description reads back equal).
std::string to_json(const Description& d);

inline Description read_description_file(const std::string& path) { return parse_description(read_file(path, std::uint64_t{1} << 20), path); }

// Where bundled descriptions are looked for, in order: $NPUSIM_NPU_PATH (':'-separated), the
// directories registered by add_description_dir, the directory CMake gives the library
// (NPUSIM_NPU_CONFIG_DIR: data/npu in the build tree, share/npusim/npu once installed), then
// `extra` (the CLI adds one relative to its executable).
std::vector<std::string> description_dirs(const std::vector<std::string>& extra = {});

// Adds a directory to description_dirs (after $NPUSIM_NPU_PATH, before the library's own), once.
void add_description_dir(const std::string& dir);

#ifdef NPUSIM_NPU_INSTALLED_DIR
// A program linking an installed npusim::compiled: that library was compiled in its build tree,
// whose data/npu it names, and which may be gone; the installed package gives its consumers the
// share/npusim/npu it installed (NPUSIM_NPU_INSTALLED_DIR, an interface definition of the
// installed target only), registered here before main.
inline const bool installed_descriptions_registered = (add_description_dir(NPUSIM_NPU_INSTALLED_DIR), true);
#endif

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
