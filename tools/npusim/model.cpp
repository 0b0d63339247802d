// What `run`, `bench` and `compile` take as MODEL, and the inputs and outputs of a run (model.hpp).
#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "npusim/core/npy.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/runtime/image.hpp"
#include "npusim/runtime/tensor_files.hpp"
#include "npusim/weights/open.hpp"

namespace npusim::cli {

bool Model::compiled() const { return program.has_value(); }

const weights::WeightSource* Model::weights() const { return compiled() ? program_weights.get() : source->weights.get(); }

std::string Model::kind() const { return source ? source->kind() : std::string(); }

std::vector<program::IoSpec> Model::inputs() const { return compiled() ? program->inputs : specs(source->graph, source->graph.inputs); }

std::vector<program::IoSpec> Model::outputs() const { return compiled() ? program->outputs : specs(source->graph, source->graph.outputs); }

std::vector<program::IoSpec> Model::specs(const ir::Graph& g, const std::vector<ir::TensorId>& ids) {
  std::vector<program::IoSpec> v;
  for (auto t : ids) v.push_back({g.tensor(t).name, g.tensor(t).shape, g.tensor(t).dtype});
  return v;
}

Model open_model(const std::string& path, const std::string& weights_spec) {
  Model m;
  m.path = path;
  if (is_npubin_path(path)) {
    m.program = program::load(path);
    m.name = std::filesystem::path(path).stem().string();
    if (weights_spec == "auto") {
      m.program_weights = program::embedded_weights(path);
      if (!m.program_weights)
        throw Error(ErrorCode::weights, "this .npubin carries no weights: give them with --weights (or compile with --embed-weights)",
                    {.file = path});
    } else if (weights_spec == "safetensors" || weights_spec == "synth") {
      throw Error(ErrorCode::weights, "--weights " + weights_spec + " names a case directory's file; a .npubin takes a path",
                  {.file = path, .expected = "auto, none or a path", .found = weights_spec});
    } else if (weights_spec != "none") {
      if (std::filesystem::is_directory(weights_spec))
        throw Error(ErrorCode::unsupported, "a Hugging Face directory is mapped onto an IR: compile with --embed-weights --weights DIR, then run the .npubin",
                    {.file = weights_spec});
      m.program_weights = weights::open_weights(weights_spec);
    }
    return m;
  }
  m.source = runtime::ModelDir::open(path, weights_spec);
  m.name = m.source->name;
  return m;
}

void adopt_program_target(TargetChoice& tc, const Model& m) {
  if (!m.compiled()) return;
  const std::string dt(dtype_short_name(m.program->compute));
  if (tc.target_given && tc.target != m.program->target)
    throw Error(ErrorCode::unsupported, "the .npubin was compiled for another target (recompile it, or leave --target out)",
                {.file = m.path, .expected = "--target " + m.program->target, .found = "--target " + tc.target});
  if (tc.dtype_given && tc.dtype != dt)
    throw Error(ErrorCode::unsupported, "the .npubin was compiled for another dtype (recompile it, or leave --dtype out)",
                {.file = m.path, .expected = "--dtype " + dt, .found = "--dtype " + tc.dtype});
  if (tc.interpret) throw Error(ErrorCode::unsupported, "--interpret runs an IR, not a compiled .npubin", {.file = m.path});
  if (!tc.force_fallback.empty()) throw Error(ErrorCode::unsupported, "--force-fallback acts when compiling; a .npubin is compiled already", {.file = m.path});
  if (const char* env = std::getenv("NPUSIM_FORCE_FALLBACK"); env && *env)
    throw Error(ErrorCode::unsupported, "NPUSIM_FORCE_FALLBACK acts when compiling; a .npubin is compiled already (unset it, or compile with it)",
                {.file = m.path, .found = std::string("NPUSIM_FORCE_FALLBACK=") + env});
  if (!tc.weights_dtype.empty())
    throw Error(ErrorCode::unsupported, "--weights-dtype acts when compiling; a .npubin is compiled already (compile it with --weights-dtype)", {.file = m.path});
  if (!tc.no_patterns.empty())
    throw Error(ErrorCode::unsupported, "--no-pattern acts when compiling; a .npubin is compiled already (compile it with --no-pattern)", {.file = m.path});
  if (tc.stages_given && tc.stages != program::stage_count(*m.program))
    throw Error(ErrorCode::unsupported, "--stages acts when compiling; this .npubin was compiled with another stage count (recompile it, or leave --stages out)",
                {.file = m.path, .expected = "--stages " + std::to_string(program::stage_count(*m.program)), .found = "--stages " + std::to_string(tc.stages)});
  tc.target = m.program->target, tc.dtype = dt, tc.stages = program::stage_count(*m.program);
}

program::CompiledProgram program_for(const TargetChoice& tc, const Model& m) { return m.compiled() ? *m.program : compile(tc, m.source->graph); }

bool InputArgs::given() const { return !inputs.empty() || !image.empty(); }

std::optional<std::size_t> image_input(const std::vector<program::IoSpec>& in) {
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (is_floating(in[i].dtype) && in[i].shape.size() == 4 && in[i].shape[1] == 3) {
      if (found) return std::nullopt;
      found = i;
    }
  return found;
}

std::string describe_spec(const program::IoSpec& s) { return "'" + s.name + "' " + std::string(dtype_name(s.dtype)) + " " + to_string(s.shape); }

GatheredInputs gather_inputs(const Model& m, const InputArgs& a, bool synthetic) {
  const std::vector<program::IoSpec> specs = m.inputs();
  std::map<std::string, std::string> files;  // input name -> file
  {
    std::vector<runtime::TensorArg> args;
    for (const std::string& arg : a.inputs) args.push_back(runtime::parse_tensor_arg(arg));
    std::vector<std::string> names;
    for (const auto& s : specs) names.push_back(s.name);
    for (const auto& ta : runtime::assign_input_args(std::move(args), names)) files.emplace(ta.name, ta.path);
  }
  std::optional<std::size_t> img;
  if (!a.image.empty()) {
    img = image_input(specs);
    if (!img) throw Error(ErrorCode::attr, "--image needs a model with one image input (float, [N, 3, H, W])", {.file = a.image});
    if (files.count(specs[*img].name)) throw Error(ErrorCode::attr, "--image and --input both give the image input", {.tensor = specs[*img].name});
  }

  GatheredInputs g;
  g.from_case = !a.given();
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const program::IoSpec& s = specs[i];
    if (auto f = files.find(s.name); f != files.end()) {
      g.tensors.push_back(runtime::load_tensor_file(f->second, {s.name, s.dtype, s.shape}));
      g.notes.push_back("input '" + s.name + "' from " + f->second);
    } else if (img && *img == i) {
      g.tensors.push_back(runtime::load_image(a.image, runtime::ImagePreprocess::for_input_shape(s.shape, s.name)).to(s.dtype));
      g.notes.push_back("input '" + s.name + "' from " + a.image + " (ImageNet preprocessing)");
    } else if (m.source && m.source->io && m.source->io->find(s.name)) {
      g.tensors.push_back(m.source->io->tensor(s.name));
    } else if (auto d = m.source ? m.source->llm_input(m.source->graph.tensor(m.source->graph.inputs[i])) : std::nullopt) {
      g.tensors.push_back(std::move(*d));
    } else if (synthetic) {
      Tensor t = Tensor::empty(s.dtype, s.shape);
      std::memset(t.raw(), 0, t.nbytes());
      if (is_floating(s.dtype)) {
        Tensor f = Tensor::empty(DType::f32, s.shape);
        for (std::int64_t k = 0; k < f.numel(); ++k) f.data<float>()[k] = static_cast<float>((k * 7919 % 2001) - 1000) / 1000.0f;
        t = f.to(s.dtype);
      }
      g.tensors.push_back(std::move(t));
      g.notes.push_back("input '" + s.name + "': synthetic values (none given)");
      g.from_case = false;
    } else {
      missing.push_back(describe_spec(s));
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& x : missing) list += (list.empty() ? "" : "; ") + x;
    throw Error(ErrorCode::io, "no value for " + std::to_string(missing.size()) + " graph input(s): " + list +
                                   ". Give each with --input NAME=FILE (.npy, .safetensors or raw:FILE)" + (image_input(specs) ? " or --image FILE" : ""),
                {.file = m.path});
  }
  return g;
}

