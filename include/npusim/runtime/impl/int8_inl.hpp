// Definitions for npusim/runtime/int8.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "npusim/ir/json.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/quantize_int8.hpp"
#include "npusim/runtime/image.hpp"
#include "npusim/runtime/int8.hpp"
#include "npusim/runtime/tensor_files.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

namespace int8_detail {

inline std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline bool is_image(const std::string& ext) {
  static const std::set<std::string> exts{".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".gif", ".tga"};
  return exts.count(ext) > 0;
}

inline void check_finite(const Tensor& t, const std::string& file, const std::string& input) {
  if (!is_floating(t.dtype())) return;
  const Tensor f = t.to(DType::f32);
  for (std::int64_t i = 0; i < f.numel(); ++i)
    if (!std::isfinite(f.data<float>()[i]))
      throw Error(ErrorCode::check, "a calibration or evaluation input holds NaN or infinity", {.file = file, .tensor = input, .found = "element " + std::to_string(i)});
}

inline std::string strip_twin(const std::string& twin) { return twin.substr(0, twin.size() - std::string_view(".int8").size()); }

// The parameters of an int8 tensor of an int8 graph, from its producer's attributes.
inline quant::Affine twin_affine(const ir::Graph& g, ir::TensorId t) {
  const std::int32_t p = g.tensor(t).producer;
  if (p < 0) throw Error(ErrorCode::graph, "an int8 tensor has no producer (npusim bug)", {.tensor = g.tensor(t).name});
  const ir::Node& n = g.nodes[static_cast<std::size_t>(p)];
  if (n.op_type == "npusim.qmax_pool2d") return twin_affine(g, n.inputs.at(0));  // the input's parameters
  const bool q = n.op_type == "quantized_decomposed.quantize_per_tensor.default";
  const ir::AttrValue* s = n.attrs.find(q ? "scale" : "out_scale");
  const ir::AttrValue* z = n.attrs.find(q ? "zero_point" : "out_zero_point");
  if (!s || !z) throw Error(ErrorCode::graph, "an int8 tensor's producer has no scale and zero point (npusim bug)", {.node = n.name});
  return {static_cast<float>(s->as_double()), static_cast<std::int32_t>(z->as_int())};
}

inline Tensor quantize_tensor(const Tensor& f, const quant::Affine& a) {
  Tensor q = Tensor::empty(DType::i8, f.shape());
  const Tensor x = f.to(DType::f32);
  for (std::int64_t i = 0; i < x.numel(); ++i) q.data<std::int8_t>()[i] = static_cast<std::int8_t>(quant::quantize(x.data<float>()[i], a));
  return q;
}
inline Tensor dequantize_tensor(const Tensor& q8, const quant::Affine& a) {
  const Tensor q = q8.to(DType::i32);
  Tensor f = Tensor::empty(DType::f32, q.shape());
  for (std::int64_t i = 0; i < q.numel(); ++i) f.data<float>()[i] = quant::dequantize(q.data<std::int32_t>()[i], a);
  return f;
}

// The graph after the passes, as compile() partitions it.
inline ir::Graph passed_graph(const ir::Graph& g, const partition::TargetInfo& target, program::CompileOptions opt) {
  ir::Graph gp = g;
  program::CompiledProgram scratch;
  opt.observe.clear();
  ops::check_graph(gp);
  program::run_passes(gp, target, opt, scratch);
  return gp;
}

inline std::map<std::string, std::size_t, std::less<>> output_index(const program::CompiledProgram& p) {
  std::map<std::string, std::size_t, std::less<>> m;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) m.emplace(p.outputs[i].name, i);
  return m;
}

inline std::vector<std::int64_t> top5(const float* row, std::int64_t c) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(c));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](std::int64_t a, std::int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  idx.resize(5);
  return idx;
}

}  // namespace int8_detail

