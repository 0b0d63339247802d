// `npusim compile`: an IR to a .npubin (weights embedded on request, an NPU estimate stored on request).
#include <filesystem>

#include "options.hpp"
#include "cli.hpp"
#include "npusim/npu/record.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/runtime/model_dir.hpp"

namespace npusim::cli {

namespace fs = std::filesystem;

int cmd_compile(const std::string& model, const std::string& out, const TargetChoice& tc, bool verify, bool embed, const std::string& weights,
                NpuArgs npu_args) {
  validate(tc);
  load_npu(npu_args);
  if (is_npubin_path(model)) throw Error(ErrorCode::attr, "compile takes an IR (a case directory or an IR .json file), not a .npubin", {.file = model});
  if (!embed && weights != "auto")
    throw Error(ErrorCode::attr, "--weights applies with --embed-weights only (a .npubin without weights takes them when run)", {.found = "--weights " + weights});
  auto t0 = clock_type::now();
  runtime::ModelDir c = runtime::ModelDir::open(model, embed ? weights : "none");
  if (embed && !c.weights)
    throw Error(ErrorCode::weights, "--embed-weights needs weights: none beside the IR (weights.safetensors, synth.json); give --weights",
                {.file = model});
  program::CompileOptions o = compile_options(tc);
  o.verify = verify;
  program::CompiledProgram p = program::compile(c.graph, target_info(tc), o);
  std::optional<NpuChoice> npu = npu_choice(npu_args, p, model);
  if (npu) npu::attach(p, npu->description, npu->dtype);
  const program::EmbeddedWeightsInfo saved = program::save(p, out, embed ? c.weights.get() : nullptr);
  print_compile_summary(p, seconds_since(t0));
  for (const auto& note : saved.notes) std::printf("%s\n", note.c_str());
  if (npu) print_npu_summary(*npu, estimate_for(*npu, p));
  std::printf("wrote %s (%s%s)\n", out.c_str(), written_size(out).c_str(),
              embed ? ", weights embedded" : ", no weights: run it with --weights");
  return 0;
}

Registered add_compile(Shared& s) {
  struct Args {
    std::string ir, out, weights = "auto";
    bool verify = false, embed = false;
    NpuArgs npu;
  };
  auto a = std::make_shared<Args>();
  auto* comp = s.app.add_subcommand("compile", "compile an IR (case directory or .json) to a .npubin program");
  comp->add_option("model", a->ir, "case directory or torch_ir JSON file")->required();
  comp->add_option("-o,--output", a->out, "output .npubin path")->required();
  comp->add_flag("--verify", a->verify, "re-check every node after each pass");
  comp->add_flag("--embed-weights", a->embed, "store the weights in the .npubin (aligned, mmap'able, checksummed): it then runs on its own");
  comp->add_option("--weights", a->weights, "with --embed-weights: the weights to embed (default: those beside the IR)");
  auto* npu_opt = comp->add_option("--npu", a->npu.npu, npu_help("estimate every kernel on this NPU and store the description in the .npubin"));
  comp->add_option("--npu-dtype", a->npu.dtype, "with --npu: the estimate's operand dtype (default: the compute dtype if the NPU has it, else its first)")
      ->needs(npu_opt);
  add_target_options(comp, s.tc, false);
  return {comp, [a, &tc = s.tc] { return cmd_compile(a->ir, a->out, tc, a->verify, a->embed, a->weights, a->npu); }};
}

}  // namespace npusim::cli