Expected::operator bool() const { return static_cast<bool>(lookup); }

Expected expected_outputs(const Model& m, const std::string& file, bool inputs_from_case) {
  Expected e;
  const auto outs = m.outputs();
  if (!file.empty()) {
    if (file.ends_with(".npy")) {
      if (outs.size() != 1)
        throw Error(ErrorCode::attr, "an .npy file holds one tensor and the model has " + std::to_string(outs.size()) + " outputs: give a .safetensors",
                    {.file = file});
      auto t = std::make_shared<Tensor>(read_npy(file));
      e.lookup = [t, name = outs[0].name](const std::string& n) -> std::optional<Tensor> { return n == name ? std::optional<Tensor>(*t) : std::nullopt; };
    } else {
      auto f = std::make_shared<weights::SafetensorsFile>(weights::SafetensorsFile::open(file));
      bool any = false;
      for (const auto& o : outs) any = any || f->find(o.name);
      if (!any) {
        std::string names;
        for (const auto& o : outs) names += (names.empty() ? "" : ", ") + o.name;
        throw Error(ErrorCode::attr, "the expected-outputs file holds none of the model's outputs", {.file = file, .expected = names});
      }
      e.lookup = [f](const std::string& n) -> std::optional<Tensor> { return f->find(n) ? std::optional<Tensor>(f->tensor(n)) : std::nullopt; };
    }
    e.from = file;
    return e;
  }
  if (inputs_from_case && m.source && m.source->io) {
    const auto& io = *m.source->io;
    bool any = false;
    for (const auto& o : outs) any = any || io.find(o.name);
    if (!any) return e;
    e.lookup = [&io](const std::string& n) -> std::optional<Tensor> { return io.find(n) ? std::optional<Tensor>(io.tensor(n)) : std::nullopt; };
    e.from = m.source->dir + "/io.safetensors (PyTorch)";
  }
  return e;
}

