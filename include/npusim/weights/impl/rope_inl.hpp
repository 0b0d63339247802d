// Definitions for npusim/weights/rope.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <cmath>
#include <numbers>

#include "npusim/ir/json.hpp"
#include "npusim/weights/rope.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC std::string RopeParams::describe() const {
  std::string s = "rope_theta " + NumberRange::format(theta) + ", " + type + ", rotary dim " + std::to_string(dim);
  if (type != "default") s += ", factor " + NumberRange::format(factor);
  return s;
}

NPUSIM_FUNC RopeParams rope_params(const ir::json& config, const std::string& file) {
  auto field = [&](const ir::json& obj, const char* k) -> const ir::json* {
    auto it = obj.find(k);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  };
  // Every number within what the quantity can be (rope_ranges), refused by name otherwise.
  auto number = [&](const ir::json& obj, const char* k, const std::string& where, const NumberRange& r) {
    const ir::json* v = field(obj, k);
    if (!v) throw Error(ErrorCode::parse, where + " has no \"" + k + "\" (needed to compute the rotary inv_freq)", {.file = file});
    return check_range(ir::get_number(*v, where + "." + k, file), r, where + "." + k, {.file = file}, ErrorCode::parse);
  };
  if (!config.is_object()) throw Error(ErrorCode::parse, "config.json must be a JSON object", {.file = file});
  RopeParams p;
  const ir::json* scaling = nullptr;
  std::string where = "config.json";
  if (const ir::json* rp = field(config, "rope_parameters")) {
    if (!rp->is_object() || !field(*rp, "rope_theta"))
      throw Error(ErrorCode::unsupported, "rope_parameters without one rope_theta (per-layer-type rope parameters) are not supported",
                  {.file = file, .expected = "{\"rope_theta\": ..., \"rope_type\": ...}"});
    scaling = rp, where = "config.json rope_parameters";
    p.theta = number(*rp, "rope_theta", where, rope_ranges::theta);
  } else {
    if (field(config, "rope_theta")) p.theta = number(config, "rope_theta", where, rope_ranges::theta);
    scaling = field(config, "rope_scaling");
    if (scaling && !scaling->is_object()) throw Error(ErrorCode::parse, "rope_scaling must be an object or null", {.file = file});
    where = "config.json rope_scaling";
  }
  if (scaling) {
    const ir::json* t = field(*scaling, "rope_type");
    if (!t) t = field(*scaling, "type");
    if (t) p.type = ir::get_string(*t, where + ".rope_type", file);
  }
  if (p.type == "linear" || p.type == "llama3") p.factor = number(*scaling, "factor", where, rope_ranges::factor);
  if (p.type == "llama3") {
    p.low_freq_factor = number(*scaling, "low_freq_factor", where, rope_ranges::factor);
    p.high_freq_factor = number(*scaling, "high_freq_factor", where, rope_ranges::factor);
    p.original_max_position_embeddings = number(*scaling, "original_max_position_embeddings", where, rope_ranges::positions);
    if (!(p.high_freq_factor > p.low_freq_factor))
      throw Error(ErrorCode::parse, "llama3 rope scaling needs high_freq_factor > low_freq_factor", {.file = file,
                  .expected = "> " + NumberRange::format(p.low_freq_factor), .found = NumberRange::format(p.high_freq_factor)});
  } else if (p.type != "default" && p.type != "linear") {
    throw Error(ErrorCode::unsupported, "rope type '" + p.type + "' is not supported (npusim computes default, linear and llama3)",
                {.file = file, .expected = "default, linear or llama3", .found = p.type});
  }

  double head_dim = 0;
  if (field(config, "head_dim")) {
    head_dim = number(config, "head_dim", "config.json", rope_ranges::head_dim);
  } else {
    const double hidden = number(config, "hidden_size", "config.json", rope_ranges::hidden_size);
    const double heads = number(config, "num_attention_heads", "config.json", rope_ranges::heads);
    head_dim = std::floor(hidden / heads);
  }
  double partial = 1.0;
  if (field(config, "partial_rotary_factor")) partial = number(config, "partial_rotary_factor", "config.json", rope_ranges::partial);
  else if (scaling && field(*scaling, "partial_rotary_factor")) partial = number(*scaling, "partial_rotary_factor", where, rope_ranges::partial);
  const double dim = std::trunc(head_dim * partial);
  if (!(dim >= 1))
    throw Error(ErrorCode::parse, "rotary dimension from head_dim x partial_rotary_factor is zero", {.file = file,
                .expected = ">= 1", .found = NumberRange::format(head_dim) + " x " + NumberRange::format(partial)});
  p.dim = static_cast<std::int64_t>(dim);
  // Checked again in the type the frequencies are used in: every float32 inv_freq finite and > 0.
  try {
    (void)rope_inv_freq(p);
  } catch (Error& e) {
    throw e.with_file(file);
  }
  return p;
}

NPUSIM_FUNC Tensor rope_inv_freq(const RopeParams& p) {
  using detail::f32;
  const std::int64_t n = p.count();
  Tensor t = Tensor::empty(DType::f32, {n});
  float* out = t.data<float>();
  const float theta = static_cast<float>(p.theta), dim = static_cast<float>(p.dim), factor = static_cast<float>(p.factor);
  const float low_wavelen = f32(p.original_max_position_embeddings / p.low_freq_factor);
  const float high_wavelen = f32(p.original_max_position_embeddings / p.high_freq_factor);
  const float two_pi = f32(2 * std::numbers::pi), old_len = f32(p.original_max_position_embeddings);
  const float low = f32(p.low_freq_factor), span = f32(p.high_freq_factor - p.low_freq_factor);
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = f32(double(static_cast<float>(2 * i)) / dim);
    float inv = f32(1.0 / double(std::pow(theta, e)));
    if (p.type == "linear") {
      inv = f32(double(inv) / factor);
    } else if (p.type == "llama3") {
      const float wavelen = f32(double(f32(1.0 / inv)) * two_pi);
      const float scaled = wavelen > low_wavelen ? f32(double(inv) / factor) : inv;
      const float smooth = f32(double(f32(double(f32(double(f32(1.0 / wavelen)) * old_len)) - low)) / span);
      const float smoothed = f32(double(f32(double(f32(double(f32(1.0 - smooth)) * scaled)) / factor)) + double(f32(double(smooth) * scaled)));
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      inv = medium ? smoothed : scaled;
    }
    // Ranges in double do not make float32 safe (rope_theta 1e-45 is a float32 denormal, 1e308
    // overflows it): a frequency that is not a positive finite float32 gives NaN logits.
    if (!(std::isfinite(inv) && inv > 0))
      throw Error(ErrorCode::parse, "rotary inv_freq is not a positive finite float32 (rope_theta or the scaling factors out of float32's range)",
                  {.tensor = "inv_freq[" + std::to_string(i) + "]", .expected = "a positive finite float32", .found = std::to_string(inv) + " from " + p.describe()});
    out[i] = inv;
  }
  return t;
}

}  // namespace npusim::inline NPUSIM_ABI::weights
