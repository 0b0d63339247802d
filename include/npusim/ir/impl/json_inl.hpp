// Definitions for ir/json.hpp (NPUSIM_FUNC: inline in header-only builds, compiled once into
// npusim::compiled otherwise; npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <unordered_set>

#include "npusim/ir/json.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

// Rejects documents nested deeper than max_depth before nlohmann builds (recursive) values.
NPUSIM_FUNC void check_json_depth(std::string_view text, std::size_t max_depth, const std::string& source) {
  std::size_t depth = 0;
  bool in_string = false, escape = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw Error(ErrorCode::resource, "JSON nested too deeply",
                    {.file = source, .offset = i, .expected = "depth <= " + std::to_string(max_depth),
                     .found = "deeper"});
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

namespace detail {
inline json parse_json_with(std::string_view text, const std::string& source, std::size_t max_depth,
                            const json::parser_callback_t& callback) {
  check_json_depth(text, max_depth, source);
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (auto p = msg.find("parse error"); p != std::string::npos) msg = msg.substr(p);
    throw Error(ErrorCode::parse, "invalid JSON: " + msg, {.file = source, .offset = e.byte});
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number too large for a double
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw Error(ErrorCode::parse, "invalid JSON: " + msg, {.file = source});
  }
}
}  // namespace detail

NPUSIM_FUNC json parse_json(std::string_view text, const std::string& source, std::size_t max_depth) {
  return detail::parse_json_with(text, source, max_depth, nullptr);
}

// parse_json, but a key given twice in one object is an error: nlohmann keeps the last one
// silently, and in some files (a checkpoint index's weight_map) a repeat is two conflicting answers.
NPUSIM_FUNC json parse_json_unique_keys(std::string_view text, const std::string& source, std::size_t max_depth) {
  std::vector<std::unordered_set<std::string>> open;  // keys seen, per object being parsed
  return detail::parse_json_with(text, source, max_depth, [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) open.emplace_back();
    else if (ev == json::parse_event_t::object_end) open.pop_back();
    else if (ev == json::parse_event_t::key && !open.back().insert(parsed.get<std::string>()).second)
      throw Error(ErrorCode::parse, "key '" + parsed.get<std::string>() + "' appears twice in one object", {.file = source});
    return true;
  });
}

NPUSIM_FUNC const char* json_type_name(const json& j) { return j.type_name(); }

// Typed field access: "what" names the object for the message (e.g. "node 'conv2d'"). The
// names are taken by value (string_view), so binding the returned reference to a local is not a
// reference into a temporary argument (GCC 13's -Wdangling-reference).
NPUSIM_FUNC const json& require_field(const json& obj, const char* key, std::string_view what, std::string_view source) {
  if (!obj.is_object())
    throw Error(ErrorCode::parse, std::string(what) + " must be a JSON object", {.file = std::string(source), .found = json_type_name(obj)});
  auto it = obj.find(key);
  if (it == obj.end()) throw Error(ErrorCode::parse, std::string(what) + " has no \"" + key + "\" field", {.file = std::string(source)});
  return *it;
}

NPUSIM_FUNC std::string get_string(const json& j, const std::string& what, const std::string& source) {
  if (!j.is_string()) throw Error(ErrorCode::parse, what + " must be a string", {.file = source, .found = json_type_name(j)});
  return j.get<std::string>();
}

NPUSIM_FUNC std::int64_t get_int64(const json& j, const std::string& what, const std::string& source) {
  if (j.is_number_integer() && !j.is_number_unsigned()) return j.get<std::int64_t>();
  if (j.is_number_unsigned()) {
    auto u = j.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(u);
    throw Error(ErrorCode::parse, what + " does not fit in int64", {.file = source, .found = std::to_string(u)});
  }
  throw Error(ErrorCode::parse, what + " must be an integer", {.file = source, .found = json_type_name(j)});
}

NPUSIM_FUNC bool get_bool_or(const json& obj, const char* key, bool fallback, std::string_view what, std::string_view source) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw Error(ErrorCode::parse, std::string(what) + "." + key + " must be true or false", {.file = std::string(source), .expected = "a boolean",
                .found = json_type_name(*it)});
  return it->get<bool>();
}

NPUSIM_FUNC std::string get_string_or(const json& obj, const char* key, const std::string& fallback, std::string_view what, std::string_view source) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string())
    throw Error(ErrorCode::parse, std::string(what) + "." + key + " must be a string", {.file = std::string(source), .expected = "a string",
                .found = json_type_name(*it)});
  return it->get<std::string>();
}

NPUSIM_FUNC double get_number(const json& j, const std::string& what, const std::string& source) {
  if (j.is_number_float()) return j.get<double>();
  if (j.is_number_integer()) return static_cast<double>(get_int64(j, what, source));
  throw Error(ErrorCode::parse, what + " must be a number", {.file = source, .found = json_type_name(j)});
}

}  // namespace npusim::inline NPUSIM_ABI::ir