double default_tolerance(const Model& m, bool half) {
  if (!m.compiled()) return harness::default_tolerance(m.source->graph, half, m.kind());
  double t = 0;
  for (const auto& part : m.program->partitions) t = std::max(t, harness::default_tolerance(part.graph, half || is_half(m.program->compute), ""));
  return t;
}

std::optional<double> quantized_tolerance(const std::string& weights_dtype) {
  const auto f = quant::parse_block_format(weights_dtype);
  if (!f) return std::nullopt;
  return *f == quant::BlockFormat::q8_0 ? 0.06 : 0.45;
}

void print_output_summary(std::FILE* out, const Model& m, const std::vector<program::IoSpec>& specs, const std::vector<Tensor>& outs) {
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    const std::string name = i < specs.size() ? specs[i].name : "output " + std::to_string(i);
    std::fprintf(out, "  output %-24s %-18s %s", ("'" + printable(name) + "'").c_str(), to_string(t.shape()).c_str(), std::string(dtype_name(t.dtype())).c_str());
    if (t.numel() == 0) {
      std::fprintf(out, "  (empty)\n");
      continue;
    }
    Tensor f = t.to(DType::f32);
    auto v = f.span<float>();
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    std::int64_t nonfinite = 0;
    for (float x : v) {
      if (!std::isfinite(x)) {
        ++nonfinite;
        continue;
      }
      mn = std::min<double>(mn, x), mx = std::max<double>(mx, x), sum += x;
    }
    const double n = static_cast<double>(v.size() - static_cast<std::size_t>(nonfinite));
    std::fprintf(out, "  min %.5g  max %.5g  mean %.5g", n ? mn : NAN, n ? mx : NAN, n ? sum / n : NAN);
    if (nonfinite) std::fprintf(out, "  %lld non-finite", static_cast<long long>(nonfinite));
    std::fprintf(out, "\n");
    const bool classifier = is_floating(t.dtype()) && t.rank() == 2 && t.shape()[1] >= 5 && (m.kind() == "vision" || outs.size() == 1);
    if (!classifier) continue;
    for (std::int64_t r = 0; r < t.shape()[0]; ++r) {
      std::span<const float> row(v.data() + r * t.shape()[1], static_cast<std::size_t>(t.shape()[1]));
      const float top = *std::max_element(row.begin(), row.end());
      double z = 0;
      for (float x : row) z += std::exp(static_cast<double>(x - top));
      std::fprintf(out, "    top-5%s:", t.shape()[0] > 1 ? (" [" + std::to_string(r) + "]").c_str() : "");
      for (auto c : harness::topk(row, 5))
        std::fprintf(out, "  %lld (p %.4f)", static_cast<long long>(c), std::exp(static_cast<double>(row[static_cast<std::size_t>(c)] - top)) / z);
      std::fprintf(out, "\n");
    }
  }
}

std::vector<std::string> write_outputs(const std::string& spec, const std::vector<program::IoSpec>& specs, const std::vector<Tensor>& outs) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t i = 0; i < outs.size(); ++i) named.emplace_back(i < specs.size() ? specs[i].name : "output_" + std::to_string(i), outs[i]);
  return runtime::save_outputs(spec, named);
}

}  // namespace npusim::cli
