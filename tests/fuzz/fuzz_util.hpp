// Shared by the libFuzzer targets: the one rule they check (only npusim::Error may escape the
// library; anything else, and any sanitizer report, is a crash), a lower allocation limit so that
// a fuzzed "tensor of 10 GB" is refused the way a 1 TB one is on a real machine, and helpers that
// drive the paths a user hits after a successful read (binding weights, running small graphs).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <typeinfo>

#include "npusim/ir/graph.hpp"
#include "npusim/program/program.hpp"
#include "npusim/target/reference/interpreter.hpp"
#include "npusim/weights/binding.hpp"

namespace npusim::fuzz {


// NPUSIM_FUZZ_VERBOSE=1 prints every npusim::Error (to see how far corpus inputs get).
inline bool verbose() {
  static const bool v = std::getenv("NPUSIM_FUZZ_VERBOSE") != nullptr;
  return v;
}

template <class F>
void only_npusim_errors(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (verbose()) std::fprintf(stderr, "fuzz: %s\n", e.what());  // the expected outcome for most inputs
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: a %s escaped instead of npusim::Error: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// Small enough to materialise every tensor of a graph while fuzzing.
inline bool small_graph(const ir::Graph& g, std::int64_t max_elements = std::int64_t{1} << 16) {
  std::int64_t total = 0;
  for (const auto& t : g.tensors) {
    total += numel(t.shape);  // each shape is checked, the sum stays far from overflow below the cap
    if (total > max_elements) return false;
  }
  return true;
}

// A synth manifest holding every weight of `g` that is at most `max_elements` large, in its IR
// shape and dtype; larger ones stay missing (binding then reports them).
inline weights::SynthManifest synth_for(const ir::Graph& g, std::int64_t max_elements = std::int64_t{1} << 16) {
  weights::SynthManifest m;
  m.source = "fuzz-synth.json";
  m.rule = "npusim-synth-v1";
  for (auto id : g.weights) {
    const ir::TensorInfo& w = g.tensor(id);
    if (numel(w.shape) <= max_elements) m.tensors[w.weight_key] = {0.0, 0.5, w.shape, w.dtype};
  }
  return m;
}

// Deterministic inputs in the graph's shapes: small non-negative integers (valid indices for most
// index operands), floats in [-1, 1).
inline std::vector<Tensor> inputs_for(const ir::Graph& g) {
  std::vector<Tensor> in;
  for (auto id : g.inputs) {
    const ir::TensorInfo& info = g.tensor(id);
    Tensor f = Tensor::empty(DType::f32, info.shape);
    for (std::int64_t i = 0; i < f.numel(); ++i)
      f.data<float>()[i] = is_floating(info.dtype) ? weights::synth_unit(7, static_cast<std::uint64_t>(i)) : static_cast<float>(i % 2);
    in.push_back(f.to(info.dtype));
  }
  return in;
}

// A compiled program small enough to run while fuzzing: its inputs and every partition's tensors.
inline bool small_program(const program::CompiledProgram& p) {
  std::int64_t io_elements = 0;
  for (const auto& io : p.inputs) io_elements += numel(io.shape);  // shapes are checked: no overflow below the cap
  if (io_elements > (std::int64_t{1} << 16)) return false;
  for (const auto& part : p.partitions)
    if (!small_graph(part.graph)) return false;
  return true;
}

// Synthetic weights for a compiled program: every partition's weight keys, and the inputs of its
// recipes, which are checkpoint keys no partition names, in the shapes the derived weights suggest
// (bn_fold: the conv weight's, then [Cout]; pad: its output's), so recipes run too.
inline weights::SynthSource synth_for_program(const program::CompiledProgram& p) {
  weights::SynthManifest m;
  m.source = "fuzz-synth.json", m.rule = "npusim-synth-v1";
  for (const auto& part : p.partitions) {
    auto pm = synth_for(part.graph);
    m.tensors.insert(pm.tensors.begin(), pm.tensors.end());
  }
  for (const auto& r : p.recipes) {
    auto out = m.tensors.find(r.outputs.empty() ? std::string() : r.outputs[0]);
    if (out == m.tensors.end()) continue;
    const weights::SynthTensor w = out->second;
    for (std::size_t i = 0; i < r.inputs.size(); ++i)
      if (!r.inputs[i].empty() && !m.tensors.count(r.inputs[i]))
        m.tensors[r.inputs[i]] = i == 0 || w.shape.empty() ? w : weights::SynthTensor{1.0, 0.5, {w.shape[0]}, w.dtype};
  }
  return weights::SynthSource(std::move(m));
}

// Deterministic inputs in a compiled program's input specs (as inputs_for).
inline std::vector<Tensor> inputs_for_program(const program::CompiledProgram& p) {
  ir::Graph g;
  for (const auto& io : p.inputs) g.inputs.push_back(g.add_tensor({io.name, io.shape, io.dtype, ir::TensorKind::input, -1, 0, {}}));
  return inputs_for(g);
}

// Binds synthetic weights and runs the graph on the reference target (small graphs only).
inline void bind_and_run(const ir::Graph& g) {
  weights::SynthSource src(synth_for(g));
  weights::BindOptions o;
  o.allow_cast = true;
  o.load_as = DType::f32;
  o.rope_theta = 10000.0;
  weights::BoundWeights w = weights::bind_weights(g, &src, o);
  if (!small_graph(g)) return;
  ref::Interpreter exec(g);
  exec.bind_weights(w.tensors);
  exec.run(inputs_for(g));
}

}  // namespace npusim::fuzz

// Each target is one translation unit including this header once. libFuzzer's default
// -rss_limit_mb is 2048: one allocation stays well below it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  npusim::allocation_limit() = std::uint64_t{256} << 20;
  return 0;
}
