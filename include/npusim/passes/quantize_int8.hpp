// Post-training int8 quantization of a float graph (`npusim quantize`, docs/quantization.md):
// with each activation's observed range, convolutions, linears, residual adds and concatenations
// become the integer ops of ops/quantized.hpp (int8 weights per output channel, symmetric; int8 activations
// per tensor, asymmetric; int32 biases; the ReLU / ReLU6 after them folded into the output clamp),
// max pooling of an int8 result stays int8 (qmax_pool2d), and every other op keeps computing in
// float between explicit quantize_per_tensor and
// dequantize_per_tensor nodes. The int8 weights are recipes (weights/recipes.hpp,
// "quantize_per_channel") of the float ones, so any float checkpoint still binds.
//
// Naming: a float tensor keeps its name and meaning; its int8 twin is named "<name>.int8", so a
// float program and its quantized one can be compared tensor by tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

struct Int8Range {
  float lo = 0.0f, hi = 0.0f;
};

struct Int8Options {
  std::map<std::string, Int8Range, std::less<>> ranges;  // observed ranges by tensor name (the graph after the float passes)
  std::vector<std::string> keep_float;                    // node names (of conv2d / linear / add) left in float
  std::map<std::string, int, std::less<>> weight_bits;   // node name -> bits of its weights (2..8; default 8)
  bool enabled() const { return !ranges.empty(); }
};

// An op the rewrite turns into an integer one: the node, the activation folded into it (-1: none),
// its activation inputs, and the float tensor whose value its int8 output stands for.
struct Int8Site {
  std::int32_t node = -1, act = -1;
  std::vector<ir::TensorId> inputs;
  ir::TensorId output = ir::no_tensor;
};

// The sites of g, in graph order. A `keep_float` entry that names no such node is an error.
std::vector<Int8Site> int8_sites(const ir::Graph& g, const Int8Options& opt);

// The tensors whose ranges quantize_int8 needs (inputs and outputs of every site), by name, once each.
std::vector<std::string> int8_observed_tensors(const ir::Graph& g, const Int8Options& opt);

// The name of a float tensor's int8 twin.
inline std::string int8_name(const std::string& float_name) { return float_name + ".int8"; }

struct Int8Result {
  std::int64_t integer_ops = 0, quantize_nodes = 0, dequantize_nodes = 0, folded_activations = 0, int8_pools = 0;
};

Int8Result quantize_int8(ir::Graph& g, std::vector<weights::Recipe>& recipes, const Int8Options& opt);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/quantize_int8_inl.hpp"
#endif
