// `npusim quantize`: post-training int8 (docs/quantization.md). Calibrates a float model on
// inputs, writes the int8 program (.npubin) and reports the accuracy lost, per output and per
// layer, on separate evaluation inputs; --keep-float and --auto-keep leave layers in float.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "options.hpp"
#include "cli.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/runtime/int8.hpp"
#include "npusim/runtime/model_dir.hpp"

namespace npusim::cli {

namespace fs = std::filesystem;

int cmd_quantize(const QuantizeArgs& a, const TargetChoice& tc) {
  validate(tc);
  if (is_npubin_path(a.model)) throw Error(ErrorCode::attr, "quantize takes a float model (a case directory or an IR .json file), not a .npubin", {.file = a.model});
  if (!tc.weights_dtype.empty()) throw Error(ErrorCode::attr, "--weights-dtype (LLM weight blocks) and int8 quantization do not combine", {.found = "--weights-dtype " + tc.weights_dtype});
  if (a.output.empty() || !a.output.ends_with(".npubin")) throw Error(ErrorCode::attr, "-o must name a .npubin file", {.found = a.output});
  runtime::CalibrateOptions co;
  if (a.observer == "percentile") co.observer = runtime::Observer::percentile, co.percentile = a.percentile;
  auto t0 = clock_type::now();
  runtime::ModelDir c = runtime::ModelDir::open(a.model, a.weights);
  if (!c.weights) throw Error(ErrorCode::weights, "quantize needs the float weights: none beside the IR (weights.safetensors, synth.json); give --weights", {.file = a.model});
  std::vector<program::IoSpec> ins;
  for (auto t : c.graph.inputs) ins.push_back({c.graph.tensor(t).name, c.graph.tensor(t).shape, c.graph.tensor(t).dtype});
  // Inputs first: a bad folder is refused before any work.
  const runtime::Int8Inputs calib = runtime::int8_inputs(a.calib, ins, a.calib_count, 0, 0);
  const bool same_folder = a.eval.empty() || a.eval == a.calib;
  const runtime::Int8Inputs eval = a.no_report ? runtime::Int8Inputs{}
                                   : runtime::int8_inputs(a.eval.empty() ? a.calib : a.eval, ins, a.eval_count,
                                                          same_folder && !a.calib.starts_with("synthetic:") ? static_cast<std::int64_t>(calib.sets.size()) : 0, 1);
  std::printf("model %s; weights: %s\ncalibration: %s (%s)\n", c.graph.model_name.c_str(), c.weights->path().c_str(), calib.from.c_str(),
              co.observer == runtime::Observer::minmax ? "min/max" : ("percentile " + fmt_num(co.percentile)).c_str());
  const partition::TargetInfo target = target_info(tc);
  program::CompileOptions fo = compile_options(tc);
  fo.int8.keep_float = a.keep_float;
  for (const auto& wb : a.weight_bits) {
    const auto eq = wb.rfind('=');
    int bits = 0;
    try {
      bits = eq == std::string::npos ? 0 : std::stoi(wb.substr(eq + 1));
    } catch (const std::exception&) {
      bits = 0;
    }
    if (bits < 2 || bits > 8) throw Error(ErrorCode::attr, "--weight-bits takes LAYER=BITS with BITS in 2..8", {.found = wb});
    fo.int8.weight_bits[wb.substr(0, eq)] = bits;
  }
  const weights::WeightSource* w = c.weights.get();
  runtime::RunnerFactory make = [&](const program::CompiledProgram& p) -> std::unique_ptr<Runner> { return make_runner(p, w); };
  Progress progress = console_progress();
  const runtime::Calibration cal = runtime::calibrate(c.graph, target, fo, make, calib.sets, co, progress);
  program::CompileOptions qo = fo;
  qo.int8.ranges = cal.ranges;
  auto report = [&](const program::CompileOptions& q) {
    runtime::Int8Report r = runtime::accuracy_report(c.graph, target, fo, q, make, eval, progress);
    print_report(stdout, r, a.layers_shown);
    return r;
  };
  std::optional<runtime::Int8Report> rep;
  if (!a.no_report) rep = report(qo);
  if (a.auto_keep > 0) {
    if (!rep) throw Error(ErrorCode::attr, "--auto-keep chooses layers from the accuracy report: it needs the report (drop --no-report)");
    std::vector<std::string> worst;
    for (const auto& l : rep->layers)
      if (static_cast<std::int64_t>(worst.size()) < a.auto_keep && std::find(qo.int8.keep_float.begin(), qo.int8.keep_float.end(), l.node) == qo.int8.keep_float.end())
        worst.push_back(l.node);
    std::string list;
    for (const auto& n : worst) list += (list.empty() ? "" : ", ") + n, qo.int8.keep_float.push_back(n);
    std::printf("\n--auto-keep %lld: in float: %s\n", static_cast<long long>(a.auto_keep), list.c_str());
    rep = report(qo);
  }
  const auto tc0 = clock_type::now();
  program::CompiledProgram p = program::compile(c.graph, target, qo);
  print_compile_summary(p, seconds_since(tc0));
  auto count = [&](const char* k) {
    const ir::AttrValue* v = p.stats.pass_counts.find(k);
    return v && v->is_int() ? v->as_int() : std::int64_t{0};
  };
  std::printf("int8: %lld integer ops (ReLU/ReLU6 folded into %lld) and %lld max pool(s), %lld quantize and %lld dequantize nodes around the float ops%s\n",
              static_cast<long long>(count("quantize_int8")), static_cast<long long>(count("int8_folded_activations")), static_cast<long long>(count("int8_max_pools")),
              static_cast<long long>(count("int8_quantize_nodes")), static_cast<long long>(count("int8_dequantize_nodes")),
              qo.int8.keep_float.empty() ? "" : (", " + std::to_string(qo.int8.keep_float.size()) + " layer(s) kept in float").c_str());
  const program::EmbeddedWeightsInfo saved = program::save(p, a.output, a.embed ? w : nullptr);
  for (const auto& note : saved.notes) std::printf("%s\n", note.c_str());
  print_float_islands(p);
  std::printf("quantize took %.1f s in all\n", seconds_since(t0));
  std::printf("wrote %s (%s%s)\n", a.output.c_str(), written_size(a.output).c_str(),
              a.embed ? ", weights embedded" : ", no weights: run it with --weights (the float checkpoint)");
  if (!a.report_json.empty()) {
    if (!rep) throw Error(ErrorCode::attr, "--report-json writes the accuracy report: drop --no-report");
    nlohmann::json j = runtime::report_json(*rep);
    j["model"] = c.graph.model_name;
    j["calibration"] = calib.from;
    j["observer"] = a.observer;
    j["keep_float"] = qo.int8.keep_float;
    write_file_atomic(a.report_json, j.dump(2, ' ', false, ir::json::error_handler_t::replace) + "\n");
    std::printf("report: %s\n", a.report_json.c_str());
  }
  return 0;
}

Registered add_quantize(Shared& s) {
  auto qa = std::make_shared<QuantizeArgs>();
  auto* quant = s.app.add_subcommand("quantize", "post-training int8: calibrate a float model on inputs, write the int8 .npubin, report the accuracy lost per layer");
  quant->add_option("model", qa->model, "case directory or torch_ir JSON file (float)")->required();
  quant->add_option("-o,--output", qa->output, "output .npubin path")->required();
  quant->add_option("--calib", qa->calib, "calibration inputs: a folder of images, .npy or .safetensors files, or synthetic:N")->required();
  quant->add_option("--calib-count", qa->calib_count, "use at most this many calibration inputs (default: all)")->check(integer_in(1, std::uint64_t{1} << 40));
  quant->add_option("--eval", qa->eval, "evaluation inputs for the report (default: the --calib folder's files after the calibration ones; synthetic:N draws other ones)");
  quant->add_option("--eval-count", qa->eval_count, "use at most this many evaluation inputs")->check(integer_in(1, std::uint64_t{1} << 40));
  quant->add_option("--observer", qa->observer, "activation ranges: minmax, or percentile (outliers clipped)")->check(CLI::IsMember({"minmax", "percentile"}));
  quant->add_option("--percentile", qa->percentile, "with --observer percentile: the percentile kept (default 99.99)")->check(finite_range(50, 100, true));
  quant->add_option("--keep-float", qa->keep_float, "layers (node names) left in float, comma-separated")->delimiter(',');
  quant->add_option("--auto-keep", qa->auto_keep, "leave the N layers of worst own error in float (reported again after)")->check(integer_in(1, std::uint64_t{1} << 20));
  quant->add_option("--weight-bits", qa->weight_bits, "LAYER=BITS: that layer's weights in fewer bits (2..8), to see what a layer costs")->delimiter(',');
  quant->add_option("--layers", qa->layers_shown, "rows of the per-layer table to print (default 10)")->check(integer_in(0, 1000000));
  quant->add_option("--report-json", qa->report_json, "write the accuracy report (every layer) as JSON");
  quant->add_option("--weights", qa->weights, "the float weights (default: those beside the IR)");
  quant->add_flag("--embed-weights", qa->embed, "store the weights in the .npubin (the int8 ones derive from them when loaded)");
  quant->add_flag("--no-report", qa->no_report, "calibrate and write only (no evaluation runs)");
  add_target_options(quant, s.tc, false);
  return {quant, [qa, &tc = s.tc] { return cmd_quantize(*qa, tc); }};
}

}  // namespace npusim::cli
