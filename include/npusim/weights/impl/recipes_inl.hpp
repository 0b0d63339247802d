// Definitions for npusim/weights/recipes.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <cmath>

#include "npusim/core/quant.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

NPUSIM_FUNC Recipe bn_fold_recipe(std::vector<std::string> inputs, std::vector<std::string> outputs, double eps) {
  Recipe r{"bn_fold", std::move(inputs), std::move(outputs), {}};
  r.params.set("eps", ir::AttrValue(eps));
  return r;
}

NPUSIM_FUNC Recipe pad_recipe(std::string input, std::string output, const Shape& shape) {
  Recipe r{"pad", {std::move(input)}, {std::move(output)}, {}};
  ir::AttrList l;
  for (auto d : shape) l.push_back(d);
  r.params.set("shape", ir::AttrValue(std::move(l)));
  return r;
}

NPUSIM_FUNC void check_recipe(const Recipe& r) {
  auto fail = [&](const std::string& what) {
    return Error(ErrorCode::parse, r.kind + " recipe: " + what, {.tensor = r.outputs.empty() ? std::string() : r.outputs[0]});
  };
  auto counts = [&](std::size_t in, std::size_t out) {
    if (r.inputs.size() != in || r.outputs.size() != out)
      throw fail("expected " + std::to_string(in) + " input(s) and " + std::to_string(out) + " output(s), found " +
                 std::to_string(r.inputs.size()) + " and " + std::to_string(r.outputs.size()));
    for (const auto& o : r.outputs)
      if (o.empty()) throw fail("an output has no name");
  };
  if (r.kind == "bn_fold") {
    counts(6, 2);
    if (r.inputs[0].empty() || r.inputs[4].empty() || r.inputs[5].empty()) throw fail("conv weight and running statistics are required");
    const ir::AttrValue* eps = r.params.find("eps");
    if (!eps || !eps->is_number()) throw fail("param 'eps' must be a number");
  } else if (r.kind == "pad") {
    counts(1, 1);
    const ir::AttrValue* shape = r.params.find("shape");
    if (!shape || !shape->is_list()) throw fail("param 'shape' must be a list of sizes");
    for (const auto& d : shape->as_list())
      if (!d.is_int() || d.as_int() < 0) throw fail("param 'shape' must be a list of sizes");
  } else if (r.kind == "cast") {
    counts(1, 1);
  } else if (r.kind == "quantize_per_channel") {
    counts(2, 3);
    const ir::AttrValue *s = r.params.find("input_scale"), *b = r.params.find("bits");
    if (!s || !s->is_number() || !(s->as_double() > 0) || !std::isfinite(s->as_double())) throw fail("param 'input_scale' must be a positive number");
    if (!b || !b->is_int() || b->as_int() < 2 || b->as_int() > 8) throw fail("param 'bits' must be an integer in 2..8");
  } else {
    throw Error(ErrorCode::unsupported, "unknown weight recipe '" + r.kind + "'", {.expected = "bn_fold, pad, cast or quantize_per_channel", .found = r.kind});
  }
  if (r.inputs.size() && r.inputs[0].empty()) throw fail("its first input has no name");
}

