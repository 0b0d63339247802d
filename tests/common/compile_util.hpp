// Test helpers for compiled programs: compile a case for the reference target (all patterns,
// with constant folding through the reference), run it, and compare with the unfused graph.
#pragma once

#include "npusim/ir/json.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/reference.hpp"
#include "npusim/target/reference/interpreter.hpp"

namespace npusim::test {

inline program::CompileOptions reference_options(DType compute = DType::f32) {
  program::CompileOptions o;
  o.compute = compute;
  o.evaluator = &ref::evaluate_node;
  o.verify = true;
  return o;
}

inline program::CompiledProgram compile_reference(const ir::Graph& g, program::CompileOptions o = reference_options()) {
  return program::compile(g, describe_target<ReferenceTarget>(), o);
}

// Inputs for any case: io.safetensors where present; LLM decode cases get the first decode
// step's inputs with deterministic pseudo-random KV caches.
inline std::vector<Tensor> any_inputs(const runtime::ModelDir& c) {
  bool all = true;
  for (auto t : c.graph.inputs) all = all && c.io && c.io->find(c.graph.tensor(t).name);
  if (all || c.kind() != "causal_lm" || !c.io || !c.io->find("decode_tokens")) return c.inputs();
  std::set<ir::TensorId> kv;
  for (auto t : c.graph.inputs)
    if (c.graph.tensor(t).shape.size() == 4 && is_floating(c.graph.tensor(t).dtype) && c.graph.tensor(t).shape[2] > 1) kv.insert(t);
  llm::Roles r = llm::detect_roles(c.graph, kv);  // by name
  std::map<ir::TensorId, Tensor> others;
  for (auto t : kv) {
    Tensor x = Tensor::empty(DType::f32, c.graph.tensor(t).shape);
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = weights::synth_unit(7 + static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i));
    others[t] = x;
  }
  std::int64_t tok = c.io->tensor("decode_tokens").data<std::int64_t>()[0];
  const std::int64_t pos = c.meta().value("prefill_len", 1);
  return llm::build_inputs(c.graph, r, std::span<const std::int64_t>(&tok, 1), pos, others);
}

}  // namespace npusim::test
