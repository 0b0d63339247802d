// The npusim command line: the subcommands' options (CLI11) and the dispatch to them. Each
// subcommand is its own TU (cli.hpp lists them).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "bench_cmd.hpp"
#include "cli.hpp"
#include "processes.hpp"
#include "npusim/version.hpp"

using namespace npusim;

namespace {

std::string fmt_num(double v) { return cli::fmt_num(v); }

// A number option in [lo, hi] (lo excluded when lo_open); NaN and infinities are refused at parse
// time (CLI::Range lets NaN through: no comparison with it is true).
CLI::Validator finite_range(double lo, double hi, bool lo_open = false) {
  const std::string desc = std::string(lo_open ? "(" : "[") + fmt_num(lo) + ", " + fmt_num(hi) + "]";
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
          return "value " + in + " is not a finite number in " + desc;
        return {};
      },
      "FLOAT in " + desc);
}

// A whole-number option in [lo, hi]. CLI11's Range says "2.5 not in range 1 to 4096" for a
// fraction, reads "-1" into an unsigned as 2^64-1 and saturates 2^64: all refused here, by what
// is wrong with the value.
CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi) {
  const std::string desc = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        const std::size_t sign = !in.empty() && (in[0] == '-' || in[0] == '+') ? 1 : 0;
        if (in.size() <= sign || in.find_first_not_of("0123456789", sign) != std::string::npos)
          return "value " + in + " is not an integer (expected " + desc + ")";
        if (in[0] == '-') return "value " + in + " must not be negative (expected " + desc + ")";
        errno = 0;
        const unsigned long long v = std::strtoull(in.c_str(), nullptr, 10);
        if (errno == ERANGE || v < lo || v > hi) return "value " + in + " is out of range (expected " + desc + ")";
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// The first word that is not an option (nor --threads' value) must name a subcommand; CLI11 says
// only "A subcommand is required" for a misspelt one.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == a) return {};
    return a;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"npusim: compile PyTorch (torch_ir) models for a simulated NPU and run them"};
  app.set_version_flag("--version", std::string("npusim ") + version_string);
  app.require_subcommand(1);
  app.fallthrough();  // options of the whole program (--threads) also after the subcommand
  cli::TargetChoice tc;
  int threads = 0;
  app.add_option("--threads", threads, "worker threads of the cpu target and Eigen (default: all cores)")->check(integer_in(1, 4096));

  const std::string target_help = "execution target: " + [] {
    std::string s;
    for (const auto& n : cli::target_names()) s += (s.empty() ? "" : ", ") + n + (n == cli::default_target ? " (default)" : "");
    return s;
  }();
  auto add_target = [&](CLI::App* sub, bool interpret) {
    sub->add_option_function<std::string>("--target", [&](const std::string& t) { tc.target = t, tc.target_given = true; }, target_help)
        ->check(CLI::IsMember(cli::target_names()));
    sub->add_option_function<std::string>("--dtype", [&](const std::string& d) { tc.dtype = d, tc.dtype_given = true; }, "compute dtype (default f32)")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    sub->add_option("--force-fallback", tc.force_fallback,
                    "debug: run these on the fallback (op types, op ids or node:NAME, comma-separated; also NPUSIM_FORCE_FALLBACK)");
    auto* wd = sub->add_option("--weights-dtype", tc.weights_dtype,
                               "linear layers' weights quantized to blocks of 32: q8 (int8, 8.5 bits) or q4 (4.5 bits); every target")
                   ->check(CLI::IsMember({"q8", "q4", "q8_0", "q4_0"}));
    sub->add_option("--keep", tc.keep, "with --weights-dtype: weights that stay as they are (a state_dict key or part of one, e.g. lm_head)")
        ->delimiter(',')->needs(wd);
    sub->add_option_function<int>("--stages", [&](int n) { tc.stages = n, tc.stages_given = true; },
                                  "pipeline stages: cut the model into N contiguous stages balanced by weights and FLOPs (an LLM between "
                                  "layers); under mpirun, one stage per rank (docs/scale-out.md)")
        ->check(integer_in(1, 4096));
    if (interpret) sub->add_flag("--interpret", tc.interpret, "reference only: interpret the IR node by node (no passes, no fusion)");
    sub->add_option("--device", tc.device, "opencl target: device index or name substring (sets NPUSIM_OPENCL_DEVICE; see `npusim devices`)");
    sub->add_option("--devices", tc.devices, "opencl target: one device per pipeline stage, e.g. 0,1 (--stages defaults to their count; "
                                             "activations cross through the host)")
        ->delimiter(',');
  };
  auto add_inputs = [](CLI::App* sub, cli::InputArgs& in) {
    sub->add_option("--input", in.inputs, "an input's value: NAME=FILE (.npy, .safetensors, raw:FILE); NAME may be left out for a single input")
        ->allow_extra_args(false);
    sub->add_option("--image", in.image, "image classifiers: a JPEG/PNG/BMP, with ImageNet preprocessing (resize, centre crop, normalise)");
  };

  cli::RunArgs ra;
  auto* run = app.add_subcommand("run", "run a model (case directory, IR .json or .npubin); compare with expected outputs when the case has them");
  run->add_option("model", ra.model, "case directory, IR .json file or .npubin")->required();
  run->add_option("--weights", ra.weights, "auto, none, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  run->add_option("--tol", ra.tol, "relative L2 tolerance (default: by dtype and reduction length)")->check(finite_range(0.0, 1.0, true));
  add_inputs(run, ra.inputs);
  run->add_option("--output", ra.output, "write the outputs here (.safetensors: all by name; .npy: one)");
  run->add_option("--expected", ra.expected, "compare the outputs with these (.safetensors by output name, or .npy for one output)")
      ->check(CLI::ExistingFile);
  cli::ProfileArgs prof;
  auto* run_profile = run->add_flag("--profile", prof.enabled, "time every kernel over --runs runs; print a table by kernel kind");
  run->add_option("--runs", prof.runs, "runs to profile (default 10)")->check(integer_in(1, 1000000))->needs(run_profile);
  run->add_option("--trace", prof.trace, "with --profile: write a Chrome/Perfetto trace JSON here")->needs(run_profile);
  run->add_option("--time", prof.time_runs, "time N more runs: median/min/max wall latency")->check(integer_in(1, 1000000));
  run->add_option("--npu", prof.npu.npu, cli::npu_help("with --profile: the NPU whose estimate to print next to the measured times"))->needs(run_profile);
  run->add_option("--npu-dtype", prof.npu.dtype, "with --profile: the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(run_profile);
  add_target(run, true);

  cli::GenerateArgs ga;
  auto* gen = app.add_subcommand("generate", "prefill + decode an LLM (teacher-forced --check against the fixtures)");
  gen->add_option("prefill_dir", ga.prefill_dir, "prefill case directory")->required();
  gen->add_option("decode_dir", ga.decode_dir, "decode case directory (with kv_mapping.json)")->required();
  auto* gen_check = gen->add_flag("--check", ga.check, "compare prefill/decode logits and greedy tokens with the reference");
  gen->add_option("--weights", ga.weights, "auto, safetensors, synth, or a path (.safetensors, synth.json, a Hugging Face model directory)");
  gen->add_option("--tol", ga.tol, "with --check: relative L2 tolerance for logits")->check(finite_range(0.0, 1.0, true))->needs(gen_check);
  gen->add_option("--min-token-matches", ga.min_matches, "with --check: greedy tokens that must match (default: all; half dtypes: all but one; q8 weights: half; q4 weights: a quarter)")
      ->check(integer_in(0, INT32_MAX))->needs(gen_check);
  gen->add_option("--max-new-tokens", ga.max_new_tokens, "tokens to generate (default 16; stops earlier at an --eos id or the cache's end)")
      ->check(integer_in(1, std::uint64_t{1} << 40))->excludes(gen_check);
  auto* gen_ids = gen->add_option("--prompt-ids", ga.prompt_ids, "prompt token ids, e.g. 1,2,3 (default: the prefill case's input_ids)")->excludes(gen_check);
  auto* gen_ids_file = gen->add_option("--prompt-ids-file", ga.prompt_ids_file, "file of prompt token ids (whitespace or comma separated)")
      ->excludes(gen_check)->excludes(gen_ids)->check(CLI::ExistingFile);
  auto* gen_prompt = gen->add_option("--prompt", ga.text.prompt, "prompt text (tokenized with the model's tokenizer.json; the output is text)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  auto* gen_prompt_file = gen->add_option("--prompt-file", ga.text.prompt_file, "file holding the prompt text (UTF-8)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file)->excludes(gen_prompt)->check(CLI::ExistingFile);
  gen->add_option("--tokenizer", ga.text.tokenizer, "tokenizer.json, or a directory with it (default: next to --weights or the cases)")
      ->excludes(gen_check)->check(CLI::ExistingPath);
  auto* gen_chat = gen->add_flag("--chat", ga.text.chat, "the prompt is a user message: apply the model's chat template (ChatML, Llama 3)")
      ->excludes(gen_check)->excludes(gen_ids)->excludes(gen_ids_file);
  gen->add_option("--system", ga.text.system, "with --chat: the system message (default: the template's own, if it has one)")->needs(gen_chat);
  gen->add_option("--chat-format", ga.text.chat_format, "with --chat: render this form instead of the template's")
      ->check(CLI::IsMember({"chatml", "llama3"}))->needs(gen_chat);
  auto* gen_eos = gen->add_option("--eos", ga.eos, "stop after generating any of these ids (comma separated)")->excludes(gen_check);
  auto* gen_temp = gen->add_option("--temperature", ga.sampling.temperature, "sampling temperature (0: greedy)")->check(finite_range(0.0, 100.0))->excludes(gen_check);
  auto* gen_top_k = gen->add_option("--top-k", ga.sampling.top_k, "sample among the k most likely tokens (0: all)")->check(integer_in(0, std::uint64_t{1} << 31))->excludes(gen_check);
  auto* gen_top_p = gen->add_option("--top-p", ga.sampling.top_p, "sample among the smallest set reaching this probability (1: all)")
      ->check(finite_range(0.0, 1.0, true))->excludes(gen_check);
  auto* gen_seed = gen->add_option("--seed", ga.sampling.seed, "sampling seed (with --temperature)")->check(integer_in(0, UINT64_MAX))->excludes(gen_check);
  // Flags that do not apply are errors, never ignored (README): sampling options without a
  // temperature (greedy decoding uses none of them), an --eos that lists no id.
  gen->callback([gen_chat, gen_prompt, gen_prompt_file, gen_eos, gen_temp, gen_top_k, gen_top_p, gen_seed, &ga] {
    if (gen_chat->count() && !gen_prompt->count() && !gen_prompt_file->count())
      throw CLI::ValidationError("--chat", "needs the user's message: --prompt TEXT or --prompt-file FILE");
    for (const CLI::Option* o : {gen_top_k, gen_top_p, gen_seed})
      if (o->count() && !(gen_temp->count() && ga.sampling.temperature > 0))
        throw CLI::ValidationError(o->get_name(), "applies to sampling: give --temperature > 0 too (without it decoding is greedy and takes no " +
                                                      o->get_name() + ")");
    if (gen_eos->count() && ga.eos.find_first_not_of(" ,\t\n") == std::string::npos)
      throw CLI::ValidationError("--eos", "no token ids (expected ids such as 2,0, found '" + ga.eos + "')");
  });
  auto* gen_profile = gen->add_flag("--profile", ga.profile, "time every decode kernel; print a table by kernel kind");
  gen->add_option("--trace", ga.trace, "with --profile: write a Chrome/Perfetto trace of the decode steps")->needs(gen_profile);
  add_target(gen, true);

  auto* tlist = app.add_subcommand("targets", "list the targets this build has (the default is marked)");

  std::string c_ir, c_out, c_weights = "auto";
  bool c_verify = false, c_embed = false;
  auto* comp = app.add_subcommand("compile", "compile an IR (case directory or .json) to a .npubin program");
  comp->add_option("model", c_ir, "case directory or torch_ir JSON file")->required();
  comp->add_option("-o,--output", c_out, "output .npubin path")->required();
  comp->add_flag("--verify", c_verify, "re-check every node after each pass");
  comp->add_flag("--embed-weights", c_embed, "store the weights in the .npubin (aligned, mmap'able, checksummed): it then runs on its own");
  comp->add_option("--weights", c_weights, "with --embed-weights: the weights to embed (default: those beside the IR)");
  cli::NpuArgs c_npu;
  auto* c_npu_opt = comp->add_option("--npu", c_npu.npu, cli::npu_help("estimate every kernel on this NPU and store the description in the .npubin"));
  comp->add_option("--npu-dtype", c_npu.dtype, "with --npu: the estimate's operand dtype (default: the compute dtype if the NPU has it, else its first)")
      ->needs(c_npu_opt);
  add_target(comp, false);

  cli::QuantizeArgs qa;
  auto* quant = app.add_subcommand("quantize", "post-training int8: calibrate a float model on inputs, write the int8 .npubin, report the accuracy lost per layer");
  quant->add_option("model", qa.model, "case directory or torch_ir JSON file (float)")->required();
  quant->add_option("-o,--output", qa.output, "output .npubin path")->required();
  quant->add_option("--calib", qa.calib, "calibration inputs: a folder of images, .npy or .safetensors files, or synthetic:N")->required();
  quant->add_option("--calib-count", qa.calib_count, "use at most this many calibration inputs (default: all)")->check(integer_in(1, std::uint64_t{1} << 40));
  quant->add_option("--eval", qa.eval, "evaluation inputs for the report (default: the --calib folder's files after the calibration ones; synthetic:N draws other ones)");
  quant->add_option("--eval-count", qa.eval_count, "use at most this many evaluation inputs")->check(integer_in(1, std::uint64_t{1} << 40));
  quant->add_option("--observer", qa.observer, "activation ranges: minmax, or percentile (outliers clipped)")->check(CLI::IsMember({"minmax", "percentile"}));
  quant->add_option("--percentile", qa.percentile, "with --observer percentile: the percentile kept (default 99.99)")->check(finite_range(50, 100, true));
  quant->add_option("--keep-float", qa.keep_float, "layers (node names) left in float, comma-separated")->delimiter(',');
  quant->add_option("--auto-keep", qa.auto_keep, "leave the N layers of worst own error in float (reported again after)")->check(integer_in(1, std::uint64_t{1} << 20));
  quant->add_option("--weight-bits", qa.weight_bits, "LAYER=BITS: that layer's weights in fewer bits (2..8), to see what a layer costs")->delimiter(',');
  quant->add_option("--layers", qa.layers_shown, "rows of the per-layer table to print (default 10)")->check(integer_in(0, 1000000));
  quant->add_option("--report-json", qa.report_json, "write the accuracy report (every layer) as JSON");
  quant->add_option("--weights", qa.weights, "the float weights (default: those beside the IR)");
  quant->add_flag("--embed-weights", qa.embed, "store the weights in the .npubin (the int8 ones derive from them when loaded)");
  quant->add_flag("--no-report", qa.no_report, "calibrate and write only (no evaluation runs)");
  add_target(quant, false);

  std::string i_path;
  bool i_json = false, i_buffers = false, i_no_kernels = false;
  auto* insp = app.add_subcommand("inspect", "print a .npubin program: kernels with fused members, buffers, weights, memory");
  insp->add_option("npubin", i_path, ".npubin file")->required();
  auto* i_json_flag = insp->add_flag("--json", i_json, "machine-readable JSON");
  insp->add_flag("--buffers", i_buffers, "list every stored tensor with its arena offset and lifetime")->excludes(i_json_flag);
  insp->add_flag("--no-kernels", i_no_kernels, "omit the kernel list")->excludes(i_json_flag);
  cli::NpuArgs i_npu;
  insp->add_option("--npu", i_npu.npu, cli::npu_help("show every kernel's estimate on this NPU (default: the one the program was compiled against)"));
  insp->add_option("--npu-dtype", i_npu.dtype, "the NPU estimate's operand dtype (f32, f16, bf16, i16, i8)");

  std::string e_ir;
  bool e_kernels = false;
  auto* expl = app.add_subcommand("explain", "list every node that falls back to the reference target, and why");
  expl->add_option("model", e_ir, "case directory, torch_ir JSON file, or a .npubin (its fallback partitions, an int8 program's float ops)")->required();
  expl->add_flag("--kernels", e_kernels, "also print the implementation each kernel runs and why the better candidates declined");
  cli::NpuArgs e_npu;
  auto* e_npu_opt = expl->add_option("--npu", e_npu.npu, cli::npu_help("also list the kernels this NPU leaves to its host, and why"));
  expl->add_option("--npu-dtype", e_npu.dtype, "with --npu: the estimate's operand dtype (f32, f16, bf16, i16, i8)")->needs(e_npu_opt);
  add_target(expl, false);

  cli::SimulateArgs sa;
  cli::TargetChoice s_tc;
  auto* sim = app.add_subcommand("simulate", "estimate a model on an NPU: latency, DRAM traffic, SRAM peak, MAC utilisation; roofline SVG, Perfetto trace");
  sim->add_option("model", sa.model, "case directory, IR .json file or .npubin (weights are not needed)")->required();
  sim->add_option("--npu", sa.npu, cli::npu_help("the NPU"))->required();
  sim->add_option("--dtype", sa.dtype, "operand dtype on the NPU: f32, f16, bf16, i16, i8 (default: the description's first)");
  sim->add_option("--svg", sa.svg, "write a roofline of the kernels here (SVG)");
  sim->add_option("--trace", sa.trace, "write the simulated timeline here (Chrome/Perfetto JSON: DMA, compute and host lanes)");
  sim->add_option("--json", sa.json, "write the estimate here (JSON: totals and every kernel)");
  auto* s_top = sim->add_option("--top", sa.top, "list the N longest kernels (default 10)")->check(integer_in(0, 1000000));
  sim->add_flag("--kernels", sa.kernels, "list every kernel")->excludes(s_top);
  sim->add_option_function<std::string>("--target", [&](const std::string& t) { s_tc.target = t, s_tc.target_given = true; },
                                        "target whose compiler prepares the program (its fusion decides the kernels; default cpu)")
      ->check(CLI::IsMember(cli::target_names()));

  bool o_markdown = false;
  std::string o_out;
  auto* opsc = app.add_subcommand("ops", "list registered ops, their ATen names and attribute defaults");
  auto* devs = app.add_subcommand("devices", "list the OpenCL devices the opencl target can use");

  std::string b_dir, b_weights = "auto";
  cli::BenchArgs ba;
  cli::InputArgs b_inputs;
  auto* bench = app.add_subcommand("bench", "time a model (case directory, IR .json or .npubin): compile, weight load, latency, throughput");
  bench->add_option("model", b_dir, "case directory, IR .json file or .npubin")->required();
  bench->add_option("--weights", b_weights, "auto, none, safetensors, synth, or a path");
  add_inputs(bench, b_inputs);
  bench->add_option("--warmup", ba.warmup, "untimed runs first (default 3)")->check(integer_in(0, 1000000));
  bench->add_option("--repeats", ba.repeats, "timed runs (default 20)")->check(integer_in(1, 1000000));
  bench->add_option("--json", ba.json, "write the results as JSON here");
  add_target(bench, false);

  std::string bl_prefill, bl_decode;
  cli::BenchArgs bla;
  bla.repeats = 5;
  auto* bench_llm = app.add_subcommand("bench-llm", "LLM: time to first token, decode step time vs cache position, bandwidth floor");
  bench_llm->add_option("prefill_dir", bl_prefill, "prefill case directory (weights come from here)")->required();
  bench_llm->add_option("decode_dir", bl_decode, "decode case directory (with kv_mapping.json)")->required();
  bench_llm->add_option("--positions", bla.positions, "cache positions: log2 (1, 2, 4, ..., max-1) or a comma list");
  bench_llm->add_option("--repeats", bla.repeats, "timed steps per position (default 5)")->check(integer_in(1, 1000000));
  bench_llm->add_flag("!--no-check", bla.check, "skip the check against the reference at every position");
  bench_llm->add_option("--json", bla.json, "write the results as JSON here");
  bench_llm->add_option("--svg", bla.svg, "write a chart of step time vs position here");
  add_target(bench_llm, false);
  auto* o_md = opsc->add_flag("--markdown", o_markdown, "print docs/operators.md: ops, attributes, targets, fusion patterns");
  opsc->add_option("-o,--output", o_out, "with --markdown: write to this file instead of stdout")->needs(o_md);

  if (const std::string sub = unknown_subcommand(app, argc, argv); !sub.empty()) {
    std::fprintf(stderr, "npusim: unknown subcommand '%s'; see npusim --help\n", sub.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);    // prints help/version or the usage error
    return rc == 0 ? 0 : 2;  // exit codes: 0 pass, 1 results outside tolerance, 2 bad input
  }
  try {
    {
      std::string command;
      for (const CLI::App* sub : app.get_subcommands()) command = sub->get_name();
      cli::start_processes(argc, argv, command);  // under mpirun: one pipeline stage per process
    }
    if (!tc.devices.empty() && !tc.stages_given) tc.stages = static_cast<int>(tc.devices.size());  // one stage per device
    // --interpret without --target means the reference (the only target that interprets).
    if (tc.interpret && !tc.target_given) tc.target = "reference";
    cli::check_thread_env();  // NPUSIM_THREADS: a number of threads or nothing, whichever target runs
    if (threads > 0) cli::set_cpu_threads(threads);  // the pool, OpenMP and Eigen
    // Every input the command opens is remembered; an output onto one of them is refused by the
    // writer (AtomicFile), whichever option names it (`compile ir.json -o ir.json`).
    refuse_outputs_onto_inputs();
    if (cli::stage_link() && tc.interpret)
      throw Error(ErrorCode::unsupported, "under mpirun, npusim runs compiled programs (one stage per process); --interpret runs the IR in one",
                  {.found = "--interpret"});
    auto dispatch = [&]() -> int {
    if (*run) return cli::cmd_run(ra, tc, prof);
    if (*gen) return cli::cmd_generate(ga, tc);
    if (*comp) return cli::cmd_compile(c_ir, c_out, tc, c_verify, c_embed, c_weights, c_npu);
    if (*quant) return cli::cmd_quantize(qa, tc);
    if (*insp) return cli::cmd_inspect(i_path, i_json, i_buffers, i_no_kernels, i_npu);
    if (*expl) return cli::cmd_explain(e_ir, tc, e_kernels, e_npu);
    if (*sim) return cli::cmd_simulate(sa, s_tc);
    if (*opsc) return cli::cmd_ops(o_markdown, o_out);
    if (*bench) return cli::cmd_bench(b_dir, tc, ba, b_weights, b_inputs);
    if (*bench_llm) return cli::cmd_bench_llm(bl_prefill, bl_decode, tc, bla);
    if (*devs) return cli::cmd_devices();
    if (*tlist) return cli::cmd_targets();
    return 0;
    };
    const int rc = dispatch();
    cli::stop_processes();
    return rc;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes are checked before allocating (docs/robustness.md); this is memory the machine ran out of.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim resource error: out of memory (the machine could not provide an allocation; a smaller model, batch or --threads may fit)\n");
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  } catch (const std::exception& e) {
    // Every failure npusim knows of is an npusim::Error; anything else is a bug in npusim.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim internal error: an unexpected exception escaped (%s); please report it with the command line\n", e.what());
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  }
  return 0;
}
