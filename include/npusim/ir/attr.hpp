// Attribute values as torch_ir writes them: null, bool, exact int64, double, string, and lists
// (possibly nested). Typed reading with schema defaults lives in ops/attrs.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/core/shape.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

using npusim::to_string;  // Shape's overload stays visible next to AttrValue's

struct AttrValue;
using AttrList = std::vector<AttrValue>;

struct AttrValue {
  using Variant = std::variant<std::monostate, bool, std::int64_t, double, std::string, AttrList>;
  Variant v;

  AttrValue() = default;
  AttrValue(std::nullptr_t) {}
  AttrValue(bool b) : v(b) {}
  AttrValue(std::int64_t i) : v(i) {}
  AttrValue(int i) : v(std::int64_t{i}) {}
  AttrValue(double d) : v(d) {}
  AttrValue(std::string s) : v(std::move(s)) {}
  AttrValue(const char* s) : v(std::string(s)) {}
  AttrValue(AttrList l) : v(std::move(l)) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(v); }
  bool is_double() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_list() const { return std::holds_alternative<AttrList>(v); }

  std::int64_t as_int() const { return std::get<std::int64_t>(v); }
  double as_double() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(v); }
  bool as_bool() const { return std::get<bool>(v); }
  const std::string& as_string() const { return std::get<std::string>(v); }
  const AttrList& as_list() const { return std::get<AttrList>(v); }

  friend bool operator==(const AttrValue& a, const AttrValue& b) { return a.v == b.v; }
};

inline std::string to_string(const AttrValue& a);

inline std::string format_double(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep floats recognisable
  return s;
}

inline std::string to_string(const AttrValue& a) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "null";
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return format_double(x);
        else if constexpr (std::is_same_v<T, std::string>) return "\"" + x + "\"";
        else {
          std::string s = "[";
          for (std::size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + to_string(x[i]);
          return s + "]";
        }
      },
      a.v);
}

// Attributes in file order (order matters only for messages and byte-stable serialisation).
struct AttrMap {
  std::vector<std::pair<std::string, AttrValue>> items;

  const AttrValue* find(std::string_view k) const {
    for (const auto& [key, val] : items)
      if (key == k) return &val;
    return nullptr;
  }
  bool contains(std::string_view k) const { return find(k) != nullptr; }
  void set(std::string k, AttrValue v) {
    for (auto& [key, val] : items)
      if (key == k) {
        val = std::move(v);
        return;
      }
    items.emplace_back(std::move(k), std::move(v));
  }
  bool empty() const { return items.empty(); }
  friend bool operator==(const AttrMap&, const AttrMap&) = default;
};

}  // namespace npusim::inline NPUSIM_ABI::ir
