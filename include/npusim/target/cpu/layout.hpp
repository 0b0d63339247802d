// Which activations the CPU target keeps channel-blocked ([N][C/16][H][W][16], conv_nchwc.hpp)
// instead of NCHW. Decided once per partition, at bind time, from the kernels that touch each
// tensor. Tensors that must share a layout (the operands of an elementwise kernel, a pool's input
// and output) form one class; a class is blocked when
//   - every member is an f32 [N, C, H, W] arena tensor with C a multiple of 16 and H W > 1, not a
//     partition input or output, and not the storage of a view;
//   - every kernel touching a member reads and writes that layout: the f32 convolutions (input
//     and output each either way; a fused residual in the output's; a fused max pool's output
//     either way too), pools, and elementwise
//     kernels whose operands all have the output's shape (elementwise over the same bytes in any
//     order);
//   - a convolution touches it (otherwise there is nothing to gain).
// Everything else is NCHW, and what leaves the partition always is.
#pragma once

#include <numeric>
#include <vector>

#include "npusim/fusion/kernel.hpp"
#include "npusim/fusion/patterns.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/plan/buffer_plan.hpp"
#include "npusim/target/cpu/compute/conv_nchwc.hpp"
#include "npusim/target/cpu/kernels/conv/blocked_f32.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