NPUSIM_FUNC std::vector<Tensor> synthetic_input_set(const std::vector<program::IoSpec>& inputs, std::int64_t i, std::uint64_t seed) {
  std::vector<Tensor> set;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const program::IoSpec& s = inputs[k];
    if (!is_floating(s.dtype))
      throw Error(ErrorCode::unsupported, "synthetic inputs are float values: this model has an integer input", {.tensor = s.name, .found = std::string(dtype_name(s.dtype))});
    std::uint64_t state = (seed << 32) + (static_cast<std::uint64_t>(i) << 20) + k;
    Tensor t = Tensor::empty(DType::f32, s.shape);
    float* p = t.data<float>();
    const std::int64_t n = t.numel();
    for (std::int64_t j = 0; j < n; j += 2) {
      const double u1 = (static_cast<double>(int8_detail::splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
      const double u2 = static_cast<double>(int8_detail::splitmix64(state) >> 11) * 0x1.0p-53;
      const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * 3.14159265358979323846 * u2;
      p[j] = static_cast<float>(r * std::cos(a));
      if (j + 1 < n) p[j + 1] = static_cast<float>(r * std::sin(a));
    }
    set.push_back(t.to(s.dtype));
  }
  return set;
}

NPUSIM_FUNC Int8Inputs int8_inputs(const std::string& spec, const std::vector<program::IoSpec>& inputs, std::int64_t count, std::int64_t skip,
                                   std::uint64_t synthetic_seed) {
  namespace fs = std::filesystem;
  Int8Inputs r;
  if (spec.starts_with("synthetic:")) {
    std::int64_t n = 0;
    try {
      std::size_t used = 0;
      n = std::stoll(spec.substr(10), &used);
      if (used != spec.size() - 10) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1) throw Error(ErrorCode::attr, "synthetic inputs need a count", {.expected = "synthetic:N with N >= 1", .found = spec});
    if (count > 0) n = std::min(n, count);
    for (std::int64_t i = 0; i < n; ++i) r.sets.push_back(synthetic_input_set(inputs, skip + i, synthetic_seed));
    r.from = std::to_string(n) + " synthetic inputs (npusim-int8-synth-v1, seed " + std::to_string(synthetic_seed) + ")";
    return r;
  }
  std::error_code ec;
  if (!fs::is_directory(spec, ec))
    throw Error(ErrorCode::io, "calibration / evaluation inputs must be a folder (of images, .npy or .safetensors files) or synthetic:N", {.file = spec});
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(spec)) {
    if (!e.is_regular_file() || e.path().filename().string().starts_with(".")) continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (static_cast<std::int64_t>(files.size()) <= skip)
    throw Error(ErrorCode::io, "no input files in the folder" + std::string(skip ? " after the ones skipped" : ""),
                {.file = spec, .expected = "images, .npy or .safetensors files", .found = std::to_string(files.size()) + " file(s)"});
  std::optional<std::size_t> image_input;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].shape.size() == 4 && inputs[k].shape[0] == 1 && inputs[k].shape[1] == 3 && is_floating(inputs[k].dtype)) image_input = k;
  for (std::size_t f = static_cast<std::size_t>(skip); f < files.size() && (count <= 0 || static_cast<std::int64_t>(r.sets.size()) < count); ++f) {
    const std::string path = files[f].string();
    std::string ext = files[f].extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    std::vector<Tensor> set;
    if (int8_detail::is_image(ext)) {
      if (inputs.size() != 1 || !image_input)
        throw Error(ErrorCode::unsupported, "an image input needs a model with one input [1, 3, H, W]", {.file = path});
      const program::IoSpec& s = inputs[*image_input];
      set.push_back(load_image(path, ImagePreprocess::for_input_shape(s.shape, s.name)).to(s.dtype));
    } else if (ext == ".npy" || ext == ".safetensors") {
      if (ext == ".npy" && inputs.size() != 1)
        throw Error(ErrorCode::unsupported, "a .npy file holds one input, and this model has several: use .safetensors files with every input by name", {.file = path});
      for (const auto& s : inputs) set.push_back(load_tensor_file(path, {s.name, s.dtype, s.shape}));
    } else {
      throw Error(ErrorCode::io, "a file in the inputs folder is neither an image nor a .npy / .safetensors tensor", {.file = path, .found = ext});
    }
    for (std::size_t k = 0; k < set.size(); ++k) int8_detail::check_finite(set[k], path, inputs[k].name);
    r.sets.push_back(std::move(set));
  }
  r.from = std::to_string(r.sets.size()) + " input(s) from " + spec;
  return r;
}

NPUSIM_FUNC void Int8Error::add(const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    dot += x * y, aa += x * x, bb += y * y, diff += (x - y) * (x - y);
  }
}
NPUSIM_FUNC double Int8Error::cosine() const { return aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0); }
NPUSIM_FUNC double Int8Error::rel_l2() const { return aa > 0 ? std::sqrt(diff / aa) : std::sqrt(diff); }

