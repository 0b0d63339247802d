// Typed attribute reading with ATen schema defaults. An op's Attrs struct lists its fields once,
// in a visit() member, with the schema default as the member initialiser:
//
//   struct Attrs {
//     std::vector<std::int64_t> stride{1, 1};
//     template <class V> void visit(V& v) { v("stride", stride); }
//   };
//
// The same list drives parsing (read_attrs: missing -> default, present -> converted and checked,
// unknown key -> error), docs (describe_attrs) and anything else that needs the schema.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/ir/attr.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

using Ints = std::vector<std::int64_t>;
// `_tensor_list_none_masks`: per Tensor?[] argument with a None, where the Nones were.
using NoneMasks = std::vector<std::vector<bool>>;

// A scalar operand as written in attrs (`other`, `fill_value`, `min`/`max`): int, float or bool.
struct Scalar {
  double value = 0.0;
  bool is_integral = false;
  friend bool operator==(const Scalar&, const Scalar&) = default;
};

// Attrs that carry no meaning for a static-shape, single-device compiler (device placement,
// pinned memory) are accepted under these names.
struct Ignored {
  friend bool operator==(const Ignored&, const Ignored&) = default;
};

namespace detail {

template <class T> inline constexpr bool meta_dependent_false = false;
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

inline Error attr_error(std::string_view name, std::string msg, std::string expected, const ir::AttrValue& v) {
  return Error(ErrorCode::attr, "attribute '" + std::string(name) + "': " + msg,
               {.expected = std::move(expected), .found = ir::to_string(v)});
}

template <class T>
void convert(std::string_view name, const ir::AttrValue& v, T& out) {
  if constexpr (is_optional<T>::value) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    typename T::value_type inner{};
    convert(name, v, inner);
    out = std::move(inner);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.is_bool()) out = v.as_bool();
    else if (v.is_int() && (v.as_int() == 0 || v.as_int() == 1)) out = v.as_int() == 1;
    else throw attr_error(name, "wrong type", "a bool", v);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    if (v.is_int()) out = v.as_int();
    else if (v.is_bool()) out = v.as_bool() ? 1 : 0;
    else throw attr_error(name, "wrong type", "an integer", v);
  } else if constexpr (std::is_same_v<T, double>) {
    if (v.is_number()) out = v.as_double();
    else throw attr_error(name, "wrong type", "a number", v);
  } else if constexpr (std::is_same_v<T, Scalar>) {
    if (v.is_int()) out = {static_cast<double>(v.as_int()), true};
    else if (v.is_double()) out = {v.as_double(), false};
    else if (v.is_bool()) out = {v.as_bool() ? 1.0 : 0.0, true};
    else if (v.is_string() && (v.as_string() == "inf" || v.as_string() == "-inf" || v.as_string() == "nan"))
      out = {v.as_string() == "inf" ? INFINITY : v.as_string() == "-inf" ? -INFINITY : NAN, false};
    else throw attr_error(name, "wrong type", "a number", v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) out = v.as_string();
    else throw attr_error(name, "wrong type", "a string", v);
  } else if constexpr (std::is_same_v<T, DType>) {
    if (!v.is_string()) throw attr_error(name, "wrong type", "a dtype string such as \"torch.float32\"", v);
    auto d = parse_dtype(v.as_string());
    if (!d) throw attr_error(name, "unsupported dtype", "float32, float16, bfloat16, float64 or an integer/bool type", v);
    out = *d;
  } else if constexpr (std::is_same_v<T, Ints>) {
    out.clear();
    if (v.is_int()) {
      out.push_back(v.as_int());  // int[N] arguments accept a single int, like ATen
    } else if (v.is_list()) {
      for (const auto& e : v.as_list()) {
        if (!e.is_int()) throw attr_error(name, "wrong element type", "a list of integers", v);
        out.push_back(e.as_int());
      }
    } else {
      throw attr_error(name, "wrong type", "a list of integers", v);
    }
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    out.clear();
    if (!v.is_list()) throw attr_error(name, "wrong type", "a list of numbers", v);
    for (const auto& e : v.as_list()) {
      if (!e.is_number()) throw attr_error(name, "wrong element type", "a list of numbers", v);
      out.push_back(e.as_double());
    }
  } else if constexpr (std::is_same_v<T, NoneMasks>) {
    out.clear();
    if (!v.is_list()) throw attr_error(name, "wrong type", "a list of lists of bools", v);
    for (const auto& l : v.as_list()) {
      if (!l.is_list()) throw attr_error(name, "wrong element type", "a list of lists of bools", v);
      out.emplace_back();
      for (const auto& e : l.as_list()) {
        if (!e.is_bool()) throw attr_error(name, "wrong element type", "a list of lists of bools", v);
        out.back().push_back(e.as_bool());
      }
    }
  } else if constexpr (std::is_same_v<T, Ignored>) {
    (void)v;
  } else {
    static_assert(meta_dependent_false<T>, "NPUSIM: unsupported attribute field type");
  }
}

}  // namespace detail