NPUSIM_FUNC std::vector<Tensor> apply_recipe(const Recipe& r, const std::function<Tensor(const std::string&)>& get) {
  check_recipe(r);
  auto f64 = [&](const std::string& k) { return k.empty() ? Tensor() : get(k).to(DType::f64); };
  if (r.kind == "bn_fold") {
    Tensor w = f64(r.inputs[0]), b = f64(r.inputs[1]), gamma = f64(r.inputs[2]), beta = f64(r.inputs[3]);
    Tensor mean = f64(r.inputs[4]), var = f64(r.inputs[5]);
    const double eps = r.params.find("eps")->as_double();
    const std::int64_t cout = w.rank() ? w.shape()[0] : 0, per = cout ? w.numel() / cout : 0;
    if (cout < 1) throw Error(ErrorCode::shape, "bn_fold: the conv weight has no output channels", {.tensor = r.inputs[0], .found = to_string(w.shape())});
    for (std::size_t i : {1, 2, 3, 4, 5}) {
      const Tensor& t = i == 1 ? b : i == 2 ? gamma : i == 3 ? beta : i == 4 ? mean : var;
      if (t.defined() && t.numel() != cout)
        throw Error(ErrorCode::shape, "bn_fold: bias or BatchNorm parameters do not match the conv's output channels",
                    {.tensor = r.inputs[i], .expected = std::to_string(cout), .found = std::to_string(t.numel())});
    }
    Tensor nw = Tensor::empty(DType::f64, w.shape()), nb = Tensor::empty(DType::f64, {cout});
    for (std::int64_t c = 0; c < cout; ++c) {
      const double g = gamma.defined() ? gamma.data<double>()[c] : 1.0, be = beta.defined() ? beta.data<double>()[c] : 0.0;
      const double s = g / std::sqrt(var.data<double>()[c] + eps);
      for (std::int64_t i = 0; i < per; ++i) nw.data<double>()[c * per + i] = w.data<double>()[c * per + i] * s;
      nb.data<double>()[c] = ((b.defined() ? b.data<double>()[c] : 0.0) - mean.data<double>()[c]) * s + be;
    }
    return {nw.to(DType::f32), nb.to(DType::f32)};
  }
  if (r.kind == "pad") {
    Tensor src = get(r.inputs[0]);
    Shape to;
    for (const auto& v : r.params.find("shape")->as_list()) to.push_back(v.as_int());
    bool grows = to.size() == src.rank();
    for (std::size_t d = 0; grows && d < to.size(); ++d) grows = to[d] >= src.shape()[d];
    if (!grows)
      throw Error(ErrorCode::shape, "pad recipe must keep the rank and only grow dims", {.tensor = r.inputs[0], .expected = to_string(to),
                                                                                       .found = to_string(src.shape())});
    Tensor out = Tensor::zeros(src.dtype(), to);
    if (src.numel() == 0) return {out};
    const std::size_t es = dtype_size(src.dtype());
    // Copy the source into the leading corner, row by row over the last dim.
    Strides ss = contiguous_strides(src.shape()), ds = contiguous_strides(to);
    const std::int64_t rows = src.rank() ? src.numel() / src.shape().back() : 1, len = src.rank() ? src.shape().back() : 1;
    for (std::int64_t r0 = 0; r0 < rows; ++r0) {
      std::int64_t rem = r0 * len, doff = 0;
      for (std::size_t d = 0; d < src.rank(); ++d) {
        std::int64_t i = rem / ss[d];
        rem %= ss[d];
        doff += i * ds[d];
      }
      std::memcpy(static_cast<std::byte*>(out.raw()) + static_cast<std::size_t>(doff) * es,
                  static_cast<const std::byte*>(src.raw()) + static_cast<std::size_t>(r0 * len) * es, static_cast<std::size_t>(len) * es);
    }
    return {out};
  }
  if (r.kind == "quantize_per_channel") {
    const Tensor w = get(r.inputs[0]).to(DType::f32);
    const Tensor b = r.inputs[1].empty() ? Tensor() : get(r.inputs[1]).to(DType::f32);
    const std::int64_t cout = w.rank() ? w.shape()[0] : 0, per = cout ? w.numel() / cout : 0;
    if (cout < 1) throw Error(ErrorCode::shape, "quantize_per_channel: the weight has no output channels", {.tensor = r.inputs[0], .found = to_string(w.shape())});
    if (b.defined() && b.numel() != cout)
      throw Error(ErrorCode::shape, "quantize_per_channel: the bias does not match the output channels", {.tensor = r.inputs[1], .expected = std::to_string(cout), .found = std::to_string(b.numel())});
    const auto bits = static_cast<int>(r.params.find("bits")->as_int());
    const float in_scale = static_cast<float>(r.params.find("input_scale")->as_double());
    const std::int32_t qmax = (1 << (bits - 1)) - 1, qmin = -qmax - 1;
    Tensor wq = Tensor::empty(DType::i8, w.shape()), sc = Tensor::empty(DType::f32, {cout}), bq = Tensor::zeros(DType::i32, {cout});
    const float* pw = w.data<float>();
    for (std::int64_t c = 0; c < cout; ++c) {
      float lo = 0, hi = 0;
      for (std::int64_t i = 0; i < per; ++i) {
        const float v = pw[c * per + i];
        if (!std::isfinite(v)) throw Error(ErrorCode::weights, "a weight to quantize is NaN or infinite", {.tensor = r.inputs[0], .found = "channel " + std::to_string(c)});
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
      const quant::Affine a = quant::choose_affine(lo, hi, true, qmin, qmax);
      sc.data<float>()[c] = a.scale;
      for (std::int64_t i = 0; i < per; ++i) wq.data<std::int8_t>()[c * per + i] = static_cast<std::int8_t>(quant::quantize(pw[c * per + i], a));
      if (b.defined()) {
        const float bs = in_scale * a.scale;
        const double v = std::nearbyint(b.data<float>()[c] * (1.0f / bs));
        bq.data<std::int32_t>()[c] = static_cast<std::int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
      }
    }
    return {wq, sc, bq};
  }
  return {get(r.inputs[0]).to(DType::f32)};  // cast
}

}  // namespace npusim::inline NPUSIM_ABI::weights