NPUSIM_FUNC Calibration calibrate(const ir::Graph& g, const partition::TargetInfo& target, const program::CompileOptions& opt, const RunnerFactory& make,
                                  const std::vector<std::vector<Tensor>>& inputs, const CalibrateOptions& co, const Progress& progress) {
  if (inputs.empty()) throw Error(ErrorCode::check, "calibration needs at least one input");
  if (co.observer == Observer::percentile && !(co.percentile > 50.0 && co.percentile <= 100.0))
    throw Error(ErrorCode::attr, "the calibration percentile must be in (50, 100]", {.found = std::to_string(co.percentile)});
  program::CompileOptions o = opt;
  o.int8.ranges.clear();
  const ir::Graph gp = int8_detail::passed_graph(g, target, o);
  o.observe = passes::int8_observed_tensors(gp, o.int8);
  const program::CompiledProgram p = program::compile(g, target, o);
  auto runner = make(p);
  const auto at = int8_detail::output_index(p);
  std::map<std::string, std::size_t, std::less<>> input_at;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) input_at.emplace(p.inputs[i].name, i);
  struct Acc {
    double lo = 0, hi = 0;
    float min = 0, max = 0;
    bool any = false;
  };
  std::map<std::string, Acc, std::less<>> acc;
  Calibration c;
  std::vector<float> sorted;
  for (std::size_t s = 0; s < inputs.size(); ++s) {
    const std::vector<Tensor> outs = runner->run(inputs[s]);
    for (const std::string& name : o.observe) {
      const Tensor* t = nullptr;
      if (auto it = at.find(name); it != at.end()) t = &outs.at(it->second);
      else if (auto in = input_at.find(name); in != input_at.end()) t = &inputs[s].at(in->second);
      else throw Error(ErrorCode::graph, "an observed tensor is neither an output nor an input of the calibration program (npusim bug)", {.tensor = name});
      const Tensor f = t->to(DType::f32);
      const float* v = f.data<float>();
      const std::int64_t n = f.numel();
      if (n == 0) continue;
      Acc& a = acc[name];
      float mn = v[0], mx = v[0];
      for (std::int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(v[i]))
          throw Error(ErrorCode::check, "an activation is NaN or infinite on a calibration input", {.tensor = name, .found = "input " + std::to_string(s)});
        mn = std::min(mn, v[i]), mx = std::max(mx, v[i]);
      }
      a.min = a.any ? std::min(a.min, mn) : mn, a.max = a.any ? std::max(a.max, mx) : mx, a.any = true;
      if (co.observer == Observer::percentile) {
        sorted.assign(v, v + n);
        const auto k_hi = static_cast<std::size_t>(std::floor(co.percentile / 100.0 * static_cast<double>(n - 1)));
        const auto k_lo = static_cast<std::size_t>(n - 1) - k_hi;
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k_hi), sorted.end());
        a.hi += sorted[k_hi];
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k_lo), sorted.end());
        a.lo += sorted[k_lo];
      }
    }
    if (progress) progress("calibrating", s + 1, inputs.size());
  }
  const double count = static_cast<double>(inputs.size());
  for (const auto& [name, a] : acc)
    c.ranges[name] = co.observer == Observer::percentile ? passes::Int8Range{static_cast<float>(a.lo / count), static_cast<float>(a.hi / count)}
                                                         : passes::Int8Range{a.min, a.max};
  c.inputs = static_cast<std::int64_t>(inputs.size());
  return c;
}

