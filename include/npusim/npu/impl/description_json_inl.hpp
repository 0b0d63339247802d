// Definitions for npusim/npu/description_json.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "npusim/config.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/npu/description_json.hpp"

namespace npusim::inline NPUSIM_ABI::npu {
namespace detail {

NPUSIM_FUNC std::string SchemaReader::found_of(const ir::json& j) {
  if (j.is_string()) return "\"" + j.get<std::string>() + "\"";
  if (j.is_number() || j.is_boolean() || j.is_null()) return j.dump();
  return std::string("a JSON ") + j.type_name();
}

NPUSIM_FUNC void SchemaReader::only(const ir::json& obj, const std::string& path, std::initializer_list<const char*> keys) const {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; })) {
      std::string list;
      for (const char* x : keys) list += (list.empty() ? "" : ", ") + std::string(x);
      fail(path.empty() ? k : path + "." + k, "unknown field", "one of " + list, "\"" + k + "\"");
    }
  }
}

NPUSIM_FUNC const ir::json& SchemaReader::object(const ir::json& parent, const std::string& path, const char* key) const {
  const ir::json& j = field(parent, path, key);
  if (!j.is_object()) fail(join(path, key), "must be an object", "a JSON object", found_of(j));
  return j;
}

NPUSIM_FUNC const ir::json& SchemaReader::field(const ir::json& parent, const std::string& path, const char* key) const {
  auto it = parent.find(key);
  if (it == parent.end()) fail(join(path, key), "missing", "a value", "nothing");
  return *it;
}

NPUSIM_FUNC std::string SchemaReader::string(const ir::json& parent, const std::string& path, const char* key) const {
  const ir::json& j = field(parent, path, key);
  if (!j.is_string()) fail(join(path, key), "must be a string", "a string", found_of(j));
  return j.get<std::string>();
}

NPUSIM_FUNC double SchemaReader::number(const ir::json& parent, const std::string& path, const char* key, const NumberRange& r) const {
  const ir::json& j = field(parent, path, key);
  if (!j.is_number()) fail(join(path, key), "must be a number", r.describe(), found_of(j));
  const double v = j.get<double>();
  if (!r.contains(v)) fail(join(path, key), r.why(v), r.describe(), found_of(j));
  return v;
}

NPUSIM_FUNC std::int64_t SchemaReader::integer(const ir::json& parent, const std::string& path, const char* key, const NumberRange& r) const {
  const ir::json& j = field(parent, path, key);
  if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    fail(join(path, key), "must be an integer", r.describe(), found_of(j));
  const std::int64_t v = j.get<std::int64_t>();
  if (!r.contains(static_cast<double>(v))) fail(join(path, key), r.why(static_cast<double>(v)), r.describe(), found_of(j));
  return v;
}

