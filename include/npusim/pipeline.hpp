// Pipeline<Target, DType>: the thin facade most users need. Compile an IR (or load a .npubin, with
// the weights it embeds), load weights, run.
//
//   npusim::Pipeline<npusim::ReferenceTarget, npusim::F32> p("model/ir.json");
//   p.load_weights(npusim::weights::SynthSource::read("model/synth.json"));
//   auto outputs = p.run(inputs);
//
// Include the target's entry header (npusim/reference.hpp, npusim/cpu.hpp, npusim/opencl.hpp, or
// npusim/npusim.hpp for all of them): it brings the executors of the target and of its fallback.
#pragma once

#include <memory>

#include "npusim/core/dtype.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/npu/record.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/runtime/program_runner.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::inline NPUSIM_ABI {

// The constant-folding evaluator for Target's programs: its own, else its fallback's.
template <class Target>
passes::Evaluator evaluator_for() {
  if constexpr (requires { Target::evaluator(); }) return Target::evaluator();
  else if constexpr (requires { Target::fallback::evaluator(); }) return Target::fallback::evaluator();
  else return {};
}

template <class Target, ComputeTag D = F32>
class Pipeline {
  static_assert(ExecutableTarget<Target>,
                "NPUSIM: Pipeline<Target, D> needs the target's executor: include its entry header "
                "(npusim/reference.hpp, npusim/cpu.hpp, npusim/opencl.hpp) or npusim/npusim.hpp");

 public:
  // Reads and compiles an IR file for Target, computing in D.
  explicit Pipeline(const std::string& ir_path, program::CompileOptions opt = {})
      : program_(std::make_shared<program::CompiledProgram>(compile_ir(ir_path, std::move(opt)))) {}
  explicit Pipeline(program::CompiledProgram p) : program_(std::make_shared<program::CompiledProgram>(std::move(p))) {
    if (program_->target != Target::name)
      throw Error(ErrorCode::unsupported, "program was compiled for another target", {.file = program_->source,
                  .expected = std::string(Target::name), .found = program_->target});
  }
  // A .npubin; weights it embeds are checked against its program and bound by the first run()
  // unless load_weights() chose others first.
  static Pipeline load(const std::string& npubin_path) {
    Pipeline p(program::load(npubin_path));
    p.embedded_ = program::embedded_weights(npubin_path, *p.program_);
    return p;
  }

  void save(const std::string& npubin_path) const { program::save(*program_, npubin_path); }
  // The program with every weight it binds read from `embed` (values before recipes), so the
  // file runs on its own.
  program::EmbeddedWeightsInfo save(const std::string& npubin_path, const weights::WeightSource& embed, const program::EmbedOptions& o = {}) const {
    return program::save(*program_, npubin_path, &embed, o);
  }
  const program::CompiledProgram& program() const { return *program_; }

  // What the compiled program would cost on an NPU (docs/npu-simulation.md): per kernel and in
  // total; shapes and dtypes only, no weights needed. The operand dtype defaults to the program's.
  npu::Estimate estimate(const npu::Description& d, npu::EstimateOptions o = {}) const { return npu::estimate(*program_, d, o); }
  // Keeps the description with the program, so that save() stores it in the .npubin.
  void attach_npu(const npu::Description& d, std::optional<DType> dt = std::nullopt) { npu::attach(*program_, d, dt.value_or(program_->compute)); }
  // The weights the loaded .npubin carries; null when it has none (or the pipeline compiled an IR).
  const weights::WeightSource* embedded_weights() const { return embedded_.get(); }

  // Binds (and uploads) the weights; recipes (folded BatchNorms, ...) are applied here.
  void load_weights(const weights::WeightSource& source) { runner_ = runner_for<Target>::make(*program_, &source); }
  // The same with binding options, e.g. a cache shared with another pipeline of the same model
  // (an LLM's prefill and decode programs then load and convert each weight once).
  void load_weights(const weights::WeightSource& source, weights::BindOptions bind)
    requires requires(const program::CompiledProgram& p, const weights::WeightSource* w, weights::BindOptions b) {
      runner_for<Target>::make(p, w, std::move(b));
    }
  {
    runner_ = runner_for<Target>::make(*program_, &source, std::move(bind));
  }
  void load_weights_none() { runner_ = runner_for<Target>::make(*program_, nullptr); }

  std::vector<Tensor> run(std::span<const Tensor> inputs) { return runner().run(inputs); }
  Runner& runner() {
    if (!runner_) embedded_ ? load_weights(*embedded_) : load_weights_none();
    return *runner_;
  }

 private:
  static program::CompiledProgram compile_ir(const std::string& path, program::CompileOptions opt) {
    opt.compute = D::dtype;
    if (!opt.evaluator) opt.evaluator = evaluator_for<Target>();
    return program::compile(ir::read_ir_file(path), describe_target<Target>(), opt);
  }

  std::shared_ptr<program::CompiledProgram> program_;
  std::shared_ptr<const program::NpubinWeights> embedded_;
  std::unique_ptr<Runner> runner_;
};

}  // namespace npusim::inline NPUSIM_ABI
