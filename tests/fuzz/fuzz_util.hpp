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
#include "npusim/target/reference/reference_target.hpp"
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

// Binds synthetic weights and runs the graph on the reference target (small graphs only).
inline void bind_and_run(const ir::Graph& g) {
  weights::SynthSource src(synth_for(g));
  weights::BindOptions o;
  o.allow_cast = true;
  o.load_as = DType::f32;
  o.rope_theta = 10000.0;
  weights::BoundWeights w = weights::bind_weights(g, &src, o);
  if (!small_graph(g)) return;
  ref::GraphExecutor exec(g);
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
