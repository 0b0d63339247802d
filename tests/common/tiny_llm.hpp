// The tiny Qwen2 fixture (tests/data/models/qwen2_tiny_{prefill,decode}) compiled for the CPU
// target, its two programs bound to one set of weights and joined by the KV mapping: the LLM the
// driver tests run.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "compile_util.hpp"
#include "npusim/passes/select_rows.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/cpu.hpp"
#include "test_util.hpp"

namespace npusim::test {

struct TinyLlm {
  runtime::ModelDir pc = runtime::ModelDir::open(data("models/qwen2_tiny_prefill"));
  runtime::ModelDir dc = runtime::ModelDir::open(data("models/qwen2_tiny_decode"));
  ir::Graph pg = pc.graph;  // the prefill as compiled: one_row computes the logits of one row
  std::unique_ptr<Runner> prefill, decode;
  std::unique_ptr<llm::LlmPrograms> m;

  explicit TinyLlm(DType dt = DType::f32, bool one_row = false) {
    if (one_row) passes::select_output_row(pg, 0, llm::logits_row_input);
    std::unordered_map<std::string, Tensor> cache;  // both programs bind each weight once
    weights::BindOptions bo;
    bo.cache = &cache;
    program::CompileOptions o;
    o.compute = dt;
    o.evaluator = evaluator_for<CpuTarget>();
    prefill = runner_for<CpuTarget>::make(program::compile(pg, describe_target<CpuTarget>(), o), pc.weights.get(), bo);
    decode = runner_for<CpuTarget>::make(program::compile(dc.graph, describe_target<CpuTarget>(), o), pc.weights.get(), bo);
    m = std::make_unique<llm::LlmPrograms>(*prefill, *decode, llm::KvMapping::read(data("models/qwen2_tiny_decode/kv_mapping.json")), pg, dc.graph);
  }
};

}  // namespace npusim::test
