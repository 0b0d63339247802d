// `npusim run`: a model on a target, checked against expected outputs when there are some; --time, --profile.
#include <algorithm>
#include <filesystem>

#include "options.hpp"
#include "cli.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/target/profiler.hpp"

namespace npusim::cli {

namespace fs = std::filesystem;

// Median and minimum wall time of `runs` runs (inputs prepared once, outside the timing).
void time_runs(Runner& r, std::span<const Tensor> inputs, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = clock_type::now();
    r.run(inputs);
    ms.push_back(seconds_since(t0) * 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency: median %.3f ms, min %.3f ms, max %.3f ms over %d runs\n", ms[ms.size() / 2], ms.front(), ms.back(), runs);
}

// Runs `runs` more times with per-kernel profiling; prints the table by kernel kind, writes a trace.
void profile_runs(Prepared& p, std::span<const Tensor> inputs, const ProfileArgs& a) {
  if (!p.plan) throw Error(ErrorCode::unsupported, "--profile needs a compiled program (not --interpret)");
  Profiler prof;
  p.runner->run(inputs);  // warm-up
  p.plan->set_profiler(&prof);
  prof.clear();
  auto t0 = clock_type::now();
  for (int i = 0; i < a.runs; ++i) p.runner->run(inputs);
  const double wall = seconds_since(t0) * 1e6;
  p.plan->set_profiler(nullptr);
  std::printf("\nprofile: %d runs, %.3f ms per run\n", a.runs, wall / 1000.0 / a.runs);
  prof.print_summary(stdout, wall, a.runs);
  if (!a.trace.empty()) {
    prof.write_trace(a.trace);
    std::printf("trace: %s (open in https://ui.perfetto.dev)\n", a.trace.c_str());
  }
  const program::CompiledProgram& prog = p.plan->program();
  if (auto c = npu_choice(a.npu, prog, prog.source)) print_npu_vs_measured(*c, estimate_for(*c, prog), prof, a.runs, prog.target);
}

int cmd_run(const RunArgs& a, TargetChoice tc, ProfileArgs prof) {
  load_npu(prof.npu);
  Model m = open_model(a.model, a.weights);
  check_npu_dtype_alone(prof.npu, m.compiled() && m.program->npu, a.model);
  adopt_program_target(tc, m);
  validate(tc);
  // Inputs and expected values before compiling: bad ones are refused before any work.
  GatheredInputs in = gather_inputs(m, a.inputs);
  Expected expected = expected_outputs(m, a.expected, in.from_case);
  if (a.tol && !expected)
    throw Error(ErrorCode::attr, "--tol applies when outputs are compared with expected values, and there are none here",
                {.file = a.model, .expected = "--expected FILE, or a case whose io.safetensors holds the outputs of its own inputs", .found = "--tol"});
  std::printf("model %s: %zu inputs, %zu outputs; weights: %s\n", printable(m.name).c_str(), m.inputs().size(), m.outputs().size(),
              m.weights() ? m.weights()->path().c_str() : "(none)");
  if (m.weights())
    for (const auto& n : m.weights()->notes()) std::printf("weights: %s\n", printable(n).c_str());
  for (const auto& n : in.notes) std::printf("%s\n", printable(n).c_str());
  Prepared p;
  if (m.compiled()) {
    weights::BindOptions bo;
    bo.progress = console_progress();
    auto plan = make_runner(*m.program, m.weights(), bo);
    std::printf("loaded %s: compiled for %s (%s), %lld kernels\n", a.model.c_str(), m.program->target.c_str(), tc.dtype.c_str(),
                static_cast<long long>(m.program->stats.kernels - m.program->stats.view_kernels));
    p.plan = plan.get();
    p.runner = std::move(plan);
  } else {
    p = prepare(tc, m.source->graph, m.weights(), nullptr);
  }
  if (serving()) {  // another rank's process: its stage, until rank 0 is done
    runtime::ProgramRunner* const programs[] = {p.plan};
    runtime::serve_stages(*stage_link(), programs);
    return 0;
  }
  std::printf("target: %s\n", p.runner->describe().c_str());
  print_device(tc);
  auto t0 = clock_type::now();
  std::vector<Tensor> outs = p.runner->run(in.tensors);
  const double secs = seconds_since(t0);
  int rc = 0;
  if (expected) {
    harness::CheckOptions co;
    co.half_compute = half_dtype(tc.dtype);
    co.top5_in_order = !co.half_compute;
    std::vector<std::string> names;
    std::vector<DType> dtypes;
    for (const auto& o : m.outputs()) names.push_back(o.name), dtypes.push_back(o.dtype);
    double tol = a.tol.value_or(default_tolerance(m, co.half_compute));
    if (const auto q = quantized_tolerance(tc.weights_dtype); q && !a.tol) {
      // Quantized weights against the float model's outputs: the format's error, not float's;
      // a classifier's top-5 as a set (generate --check's rule for q4 even lets the top-1 move).
      tol = std::max(tol, *q);
      co.top5_in_order = false;
      std::printf("weights quantized to %s: outputs compared with tolerance rel_l2 <= %.3g (the format's; --tol sets another)\n",
                  tc.weights_dtype.c_str(), tol);
    }
    harness::CaseResult r;
    try {
      r = harness::check_outputs(names, dtypes, outs, expected.lookup, tol, m.kind() == "vision" || (m.kind().empty() && outs.size() == 1), co);
    } catch (Error& e) {
      throw e.with_file(expected.from);  // the --expected file (or the case's io.safetensors)
    }
    r.seconds = secs;
    std::printf("expected outputs: %s\n", expected.from.c_str());
    harness::print_case_result(stdout, m.name, r);
    rc = r.pass ? 0 : 1;
  } else {
    print_output_summary(stdout, m, m.outputs(), outs);
    std::printf("ran %s in %.3f s (%s)\n", printable(m.name).c_str(), secs,
                in.from_case ? "no expected outputs to compare with" : "inputs given: compare with --expected FILE if you have reference outputs");
  }
  if (!a.output.empty()) {
    for (const auto& n : write_outputs(a.output, m.outputs(), outs)) std::printf("%s\n", n.c_str());
    std::printf("outputs written to %s\n", a.output.c_str());
  }
  std::fflush(stdout);
  if (prof.time_runs > 0) time_runs(*p.runner, in.tensors, prof.time_runs);
  if (prof.enabled) profile_runs(p, in.tensors, prof);
  return rc;
}

Registered add_run(Shared& s) {
  auto ra = std::make_shared<RunArgs>();
  auto prof = std::make_shared<ProfileArgs>();
  auto* run = s.app.add_subcommand("run", "run a model (case directory, IR .json or .npubin); compare with expected outputs when the case has them");
  run->add_option("model", ra->model, "case directory, IR .json file or .npubin")->required();
  run->add_option("--weights", ra->weights, "auto, none, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  run->add_option("--tol", ra->tol, "relative L2 tolerance (default: by dtype and reduction length)")->check(finite_range(0.0, 1.0, true));
  add_input_options(run, ra->inputs);
  run->add_option("--output", ra->output, "write the outputs here (.safetensors: all by name; .npy: one)");
  run->add_option("--expected", ra->expected, "compare the outputs with these (.safetensors by output name, or .npy for one output)")
      ->check(CLI::ExistingFile);
  auto* run_profile = run->add_flag("--profile", prof->enabled, "time every kernel over --runs runs; print a table by kernel kind");
  run->add_option("--runs", prof->runs, "runs to profile (default 10)")->check(integer_in(1, 1000000))->needs(run_profile);
  run->add_option("--trace", prof->trace, "with --profile: write a Chrome/Perfetto trace JSON here")->needs(run_profile);
  run->add_option("--time", prof->time_runs, "time N more runs: median/min/max wall latency")->check(integer_in(1, 1000000));
  run->add_option("--npu", prof->npu.npu, npu_help("with --profile: the NPU whose estimate to print next to the measured times"))->needs(run_profile);
  run->add_option("--npu-dtype", prof->npu.dtype, "with --profile: the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(run_profile);
  add_target_options(run, s.tc, true);
  return {run, [ra, prof, &tc = s.tc] { return cmd_run(*ra, tc, *prof); }};
}

}  // namespace npusim::cli