NPUSIM_FUNC Int8Report accuracy_report(const ir::Graph& g, const partition::TargetInfo& target, const program::CompileOptions& float_opt,
                                       const program::CompileOptions& int8_opt, const RunnerFactory& make, const Int8Inputs& inputs,
                                       const Progress& progress) {
  using namespace int8_detail;
  if (inputs.sets.empty()) throw Error(ErrorCode::check, "the accuracy report needs at least one input");
  // The int8 graph as compiled, and its integer ops.
  const ir::Graph gq = passed_graph(g, target, int8_opt);
  struct Site {
    const ir::Node* node;
    std::vector<std::string> float_inputs;  // the float tensors its int8 inputs stand for
    std::vector<quant::Affine> in_affine;
    quant::Affine out_affine;
    std::string float_output, twin;
    std::unique_ptr<Runner> alone;  // this op alone, on its int8 inputs
  };
  std::vector<Site> sites;
  program::CompileOptions fo = float_opt, qo = int8_opt;
  fo.int8 = {}, fo.observe.clear(), qo.observe.clear();
  std::set<std::string> float_seen;
  for (const ir::Node& n : gq.nodes) {
    if (n.op_type != "npusim.qconv2d" && n.op_type != "npusim.qlinear" && n.op_type != "npusim.qadd" && n.op_type != "npusim.qcat")
      continue;  // qmax_pool2d is exact
    Site s;
    s.node = &n;
    s.twin = gq.tensor(n.outputs.at(0)).name;
    s.float_output = strip_twin(s.twin);
    s.out_affine = twin_affine(gq, n.outputs[0]);
    for (ir::TensorId t : n.inputs) {
      const ir::TensorInfo& ti = gq.tensor(t);
      if (ti.kind != ir::TensorKind::intermediate || ti.dtype != DType::i8) continue;
      s.float_inputs.push_back(strip_twin(ti.name));
      s.in_affine.push_back(twin_affine(gq, t));
    }
    for (const std::string& f : s.float_inputs)
      if (float_seen.insert(f).second) fo.observe.push_back(f);
    if (float_seen.insert(s.float_output).second) fo.observe.push_back(s.float_output);
    qo.observe.push_back(s.twin);
    sites.push_back(std::move(s));
  }
  const program::CompiledProgram pf = program::compile(g, target, fo);
  const program::CompiledProgram pq = program::compile(g, target, qo);
  // Each integer op alone: a graph of that node, its int8 inputs as graph inputs.
  for (Site& s : sites) {
    ir::Graph mg;
    mg.model_name = s.node->name, mg.source = g.source;
    ir::Node n = *s.node;
    for (auto& t : n.inputs) {
      ir::TensorInfo ti = gq.tensor(t);
      ti.producer = -1, ti.producer_output = 0;
      const bool weight = ti.kind == ir::TensorKind::weight || ti.kind == ir::TensorKind::constant;
      if (!weight) ti.kind = ir::TensorKind::input, ti.weight_key.clear();
      t = mg.add_tensor(ti);
      (weight ? mg.weights : mg.inputs).push_back(t);
    }
    ir::TensorInfo out = gq.tensor(n.outputs.at(0));
    out.producer = 0, out.producer_output = 0;
    n.outputs = {mg.add_tensor(out)};
    mg.outputs = n.outputs;
    mg.nodes.push_back(std::move(n));
    program::CompileOptions mo = int8_opt;
    mo.int8 = {}, mo.observe.clear(), mo.fold_batch_norm = false;
    program::CompiledProgram mp = program::compile(std::move(mg), target, mo);
    mp.recipes = pq.recipes;  // its weights are the int8 program's derived ones
    s.alone = make(mp);
  }
  auto rf = make(pf);
  auto rq = make(pq);
  const auto fat = output_index(pf), qat = output_index(pq);
  Int8Report r;
  r.inputs = static_cast<std::int64_t>(inputs.sets.size());
  r.from = inputs.from;
  const std::size_t model_outputs = g.outputs.size();
  for (std::size_t i = 0; i < model_outputs; ++i) r.outputs.push_back({pf.outputs[i].name, {}, 0, 0, 0});
  for (const Site& s : sites) {
    const ops::OpInfo& info = ops::op_info(ops::require_op(*s.node));
    r.layers.push_back({s.node->name, std::string(info.id), s.float_output, {}, {}});
  }
  for (std::size_t si = 0; si < inputs.sets.size(); ++si) {
    const auto& set = inputs.sets[si];
    const std::vector<Tensor> of = rf->run(set), oq = rq->run(set);
    // Each observed float tensor as f32, converted once per input set (sites share inputs).
    std::map<std::string, Tensor, std::less<>> f32;
    auto float_value = [&](const std::string& name) -> const Tensor& {
      if (auto hit = f32.find(name); hit != f32.end()) return hit->second;
      if (auto it = fat.find(name); it != fat.end()) return f32.emplace(name, of.at(it->second).to(DType::f32)).first->second;
      for (std::size_t k = 0; k < pf.inputs.size(); ++k)
        if (pf.inputs[k].name == name) return f32.emplace(name, set.at(k).to(DType::f32)).first->second;
      throw Error(ErrorCode::graph, "a float tensor of the report is not observed (npusim bug)", {.tensor = name});
    };
    for (std::size_t i = 0; i < model_outputs; ++i) {
      const Tensor a = of[i].to(DType::f32), b = oq[i].to(DType::f32);
      Int8OutputRow& row = r.outputs[i];
      row.err.add(a.data<float>(), b.data<float>(), a.numel());
      if (a.rank() == 2 && a.shape()[1] >= 5) {
        const std::int64_t rows = a.shape()[0], c = a.shape()[1];
        for (std::int64_t k = 0; k < rows; ++k) {
          const auto ta = top5(a.data<float>() + k * c, c), tb = top5(b.data<float>() + k * c, c);
          row.top1_same += ta[0] == tb[0];
          int common = 0;
          for (auto x : ta) common += std::count(tb.begin(), tb.end(), x) > 0;
          row.top5_overlap += common / 5.0;
          ++row.rows;
        }
      }
    }
    for (std::size_t k = 0; k < sites.size(); ++k) {
      const Site& s = sites[k];
      const Tensor& fy = float_value(s.float_output);
      const Tensor qy = dequantize_tensor(oq.at(qat.at(s.twin)), s.out_affine);
      r.layers[k].out.add(fy.data<float>(), qy.data<float>(), fy.numel());
      std::vector<Tensor> ins;
      for (std::size_t j = 0; j < s.float_inputs.size(); ++j) ins.push_back(quantize_tensor(float_value(s.float_inputs[j]), s.in_affine[j]));
      const Tensor own = dequantize_tensor(s.alone->run(ins).at(0), s.out_affine);
      r.layers[k].own.add(fy.data<float>(), own.data<float>(), fy.numel());
    }
    if (progress) progress("evaluating", si + 1, inputs.sets.size());
  }
  std::stable_sort(r.layers.begin(), r.layers.end(), [](const Int8LayerRow& a, const Int8LayerRow& b) { return a.own.rel_l2() > b.own.rel_l2(); });
  return r;
}

