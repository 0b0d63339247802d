// `npusim compile`: an IR to a .npubin (weights embedded on request, an NPU estimate stored on request).
#include <filesystem>

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

}  // namespace npusim::cli
