// Weight recipes: weights the compiler derives from checkpoint weights (a BatchNorm folded into
// the preceding conv, channels padded for an aligned layout, a dtype cast). The compiler records
// them in the program; the loader applies them, in float64, once per load.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/ir/attr.hpp"

namespace npusim::inline NPUSIM_ABI::weights {

struct Recipe {
  std::string kind;                  // "bn_fold", "pad", "cast"
  std::vector<std::string> inputs;   // source keys ("" for an absent optional input)
  std::vector<std::string> outputs;  // derived keys
  ir::AttrMap params;
  friend bool operator==(const Recipe&, const Recipe&) = default;
};

// bn_fold inputs: conv weight, conv bias?, gamma?, beta?, running_mean, running_var;
// outputs: weight, bias; params: eps.
inline Recipe bn_fold_recipe(std::vector<std::string> inputs, std::vector<std::string> outputs, double eps) {
  Recipe r{"bn_fold", std::move(inputs), std::move(outputs), {}};
  r.params.set("eps", ir::AttrValue(eps));
  return r;
}

// pad: zero-pads dims of one tensor to `shape`.
inline Recipe pad_recipe(std::string input, std::string output, const Shape& shape) {
  Recipe r{"pad", {std::move(input)}, {std::move(output)}, {}};
  ir::AttrList l;
  for (auto d : shape) l.push_back(d);
  r.params.set("shape", ir::AttrValue(std::move(l)));
  return r;
}

// Applies one recipe. `get` returns a source tensor by key (float tensors in any dtype). Results
// are computed in float64 and returned in float32 (pad keeps its input's dtype); the loader rounds
// them to the dtype the target stores.
inline std::vector<Tensor> apply_recipe(const Recipe& r, const std::function<Tensor(const std::string&)>& get) {
  auto f64 = [&](const std::string& k) { return k.empty() ? Tensor() : get(k).to(DType::f64); };
  if (r.kind == "bn_fold") {
    Tensor w = f64(r.inputs.at(0)), b = f64(r.inputs.at(1)), gamma = f64(r.inputs.at(2)), beta = f64(r.inputs.at(3));
    Tensor mean = f64(r.inputs.at(4)), var = f64(r.inputs.at(5));
    const double eps = r.params.find("eps")->as_double();
    const std::int64_t cout = w.shape().at(0), per = w.numel() / cout;
    if (mean.numel() != cout || var.numel() != cout)
      throw Error(ErrorCode::shape, "bn_fold: BatchNorm statistics do not match the conv's output channels",
                  {.tensor = r.inputs[4], .expected = std::to_string(cout), .found = std::to_string(mean.numel())});
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
    Tensor src = get(r.inputs.at(0));
    Shape to;
    for (const auto& v : r.params.find("shape")->as_list()) to.push_back(v.as_int());
    if (to.size() != src.rank())
      throw Error(ErrorCode::shape, "pad recipe rank mismatch", {.tensor = r.inputs[0], .expected = to_string(to), .found = to_string(src.shape())});
    Tensor out = Tensor::zeros(src.dtype(), to);
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
  if (r.kind == "cast") return {get(r.inputs.at(0)).to(DType::f32)};
  throw Error(ErrorCode::unsupported, "unknown weight recipe '" + r.kind + "'", {.expected = "bn_fold, pad or cast", .found = r.kind});
}

}  // namespace npusim::inline NPUSIM_ABI::weights