NPUSIM_FUNC void print_report(std::FILE* out, const Int8Report& r, std::size_t max_layers) {
  std::fprintf(out, "accuracy of int8 against float on %s:\n", r.from.c_str());
  for (const auto& o : r.outputs) {
    std::fprintf(out, "  output %s: cosine %.5f, rel L2 %.4f", o.name.c_str(), o.err.cosine(), o.err.rel_l2());
    if (o.rows)
      std::fprintf(out, ", top-1 agreement %lld/%lld (%.1f%%), top-5 overlap %.1f%%", static_cast<long long>(o.top1_same), static_cast<long long>(o.rows),
                   100.0 * static_cast<double>(o.top1_same) / static_cast<double>(o.rows), 100.0 * o.top5_overlap / static_cast<double>(o.rows));
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "per layer, worst own error first (own: the float model's input quantized, this layer alone in int8; output: in the int8 model):\n");
  std::fprintf(out, "  %-4s %-40s %-8s %12s %12s %12s %12s\n", "rank", "layer", "op", "own rel L2", "own cosine", "out rel L2", "out cosine");
  for (std::size_t i = 0; i < r.layers.size() && i < max_layers; ++i) {
    const auto& l = r.layers[i];
    std::fprintf(out, "  %-4zu %-40s %-8s %12.5f %12.6f %12.5f %12.6f\n", i + 1, l.node.c_str(), l.op.c_str(), l.own.rel_l2(), l.own.cosine(), l.out.rel_l2(),
                 l.out.cosine());
  }
  if (r.layers.size() > max_layers) std::fprintf(out, "  ... %zu more (--report-json has every layer)\n", r.layers.size() - max_layers);
}

NPUSIM_FUNC nlohmann::json report_json(const Int8Report& r) {
  nlohmann::json j;
  j["inputs"] = r.inputs;
  j["from"] = r.from;
  j["outputs"] = nlohmann::json::array();
  for (const auto& o : r.outputs) {
    nlohmann::json x{{"name", o.name}, {"cosine", o.err.cosine()}, {"rel_l2", o.err.rel_l2()}};
    if (o.rows) {
      x["rows"] = o.rows;
      x["top1_agreement"] = static_cast<double>(o.top1_same) / static_cast<double>(o.rows);
      x["top5_overlap"] = o.top5_overlap / static_cast<double>(o.rows);
    }
    j["outputs"].push_back(x);
  }
  j["layers"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    j["layers"].push_back({{"rank", i + 1}, {"node", l.node}, {"op", l.op}, {"tensor", l.tensor}, {"own_rel_l2", l.own.rel_l2()}, {"own_cosine", l.own.cosine()},
                           {"output_rel_l2", l.out.rel_l2()}, {"output_cosine", l.out.cosine()}});
  }
  return j;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
