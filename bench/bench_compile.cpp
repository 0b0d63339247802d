// Compile time: parse the IR JSON, check it, run the passes, fuse, plan buffers and serialise to
// .npubin, for the Qwen2.5-1.5B decode IR (2032 nodes) and the ResNets. Each stage is also timed
// alone so a regression points at its stage.
#include <benchmark/benchmark.h>

#include "npusim/core/file.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/target/reference/reference_target.hpp"

using namespace npusim;

namespace {
std::string path(const char* c) { return std::string(NPUSIM_BENCH_DATA) + "/models/" + c + "/ir.json"; }

program::CompileOptions options() {
  program::CompileOptions o;
  o.evaluator = ReferenceTarget::evaluator();
  return o;
}

void BM_CompileEndToEnd(benchmark::State& st, const char* model) {
  const std::string text = read_file(path(model));
  const auto target = describe_target<ReferenceTarget>();
  std::size_t bytes = 0;
  for (auto _ : st) {
    ir::Graph g = ir::read_ir_string(text, model);
    program::CompiledProgram p = program::compile(std::move(g), target, options());
    std::string bin = program::serialize(p);
    bytes = bin.size();
    benchmark::DoNotOptimize(bin.data());
  }
  st.counters["npubin_bytes"] = static_cast<double>(bytes);
}

void BM_ParseIr(benchmark::State& st, const char* model) {
  const std::string text = read_file(path(model));
  for (auto _ : st) benchmark::DoNotOptimize(ir::read_ir_string(text, model).nodes.size());
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * text.size()));
}

void BM_CompileOnly(benchmark::State& st, const char* model) {
  const ir::Graph g = ir::read_ir_file(path(model));
  const auto target = describe_target<ReferenceTarget>();
  for (auto _ : st) benchmark::DoNotOptimize(program::compile(g, target, options()).stats.kernels);
}

void BM_Serialize(benchmark::State& st, const char* model) {
  const auto p = program::compile(ir::read_ir_file(path(model)), describe_target<ReferenceTarget>(), options());
  for (auto _ : st) benchmark::DoNotOptimize(program::serialize(p).size());
}

void BM_Deserialize(benchmark::State& st, const char* model) {
  const std::string bin = program::serialize(program::compile(ir::read_ir_file(path(model)), describe_target<ReferenceTarget>(), options()));
  for (auto _ : st) benchmark::DoNotOptimize(program::deserialize(bin).partitions.size());
}
}  // namespace

BENCHMARK_CAPTURE(BM_CompileEndToEnd, qwen2_5_1_5b_decode, "qwen2.5_1.5b_decode")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileEndToEnd, qwen2_5_1_5b_prefill, "qwen2.5_1.5b_prefill")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileEndToEnd, resnet50, "resnet50")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseIr, qwen2_5_1_5b_decode, "qwen2.5_1.5b_decode")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileOnly, qwen2_5_1_5b_decode, "qwen2.5_1.5b_decode")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Serialize, qwen2_5_1_5b_decode, "qwen2.5_1.5b_decode")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Deserialize, qwen2_5_1_5b_decode, "qwen2.5_1.5b_decode")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