namespace layout_detail {

enum class Role { conv, pool, pointwise, other };

inline Role role(const ir::Graph& g, const Kernel& k) {
  if (k.kind == fusion::ConvBnRelu::name || k.kind == fusion::ConvAddRelu::name || k.kind == fusion::ConvMaxPool::name) return Role::conv;
  if (k.kind == fusion::EltwiseChain::name || k.kind == fusion::AddRelu::name || k.kind == fusion::SiluGate::name) return Role::pointwise;
  if (k.nodes.size() != 1 || k.kind == "view") return Role::other;
  const ir::Node& n = g.nodes.at(static_cast<std::size_t>(k.nodes[0]));
  return ops::dispatch_op<Role>(ops::require_op(n), [&]<class Op>() {
    if constexpr (std::is_same_v<Op, ops::Conv2d>) return Role::conv;
    else if constexpr (std::is_same_v<Op, ops::MaxPool2d> || std::is_same_v<Op, ops::AvgPool2d> || std::is_same_v<Op, ops::AdaptiveAvgPool2d>)
      return Role::pool;
    else if constexpr (Op::op_class == ops::OpClass::elementwise) return Role::pointwise;
    else return Role::other;
  });
}

struct Classes {
  std::vector<std::size_t> parent;
  explicit Classes(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
  std::size_t find(std::size_t t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
  }
  void join(std::size_t a, std::size_t b) { parent[find(a)] = find(b); }
};

}  // namespace layout_detail

// Per tensor of the partition's graph: held blocked.
inline std::vector<bool> blocked_tensors(const ir::Graph& g, const std::vector<Kernel>& kernels, const plan::BufferPlan& plan) {
  using namespace layout_detail;
  const std::size_t n = g.tensors.size();
  std::vector<bool> blocked(n, false);
#if defined(NPUSIM_CPU_AVX512)
  if (!ConvBlockedF32::enabled()) return blocked;  // NPUSIM_CPU_SKIP: no convolution reads blocked tensors
  std::vector<bool> nchw(n, false), conv(n, false);
  Classes cls(n);
  auto at = [](ir::TensorId t) { return static_cast<std::size_t>(t); };
  for (ir::TensorId t : g.inputs) nchw[at(t)] = true;
  for (ir::TensorId t : g.outputs) nchw[at(t)] = true;
  for (std::size_t t = 0; t < n; ++t) {
    const auto& tp = plan.tensors[t];
    if (tp.place != plan::Place::arena || tp.storage != DType::f32 || !blockable(g.tensors[t].shape)) nchw[t] = true;
    if (tp.place == plan::Place::view && tp.root != ir::no_tensor) nchw[at(tp.root)] = true;
  }
  for (const Kernel& k : kernels) {
    auto all_nchw = [&] {
      for (ir::TensorId t : k.inputs) nchw[at(t)] = true;
      for (ir::TensorId t : k.outputs) nchw[at(t)] = true;
    };
    switch (role(g, k)) {
      case Role::conv: {
        const ir::Node& c = g.nodes.at(static_cast<std::size_t>(k.nodes[0]));
        const auto a = ops::read_attrs<ops::Conv2d::Attrs>(c.attrs, c.op_type);
        // conv_max_pool: the convolution's output (the pool's input, inside the kernel) too.
        const ir::TensorId mid = k.kind == fusion::ConvMaxPool::name ? g.nodes.at(static_cast<std::size_t>(k.nodes.back())).inputs.at(0) : k.outputs[0];
        // The blocked candidate's own rule (kernels/conv/blocked_f32.hpp), so the chooser agrees.
        const bool ok = k.outputs.size() == 1 && ConvBlockedF32::blockable(a.groups, plan.tensors[at(c.inputs[0])].storage,
                                                                           plan.tensors[at(mid)].storage, plan.tensors[at(k.outputs[0])].storage);
        if (!ok) {
          all_nchw();
          break;
        }
        conv[at(c.inputs[0])] = conv[at(k.outputs[0])] = true;
        // A residual (conv_add_relu) is added in the output's layout.
        const ir::TensorId res = k.kind == fusion::ConvAddRelu::name ? k.inputs.at(c.inputs.size()) : ir::no_tensor;
        if (res != ir::no_tensor) cls.join(at(res), at(k.outputs[0]));
        for (ir::TensorId t : k.inputs)  // the weights, bias and BatchNorm parameters are not activations
          if (t != c.inputs[0] && t != res) nchw[at(t)] = true;
        break;
      }
      case Role::pool: {
        const ir::TensorId x = k.inputs.at(0), y = k.outputs.at(0);
        const Shape& ys = g.tensor(y).shape;
        if (ys.size() == 4 && ys[2] * ys[3] > 1) cls.join(at(x), at(y));  // a 1 x 1 output is the same bytes either way
        break;
      }
      case Role::pointwise: {
        const Shape& s = g.tensor(k.outputs.at(0)).shape;
        bool same = k.outputs.size() == 1;
        for (ir::TensorId t : k.inputs) same = same && g.tensor(t).shape == s;
        if (!same) {
          all_nchw();
          break;
        }
        for (ir::TensorId t : k.inputs) cls.join(at(t), at(k.outputs[0]));
        break;
      }
      case Role::other: all_nchw(); break;
    }
  }
  std::vector<bool> class_nchw(n, false), class_conv(n, false);
  for (std::size_t t = 0; t < n; ++t) {
    if (nchw[t]) class_nchw[cls.find(t)] = true;
    if (conv[t]) class_conv[cls.find(t)] = true;
  }
  for (std::size_t t = 0; t < n; ++t) blocked[t] = !class_nchw[cls.find(t)] && class_conv[cls.find(t)];
#else
  (void)g, (void)kernels, (void)plan;
#endif
  return blocked;
}

// Per tensor of the partition's graph: an int8 activation held channels last (NHWC) between the
// integer kernels. A rank-4 int8 tensor in the arena is, when qconv2d or qadd writes it and only
// qconv2d and qadd read it (a qadd's two inputs and output together): each convolution then reads
// its pixel rows in place of transposing NCHW, and writes its channels contiguously. Such tensors
// hold code + 128 as unsigned bytes (compute/qconv.hpp, bias_bit): what the VNNI GEMM reads.
inline std::vector<bool> int8_channels_last(const ir::Graph& g, const std::vector<Kernel>& kernels, const plan::BufferPlan& plan) {
  const std::size_t n = g.tensors.size();
  auto at = [](ir::TensorId t) { return static_cast<std::size_t>(t); };
  auto integer = [](const Kernel& k) { return k.kind == ops::QConv2d::id || k.kind == ops::QAdd::id || k.kind == ops::QMaxPool2d::id; };
  std::vector<bool> cl(n, false);
  for (std::size_t t = 0; t < n; ++t)
    cl[t] = g.tensors[t].dtype == DType::i8 && g.tensors[t].shape.size() == 4 && plan.tensors[t].place == plan::Place::arena;
  for (ir::TensorId t : g.outputs) cl[at(t)] = false;
  for (ir::TensorId t : g.inputs) cl[at(t)] = false;
  for (const Kernel& k : kernels) {
    const bool ok = integer(k);
    for (ir::TensorId t : k.inputs)
      if (!ok) cl[at(t)] = false;
    for (ir::TensorId t : k.outputs)
      if (!ok) cl[at(t)] = false;
  }
  for (bool changed = true; changed;) {  // a qadd's and a qmax_pool2d's tensors share one layout
    changed = false;
    for (const Kernel& k : kernels) {
      if (k.kind != ops::QAdd::id && k.kind != ops::QMaxPool2d::id) continue;
      bool all = cl[at(k.outputs[0])];
      for (ir::TensorId t : k.inputs) all = all && cl[at(t)];
      if (all) continue;
      for (ir::TensorId t : k.inputs)
        if (cl[at(t)]) cl[at(t)] = false, changed = true;
      if (cl[at(k.outputs[0])]) cl[at(k.outputs[0])] = false, changed = true;
    }
  }
  return cl;
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
