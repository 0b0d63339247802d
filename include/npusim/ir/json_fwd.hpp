// ir::json by name only (nlohmann's json_fwd.hpp) and the JSON helpers' declarations: for headers
// whose declarations mention JSON values without using them. Code that reads or builds a JSON
// value includes ir/json.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

using json = nlohmann::json;

inline constexpr std::size_t default_max_json_depth = 256;

// Rejects documents nested deeper than max_depth before nlohmann builds (recursive) values.
void check_json_depth(std::string_view text, std::size_t max_depth, const std::string& source);

json parse_json(std::string_view text, const std::string& source, std::size_t max_depth = default_max_json_depth);

// parse_json, but a key given twice in one object is an error: nlohmann keeps the last one
// silently, and in some files (a checkpoint index's weight_map) a repeat is two conflicting answers.
json parse_json_unique_keys(std::string_view text, const std::string& source, std::size_t max_depth = default_max_json_depth);

const char* json_type_name(const json& j);

// Typed field access: "what" names the object for the message (e.g. "node 'conv2d'"). The
// names are taken by value (string_view), so binding the returned reference to a local is not a
// reference into a temporary argument (GCC 13's -Wdangling-reference).
const json& require_field(const json& obj, const char* key, std::string_view what, std::string_view source);
std::string get_string(const json& j, const std::string& what, const std::string& source);
std::int64_t get_int64(const json& j, const std::string& what, const std::string& source);
double get_number(const json& j, const std::string& what, const std::string& source);
// An optional field of `obj` (absent or null: `fallback`), of the type asked for, else a parse
// error naming it: nlohmann's value() would throw its own type_error, which is no npusim::Error.
bool get_bool_or(const json& obj, const char* key, bool fallback, std::string_view what, std::string_view source);
std::string get_string_or(const json& obj, const char* key, const std::string& fallback, std::string_view what, std::string_view source);

}  // namespace npusim::inline NPUSIM_ABI::ir
