// Definitions for npusim/npu/workload.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <numeric>

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/npu/workload.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC const char* model_name(Model m) {
  switch (m) {
    case Model::view: return "view";
    case Model::gemm: return "gemm";
    case Model::conv: return "conv";
    case Model::attention: return "attention";
    case Model::vector: return "vector";
  }
  return "?";
}

NPUSIM_FUNC VectorOps& VectorOps::operator+=(const VectorOps& o) {
  simple += o.simple, transcendental += o.transcendental;
  return *this;
}

NPUSIM_FUNC std::int64_t Workload::input_bytes() const {
  return std::accumulate(inputs.begin(), inputs.end(), std::int64_t{0}, [](std::int64_t s, const Operand& o) { return s + o.bytes; });
}

NPUSIM_FUNC std::int64_t Workload::output_bytes() const {
  return std::accumulate(outputs.begin(), outputs.end(), std::int64_t{0}, [](std::int64_t s, const Operand& o) { return s + o.bytes; });
}

NPUSIM_FUNC std::int64_t element_bytes(DType t, DType estimate) {
  return static_cast<std::int64_t>(dtype_size(is_floating(t) ? estimate : t));
}

}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {
namespace detail {

NPUSIM_FUNC std::int64_t checked_macs(std::initializer_list<std::int64_t> dims, const ir::Graph& g, const Kernel& k) {
  std::int64_t p = 1;
  for (std::int64_t x : dims)
    if (x < 0 || __builtin_mul_overflow(p, x, &p) || p > max_kernel_macs)
      throw Error(ErrorCode::resource, "kernel too large for an NPU estimate",
                  {.file = g.source, .node = g.nodes.at(static_cast<std::size_t>(k.nodes.back())).name, .expected = "at most 2^52 MACs"});
  return p;
}

NPUSIM_FUNC bool transcendental(std::string_view id) {
  static constexpr std::string_view names[] = {"silu", "rsqrt", "sqrt", "reciprocal", "cos", "sin", "exp", "log", "tanh",
                                               "erf",  "sigmoid", "gelu", "pow_scalar", "div", "softmax", "log_softmax"};
  return std::find(std::begin(names), std::end(names), id) != std::end(names);
}

NPUSIM_FUNC VectorOps node_vector_ops(const ir::Graph& g, const ir::Node& n, bool absorb_movement) {
  const ops::OpInfo& info = ops::op_info(ops::require_op(n));
  auto out = [&] { return n.outputs.empty() ? 0.0 : static_cast<double>(numel(g.tensor(n.outputs[0]).shape)); };
  auto in = [&] { return n.inputs.empty() ? 0.0 : static_cast<double>(numel(g.tensor(n.inputs[0]).shape)); };
  VectorOps v;
  switch (info.op_class) {
    case ops::OpClass::elementwise:
      if (transcendental(info.id)) v.transcendental = out(), v.simple = info.id == "silu" || info.id == "gelu" ? out() : 0.0;
      else v.simple = info.id == "hardswish" ? 3 * out() : info.id == "hardsigmoid" ? 2 * out() : out();
      break;
    case ops::OpClass::movement: v.simple = absorb_movement ? 0.0 : out(); break;
    case ops::OpClass::quantization: v.simple = (info.id == ops::QAdd::id ? 4 : 2) * out(); break;  // scale, round / rescale both, add, requantize
    case ops::OpClass::reduction:
      if (transcendental(info.id)) v.simple = 4 * in(), v.transcendental = in();  // max, subtract, sum, scale + exp
      else v.simple = in();
      break;
    case ops::OpClass::normalization:
      v.simple = (info.id == "layer_norm" ? 5 : 2) * out();
      break;
    case ops::OpClass::pool: {
      if (info.id == "adaptive_avg_pool2d") {
        v.simple = in();
      } else {
        const auto a = info.id == "max_pool2d" || info.id == ops::QMaxPool2d::id ? ops::read_attrs<ops::MaxPool2d::Attrs>(n.attrs, n.op_type).kernel_size
                                               : ops::read_attrs<ops::AvgPool2d::Attrs>(n.attrs, n.op_type).kernel_size;
        v.simple = out() * static_cast<double>(a.at(0) * a.at(1));
      }
      break;
    }
    case ops::OpClass::creation:
      v.simple = out();
      if (info.id == "rotary_embedding") v.transcendental = 2 * out();  // cos and sin of every angle
      break;
    default: break;  // view, noop, matmul, conv, attention (the MAC array), indexing (DMA only)
  }
  return v;
}

}  // namespace detail
}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC Workload analyze_kernel(const ir::Graph& g, const Kernel& k, DType estimate) {
  Workload w;
  if (k.kind == "view") {
    w.model = Model::view;
    return w;
  }
  auto operand = [&](ir::TensorId t) {
    const ir::TensorInfo& i = g.tensor(t);
    return Operand{i.name, detail::tensor_bytes(i, estimate), numel(i.shape), i.kind == ir::TensorKind::weight || i.kind == ir::TensorKind::constant};
  };
  for (auto t : k.inputs) w.inputs.push_back(operand(t));
  for (auto t : k.outputs) w.outputs.push_back(operand(t));
  auto input_index = [&](ir::TensorId t) {
    auto it = std::find(k.inputs.begin(), k.inputs.end(), t);
    return it == k.inputs.end() ? -1 : static_cast<int>(it - k.inputs.begin());
  };

  std::int32_t mm = -1, conv = -1, sdpa = -1;
  for (auto ni : k.nodes) {
    const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
    const ops::OpClass c = ops::op_info(ops::require_op(n)).op_class;
    if (c != ops::OpClass::view && c != ops::OpClass::noop && std::find(w.classes.begin(), w.classes.end(), c) == w.classes.end()) w.classes.push_back(c);
    if (c == ops::OpClass::matmul && mm < 0) mm = ni;
    if (c == ops::OpClass::conv && conv < 0) conv = ni;
    if (c == ops::OpClass::attention && sdpa < 0) sdpa = ni;
  }
  const bool attention = k.kind == "attention" || sdpa >= 0;
  const bool absorb = attention || conv >= 0 || mm >= 0;  // moves feeding the MAC array are addressing
  for (auto ni : k.nodes) w.vector += detail::node_vector_ops(g, g.nodes[static_cast<std::size_t>(ni)], absorb);

  if (attention) {
    w.model = Model::attention;
    AttentionWork& a = w.attention;
    const auto& in = k.inputs;
    a.q = 0, a.k = 1, a.v = 2, a.mask = in.size() > 3 ? 3 : -1;
    const Shape &q = g.tensor(in.at(0)).shape, &kk = g.tensor(in.at(1)).shape;
    if (q.size() != 4 || kk.size() != 4)
      throw Error(ErrorCode::shape, "attention kernel: q and k must be [B, H, S, D]", {.node = g.nodes[static_cast<std::size_t>(k.nodes.back())].name,
                  .found = to_string(q) + ", " + to_string(kk)});
    a.batch = q[0], a.heads = q[1], a.sq = q[2], a.d = q[3], a.kv_heads = kk[1], a.skv = kk[2];
    if (a.kv_heads <= 0 || a.heads % a.kv_heads) a.kv_heads = a.heads;
    a.elem = element_bytes(g.tensor(in[0]).dtype, estimate);
    if (a.mask >= 0) {
      const ir::TensorInfo& m = g.tensor(in[3]);
      a.mask_elem = element_bytes(m.dtype, estimate);
      a.mask_heads = m.shape.size() == 4 ? std::max<std::int64_t>(m.shape[1], 1) : 1;
    }
    w.macs = detail::checked_macs({2, a.batch, a.heads, a.sq, a.skv, a.d}, g, k);
    if (sdpa >= 0) {  // the op itself: scale, mask, softmax per score
      const double scores = static_cast<double>(a.batch * a.heads * a.sq * a.skv);
      w.vector += VectorOps{6 * scores, scores};
    }
    return w;
  }
  if (conv >= 0) {
    w.model = Model::conv;
    const ir::Node& n = g.nodes[static_cast<std::size_t>(conv)];
    // qconv2d (int8) has a convolution's geometry and its own quantization attributes.
    const bool q = ops::op_info(ops::require_op(n)).id == ops::QConv2d::id;
    const ops::Conv2d::Attrs at = q ? ops::Conv2d::Attrs(ops::read_attrs<ops::QConv2d::Attrs>(n.attrs, n.op_type)) : ops::read_attrs<ops::Conv2d::Attrs>(n.attrs, n.op_type);
    ConvWork& c = w.conv;
    const Shape &x = g.tensor(n.inputs.at(0)).shape, &wt = g.tensor(n.inputs.at(1)).shape, &y = g.tensor(n.outputs.at(0)).shape;
    c.batch = x[0], c.cin = x[1], c.h = x[2], c.w = x[3], c.cout = wt[0], c.kh = wt[2], c.kw = wt[3], c.oh = y[2], c.ow = y[3], c.groups = at.groups;
    c.sh = at.stride[0], c.sw = at.stride[1], c.ph = at.padding[0], c.pw = at.padding[1], c.dh = at.dilation[0], c.dw = at.dilation[1];
    c.x_elem = element_bytes(g.tensor(n.inputs[0]).dtype, estimate), c.w_elem = element_bytes(g.tensor(n.inputs[1]).dtype, estimate);
    const std::size_t bias_at = q ? 3 : 2;  // qconv2d: (x, weight, weight scales, bias)
    c.x = input_index(n.inputs[0]), c.weight = input_index(n.inputs[1]), c.bias = n.inputs.size() > bias_at ? input_index(n.inputs[bias_at]) : -1;
    w.macs = detail::checked_macs({c.batch, c.oh, c.ow, c.cout, c.groups > 0 ? c.cin / c.groups : 0, c.kh, c.kw}, g, k);
    return w;
  }
  if (mm >= 0) {
    w.model = Model::gemm;
    const ir::Node& n = g.nodes[static_cast<std::size_t>(mm)];
    const std::string_view id = ops::op_info(ops::require_op(n)).id;
    GemmWork& m = w.gemm;
    const ir::TensorInfo& y = g.tensor(n.outputs.at(0));
    m.c_elem = element_bytes(y.dtype, estimate);
    ir::TensorId ta = n.inputs.at(id == "addmm" ? 1 : 0), tb = n.inputs.at(id == "addmm" ? 2 : 1);
    if (k.kind == "matmul_transb" || k.kind == "gqa_matmul") tb = k.inputs.at(1);
    m.a_elem = element_bytes(g.tensor(ta).dtype, estimate), m.b_elem = element_bytes(g.tensor(tb).dtype, estimate);
    m.a = input_index(ta), m.b = input_index(tb);
    if (id == "linear" || id == ops::QLinear::id) {
      const Shape& xs = g.tensor(ta).shape;
      m.k = xs.back(), m.n = g.tensor(n.inputs[1]).shape[0], m.m = m.k ? numel(xs) / m.k : 0;
      const std::size_t bias_at = id == "linear" ? 2 : 3;  // qlinear: (x, weight, weight scales, bias)
      if (n.inputs.size() > bias_at) m.bias = input_index(n.inputs[bias_at]);
      // More linears of the same x in the kernel (linear_group's q/k/v, linear_silu_gate's gate
      // and up): one product over their weights stacked.
      for (auto ni : k.nodes) {
        const ir::Node& o = g.nodes[static_cast<std::size_t>(ni)];
        if (ni != mm && o.inputs.size() >= 2 && o.inputs[0] == n.inputs[0] && ops::op_info(ops::require_op(o)).id == "linear")
          m.n += g.tensor(o.inputs[1]).shape[0];
      }
      // An RMSNorm folded in front (the has_norm of linear_group and linear_group_rope_kv): x, which
      // is not stored, normalised from the kernel's first input as it is read.
      if (m.a < 0 && k.bool_param("has_norm")) m.a = 0;
    } else if (k.kind == "gqa_matmul") {
      // a [B, H, M, K] against K/V [B, Hkv, ...]: each KV head's operand serves `group` heads.
      const Shape& as = g.tensor(ta).shape;
      const std::int64_t group = std::max<std::int64_t>(k.int_param("group", 1), 1);
      m.batch = as[0] * (as[1] / group), m.m = group * as[2], m.k = as[3], m.n = y.shape.back();
    } else {
      const ops::MatmulShapes s = ops::matmul_shapes(g.tensor(n.inputs[id == "addmm" ? 1 : 0]).shape, g.tensor(n.inputs[id == "addmm" ? 2 : 1]).shape);
      const std::int64_t batch = numel(s.batch);
      // A second operand without batch dims is shared by every batch: one GEMM of batch * m rows.
      if (g.tensor(n.inputs[id == "addmm" ? 2 : 1]).shape.size() <= 2) m.m = batch * s.m, m.batch = 1;
      else m.m = s.m, m.batch = batch;
      m.k = s.k, m.n = s.n;
      if (id == "addmm") m.bias = input_index(n.inputs[0]);
    }
    w.macs = detail::checked_macs({m.batch, m.m, m.k, m.n}, g, k);
    return w;
  }

  // Vector work. Gathers and scatters move the rows they touch, not whole tables or caches.
  w.model = Model::vector;
  std::int64_t moved = -1;  // elements a gather or scatter moves
  for (auto ni : k.nodes) {
    const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
    const std::string_view id = ops::op_info(ops::require_op(n)).id;
    if (id == "embedding" || id == "index_select") {
      const int table = input_index(n.inputs.at(0));
      if (table >= 0) {
        w.inputs[static_cast<std::size_t>(table)].bytes = detail::tensor_bytes(g.tensor(n.outputs.at(0)), estimate);
        w.inputs[static_cast<std::size_t>(table)].weight = false;  // rows, not a table to cache
      }
      w.gathers += numel(g.tensor(n.inputs.at(1)).shape);
      moved = std::max(moved, numel(g.tensor(n.outputs.at(0)).shape));
    } else if (id == "index_copy") {
      // In place (the cache is updated where it lies): the source rows are read and written.
      const int self = input_index(n.inputs.at(0));
      const std::int64_t src = detail::tensor_bytes(g.tensor(n.inputs.at(2)), estimate);
      if (self >= 0) w.inputs[static_cast<std::size_t>(self)].bytes = 0;
      for (std::size_t o = 0; o < k.outputs.size(); ++o)
        if (k.outputs[o] == n.outputs.at(0)) w.outputs[o].bytes = src;
      w.scatters += numel(g.tensor(n.inputs.at(1)).shape);
      moved = std::max(moved, numel(g.tensor(n.inputs.at(2)).shape));
    }
    const ops::OpClass c = ops::op_info(ops::require_op(n)).op_class;
    if ((c == ops::OpClass::reduction || c == ops::OpClass::normalization) && !n.inputs.empty() && !g.tensor(n.inputs[0]).shape.empty())
      w.row_elements = std::max(w.row_elements, g.tensor(n.inputs[0]).shape.back());
  }
  for (auto t : k.inputs) w.elements = std::max(w.elements, numel(g.tensor(t).shape));
  for (auto t : k.outputs) w.elements = std::max(w.elements, numel(g.tensor(t).shape));
  if (moved >= 0) w.elements = moved;
  return w;
}

}  // namespace npusim::inline NPUSIM_ABI::npu