NPUSIM_FUNC DType SchemaReader::dtype(const ir::json& j, const std::string& path) const {
  std::string names;
  for (DType d : npu_dtypes) names += (names.empty() ? "" : ", ") + std::string(dtype_short_name(d));
  if (!j.is_string()) fail(path, "must be a dtype name", "one of " + names, found_of(j));
  auto d = parse_dtype(j.get<std::string>());
  if (!d || !is_npu_dtype(*d)) fail(path, "unknown dtype", "one of " + names, found_of(j));
  return *d;
}

}  // namespace detail
}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC Description parse_description(std::string_view text, const std::string& file) {
  const ir::json j = ir::parse_json_unique_keys(text, file);
  const detail::SchemaReader r{file};
  if (!j.is_object()) r.fail("(top level)", "must be an object", "a JSON object", detail::SchemaReader::found_of(j));
  r.only(j, "", {"schema", "name", "summary", "clock_mhz", "mac_array", "vector", "sram", "dma", "dtypes", "op_classes", "host", "sources", "assumptions"});
  Description d;
  if (const std::string s = r.string(j, "", "schema"); s != schema_name) r.fail("schema", "unknown schema", std::string("\"") + schema_name + "\"", "\"" + s + "\"");
  d.name = r.string(j, "", "name");
  if (d.name.empty()) r.fail("name", "must not be empty", "a name", "\"\"");
  if (j.contains("summary")) d.summary = r.string(j, "", "summary");
  d.clock_mhz = r.number(j, "", "clock_mhz", ranges::clock_mhz);

  const ir::json& dts = r.field(j, "", "dtypes");
  if (!dts.is_array() || dts.empty()) r.fail("dtypes", "must be a non-empty list", "a list of dtype names", detail::SchemaReader::found_of(dts));
  for (std::size_t i = 0; i < dts.size(); ++i) {
    DType t = r.dtype(dts[i], "dtypes[" + std::to_string(i) + "]");
    if (d.supports(t)) r.fail("dtypes[" + std::to_string(i) + "]", "listed twice", "each dtype once", detail::SchemaReader::found_of(dts[i]));
    d.dtypes.push_back(t);
  }

  const ir::json& macs = r.object(j, "", "mac_array");
  if (macs.empty()) r.fail("mac_array", "must name at least one dtype", "{\"int8\": {\"rows\": R, \"columns\": C}, ...}", "{}");
  for (const auto& [k, v] : macs.items()) {
    const std::string path = "mac_array." + k;
    const DType t = r.dtype(ir::json(k), path);
    if (!d.supports(t)) r.fail(path, "the MAC array computes in a dtype that \"dtypes\" does not list", "one of the dtypes listed", "\"" + k + "\"");
    if (!v.is_object()) r.fail(path, "must be an object", "{\"rows\": R, \"columns\": C}", detail::SchemaReader::found_of(v));
    r.only(v, path, {"rows", "columns"});
    d.mac_arrays.push_back({t, {r.integer(v, path, "rows", ranges::mac_dim), r.integer(v, path, "columns", ranges::mac_dim)}});
  }

  const ir::json& vec = r.object(j, "", "vector");
  r.only(vec, "vector", {"width_bytes", "transcendental_ops"});
  d.vector_width_bytes = r.integer(vec, "vector", "width_bytes", ranges::vector_width);
  if (vec.contains("transcendental_ops")) d.transcendental_ops = r.number(vec, "vector", "transcendental_ops", ranges::transcendental_ops);

  const ir::json& sram = r.object(j, "", "sram");
  r.only(sram, "sram", {"bytes", "banks", "weight_cache_bytes", "activation_bytes"});
  d.sram_bytes = r.integer(sram, "sram", "bytes", ranges::sram_bytes);
  d.sram_banks = r.integer(sram, "sram", "banks", ranges::sram_banks);
  if (d.sram_banks > d.sram_bytes) r.fail("sram.banks", "more banks than bytes", "<= sram.bytes (" + std::to_string(d.sram_bytes) + ")", std::to_string(d.sram_banks));
  if (sram.contains("weight_cache_bytes")) d.weight_cache_bytes = r.integer(sram, "sram", "weight_cache_bytes", ranges::sram_region);
  if (sram.contains("activation_bytes")) d.activation_bytes = r.integer(sram, "sram", "activation_bytes", ranges::sram_region);
  if (d.weight_cache_bytes >= d.sram_bytes || d.activation_bytes >= d.sram_bytes - d.weight_cache_bytes)
    r.fail(d.weight_cache_bytes >= d.sram_bytes ? "sram.weight_cache_bytes" : "sram.activation_bytes", "leaves no working memory",
           "weight_cache_bytes + activation_bytes < bytes (" + std::to_string(d.sram_bytes) + ")",
           std::to_string(d.weight_cache_bytes) + " + " + std::to_string(d.activation_bytes));

  const ir::json& dma = r.object(j, "", "dma");
  r.only(dma, "dma", {"bandwidth_gb_per_s", "latency_ns"});
  d.dma_gb_per_s = r.number(dma, "dma", "bandwidth_gb_per_s", ranges::bandwidth_gb_per_s);
  d.dma_latency_ns = r.number(dma, "dma", "latency_ns", ranges::latency_ns);

  const ir::json& oc = r.field(j, "", "op_classes");
  if (!oc.is_array()) r.fail("op_classes", "must be a list", "a list of op class names", detail::SchemaReader::found_of(oc));
  std::string classes;
  for (auto c : all_op_classes) classes += (classes.empty() ? "" : ", ") + std::string(op_class_id(c));
  for (std::size_t i = 0; i < oc.size(); ++i) {
    const std::string path = "op_classes[" + std::to_string(i) + "]";
    const auto it = oc[i].is_string() ? std::find_if(std::begin(all_op_classes), std::end(all_op_classes),
                                                      [&](ops::OpClass c) { return oc[i].get<std::string>() == op_class_id(c); })
                                      : std::end(all_op_classes);
    if (it == std::end(all_op_classes)) r.fail(path, "unknown op class", "one of " + classes, detail::SchemaReader::found_of(oc[i]));
    if (std::find(d.op_classes.begin(), d.op_classes.end(), *it) != d.op_classes.end())
      r.fail(path, "listed twice", "each op class once", detail::SchemaReader::found_of(oc[i]));
    d.op_classes.push_back(*it);
  }

  const ir::json& host = r.object(j, "", "host");
  r.only(host, "host", {"gflops", "memory_gb_per_s", "transfer_gb_per_s", "transfer_latency_us"});
  d.host.gflops = r.number(host, "host", "gflops", ranges::host_gflops);
  d.host.memory_gb_per_s = r.number(host, "host", "memory_gb_per_s", ranges::bandwidth_gb_per_s);
  d.host.transfer_gb_per_s = r.number(host, "host", "transfer_gb_per_s", ranges::bandwidth_gb_per_s);
  d.host.transfer_latency_us = r.number(host, "host", "transfer_latency_us", ranges::transfer_latency_us);

  if (j.contains("sources")) {
    const ir::json& s = j["sources"];
    if (!s.is_array()) r.fail("sources", "must be a list", "[{\"figure\": ..., \"source\": ...}]", detail::SchemaReader::found_of(s));
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::string path = "sources[" + std::to_string(i) + "]";
      if (!s[i].is_object()) r.fail(path, "must be an object", "{\"figure\": ..., \"source\": ...}", detail::SchemaReader::found_of(s[i]));
      r.only(s[i], path, {"figure", "source"});
      d.sources.push_back({r.string(s[i], path, "figure"), r.string(s[i], path, "source")});
    }
  }
  if (j.contains("assumptions")) {
    const ir::json& a = j["assumptions"];
    if (!a.is_array()) r.fail("assumptions", "must be a list", "a list of strings", detail::SchemaReader::found_of(a));
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) r.fail("assumptions[" + std::to_string(i) + "]", "must be a string", "a string", detail::SchemaReader::found_of(a[i]));
      d.assumptions.push_back(a[i].get<std::string>());
    }
  }
  return d;
}