// Reads the visited fields from an AttrMap, then rejects any attribute no field consumed.
class AttrReader {
 public:
  AttrReader(const ir::AttrMap& map, std::string_view op_type) : map_(map), op_type_(op_type), used_(map.items.size(), false) {}

  template <class T>
  void operator()(std::string_view name, T& field) {
    for (std::size_t i = 0; i < map_.items.size(); ++i) {
      if (map_.items[i].first != name) continue;
      used_[i] = true;
      detail::convert(name, map_.items[i].second, field);
      return;
    }
  }

  void finish() const {
    for (std::size_t i = 0; i < used_.size(); ++i) {
      const auto& key = map_.items[i].first;
      if (used_[i] || key == "_tensor_list_sizes" || key == "_tensor_list_none_masks") continue;
      throw Error(ErrorCode::attr, "unknown attribute '" + key + "' for " + std::string(op_type_) +
                                       ": npusim does not know what it means, so it will not ignore it",
                  {.found = key + " = " + ir::to_string(map_.items[i].second)});
    }
  }

 private:
  const ir::AttrMap& map_;
  std::string_view op_type_;
  std::vector<bool> used_;
};

template <class Attrs>
Attrs read_attrs(const ir::AttrMap& map, std::string_view op_type) {
  Attrs a{};
  AttrReader r(map, op_type);
  a.visit(r);
  r.finish();
  if constexpr (requires { a.check(); }) a.check();
  return a;
}

// Name + default value of every field, for generated docs and `npusim ops`.
struct AttrDescriber {
  std::vector<std::pair<std::string, std::string>> fields;

  template <class T>
  static std::string show(const T& v) {
    if constexpr (detail::is_optional<T>::value) return v ? show(*v) : "None";
    else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(v);
    else if constexpr (std::is_same_v<T, double>) return ir::format_double(v);
    else if constexpr (std::is_same_v<T, Scalar>) return v.is_integral ? std::to_string(static_cast<long long>(v.value)) : ir::format_double(v.value);
    else if constexpr (std::is_same_v<T, std::string>) return "\"" + v + "\"";
    else if constexpr (std::is_same_v<T, DType>) return std::string(dtype_name(v));
    else if constexpr (std::is_same_v<T, Ints>) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ir::format_double(v[i]);
      return s + "]";
    } else if constexpr (std::is_same_v<T, NoneMasks>) return v.empty() ? "[]" : "[...]";
    else if constexpr (std::is_same_v<T, Ignored>) return "(ignored)";
    else return "?";
  }
  template <class T>
  void operator()(std::string_view name, const T& field) {
    fields.emplace_back(std::string(name), show(field));
  }
};

template <class Attrs>
std::vector<std::pair<std::string, std::string>> describe_attrs() {
  Attrs a{};
  AttrDescriber d;
  a.visit(d);
  return d.fields;
}

// For Attrs::check(): a non-default value npusim does not implement.
inline Error unsupported_attr(std::string_view name, std::string value, std::string supported) {
  return Error(ErrorCode::attr, "attribute '" + std::string(name) + "' has a value npusim does not implement",
               {.expected = std::move(supported), .found = std::move(value)});
}

}  // namespace npusim::inline NPUSIM_ABI::ops