NPUSIM_FUNC std::string to_json(const Description& d) {
  ir::json j;
  j["schema"] = schema_name;
  j["name"] = d.name;
  if (!d.summary.empty()) j["summary"] = d.summary;
  j["clock_mhz"] = d.clock_mhz;
  j["mac_array"] = ir::json::object();
  for (const auto& [t, a] : d.mac_arrays) j["mac_array"][std::string(dtype_short_name(t))] = {{"rows", a.rows}, {"columns", a.columns}};
  j["vector"] = {{"width_bytes", d.vector_width_bytes}, {"transcendental_ops", d.transcendental_ops}};
  j["sram"] = {{"bytes", d.sram_bytes}, {"banks", d.sram_banks}, {"weight_cache_bytes", d.weight_cache_bytes}, {"activation_bytes", d.activation_bytes}};
  j["dma"] = {{"bandwidth_gb_per_s", d.dma_gb_per_s}, {"latency_ns", d.dma_latency_ns}};
  j["dtypes"] = ir::json::array();
  for (DType t : d.dtypes) j["dtypes"].push_back(std::string(dtype_short_name(t)));
  j["op_classes"] = ir::json::array();
  for (auto c : d.op_classes) j["op_classes"].push_back(op_class_id(c));
  j["host"] = {{"gflops", d.host.gflops}, {"memory_gb_per_s", d.host.memory_gb_per_s}, {"transfer_gb_per_s", d.host.transfer_gb_per_s},
               {"transfer_latency_us", d.host.transfer_latency_us}};
  if (!d.sources.empty()) {
    j["sources"] = ir::json::array();
    for (const auto& s : d.sources) j["sources"].push_back({{"figure", s.figure}, {"source", s.source}});
  }
  if (!d.assumptions.empty()) j["assumptions"] = d.assumptions;
  return j.dump();
}

namespace detail {
inline std::vector<std::string>& registered_description_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
}  // namespace detail

NPUSIM_FUNC void add_description_dir(const std::string& dir) {
  auto& dirs = detail::registered_description_dirs();
  if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
}

NPUSIM_FUNC std::vector<std::string> description_dirs(const std::vector<std::string>& extra) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("NPUSIM_NPU_PATH"); env && *env) {
    const std::string s = env;
    for (std::size_t a = 0; a <= s.size();) {
      const std::size_t b = std::min(s.find(':', a), s.size());
      if (b > a) dirs.push_back(s.substr(a, b - a));
      a = b + 1;
    }
  }
  const auto& registered = detail::registered_description_dirs();
  dirs.insert(dirs.end(), registered.begin(), registered.end());
#ifdef NPUSIM_NPU_CONFIG_DIR
  dirs.push_back(NPUSIM_NPU_CONFIG_DIR);
#endif
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  return dirs;
}

NPUSIM_FUNC std::vector<std::string> bundled_names(const std::vector<std::string>& extra) {
  std::set<std::string> names;
  for (const auto& dir : description_dirs(extra)) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".json") names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

NPUSIM_FUNC FoundDescription find_description(const std::string& spec, const std::vector<std::string>& extra) {
  const bool path_like = spec.find('/') != std::string::npos || spec.ends_with(".json");
  if (path_like) return {read_description_file(spec), spec};
  for (const auto& dir : description_dirs(extra)) {
    const std::string p = (std::filesystem::path(dir) / (spec + ".json")).string();
    if (std::error_code ec; std::filesystem::is_regular_file(p, ec)) return {read_description_file(p), p};
  }
  std::string known;
  for (const auto& n : bundled_names(extra)) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::unsupported, "unknown NPU description '" + spec + "'",
              {.expected = (known.empty() ? std::string("a path to a .json description (no bundled ones were found; set NPUSIM_NPU_PATH)")
                                          : "one of " + known + ", or a path to a .json description"),
               .found = spec});
}

}  // namespace npusim::inline NPUSIM_ABI::npu
