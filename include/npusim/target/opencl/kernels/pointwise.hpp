// Pointwise kernels of the OpenCL target: every pointwise op and the eltwise_chain, add_relu and
// silu_gate patterns run as one small pointwise program (an instruction list interpreted per
// element, internal values rounded to their planned storage type as the model would); relu, neg,
// abs and clamp of integer tensors (and chains of them) as an integer program, in 64-bit integers.
#pragma once

#include <cmath>
#include <functional>
#include <limits>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/silu_mul.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ocl {

// ---- pointwise programs ------------------------------------------------------------------------------
enum PwOp : int {
  pw_const = 0, pw_relu, pw_silu, pw_neg, pw_abs, pw_rsqrt, pw_sqrt, pw_recip, pw_cos, pw_sin, pw_exp, pw_log, pw_tanh, pw_erf,
  pw_sigmoid, pw_gelu, pw_hardtanh, pw_hardswish, pw_hardsigmoid, pw_leaky, pw_clamp, pw_pow,
  pw_add = 30, pw_sub, pw_rsub, pw_mul, pw_div, pw_max, pw_min, pw_gt, pw_lt, pw_ge, pw_le, pw_eq, pw_ne, pw_where, pw_cast
};

struct PwProgram {
  std::vector<cl_int> code;  // op, dst, a, b, c
  std::vector<cl_float> imm;
  int regs = 0;
  int emit(int op, int a = 0, int b = 0, int c = 0, double i0 = 0, double i1 = 0) {
    code.insert(code.end(), {op, regs, a, b, c});
    imm.push_back(static_cast<float>(i0)), imm.push_back(static_cast<float>(i1));
    return regs++;
  }
};

// Emits the instructions of one member node; `reg(t)` gives the register holding tensor t.
inline int emit_node(PwProgram& p, const ir::Node& n, const std::function<int(ir::TensorId)>& reg) {
  const std::size_t idx = ops::require_op(n);
  auto in = [&](std::size_t i) { return reg(n.inputs.at(i)); };
  return ops::dispatch_op<int>(idx, [&]<class Op>() -> int {
    auto a = ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type);
    using namespace ops;
    if constexpr (meta::contains_v<Op, unary_ops>) {
      constexpr std::pair<std::string_view, int> table[] = {
          {"relu", pw_relu}, {"silu", pw_silu}, {"neg", pw_neg}, {"abs", pw_abs}, {"rsqrt", pw_rsqrt}, {"sqrt", pw_sqrt},
          {"reciprocal", pw_recip}, {"cos", pw_cos}, {"sin", pw_sin}, {"exp", pw_exp}, {"log", pw_log}, {"tanh", pw_tanh},
          {"erf", pw_erf}, {"sigmoid", pw_sigmoid}, {"hardswish", pw_hardswish}, {"hardsigmoid", pw_hardsigmoid}};
      if constexpr (std::is_same_v<Op, Gelu>) return p.emit(pw_gelu, in(0), 0, 0, a.approximate == "tanh" ? 1.0 : 0.0);
      else if constexpr (std::is_same_v<Op, Hardtanh>) return p.emit(pw_hardtanh, in(0), 0, 0, a.min_val, a.max_val);
      else if constexpr (std::is_same_v<Op, LeakyRelu>) return p.emit(pw_leaky, in(0), 0, 0, a.negative_slope);
      else if constexpr (std::is_same_v<Op, Clamp>)
        return p.emit(pw_clamp, in(0), 0, 0, a.min ? a.min->value : -INFINITY, a.max ? a.max->value : INFINITY);
      else if constexpr (std::is_same_v<Op, ClampMin>) return p.emit(pw_clamp, in(0), 0, 0, a.min.value, INFINITY);
      else if constexpr (std::is_same_v<Op, PowScalar>) return p.emit(pw_pow, in(0), 0, 0, a.exponent.value);
      else {
        for (auto [name, op] : table)
          if (name == Op::id) return p.emit(op, in(0));
        throw Error(ErrorCode::unsupported, "no pointwise code for " + std::string(Op::id));
      }
    } else if constexpr (meta::contains_v<Op, binary_ops>) {
      constexpr std::pair<std::string_view, int> table[] = {{"add", pw_add}, {"sub", pw_sub}, {"rsub", pw_rsub}, {"mul", pw_mul}, {"div", pw_div},
                                                            {"maximum", pw_max}, {"minimum", pw_min}, {"gt", pw_gt}, {"lt", pw_lt}, {"ge", pw_ge},
                                                            {"le", pw_le}, {"eq", pw_eq}, {"ne", pw_ne}};
      int x = in(0), y = n.inputs.size() == 2 ? in(1) : p.emit(pw_const, 0, 0, 0, a.other->value);
      for (auto [name, op] : table)
        if (name == Op::id) return p.emit(op, x, y, 0, a.alpha.value);
      throw Error(ErrorCode::unsupported, "no pointwise code for " + std::string(Op::id));
    } else if constexpr (std::is_same_v<Op, Where>) {
      return p.emit(pw_where, in(0), in(1), in(2));
    } else if constexpr (std::is_same_v<Op, MaskedFill>) {
      // where(mask, value, self); .Tensor's value is a 0-d input, .Scalar's an immediate.
      const int value = n.inputs.size() == 3 ? in(2) : p.emit(pw_const, 0, 0, 0, a.value->value);
      return p.emit(pw_where, in(1), value, in(0));
    } else if constexpr (std::is_same_v<Op, ToDtype>) {
      return in(0);  // the cast itself is the rounding to the output's storage, emitted by the caller
    } else {
      throw Error(ErrorCode::unsupported, "op " + std::string(Op::id) + " is not pointwise", {.node = n.name});
    }
  });
}

// Whether a program is silu(x) [rounded to a half type] * y of its two inputs: which input is x
// (0 or 1) and the rounding's dtype code (-1: none); nullopt for any other program.
struct SiluMul {
  int x = 0, round = -1;
};
inline std::optional<SiluMul> silu_mul_form(const PwProgram& p, int out) {
  const auto& c = p.code;  // op, dst, a, b, c per instruction; inputs are registers 0 and 1
  const std::size_t n = c.size() / 5;
  if ((n != 2 && n != 3) || c[0] != pw_silu || (c[2] != 0 && c[2] != 1)) return std::nullopt;
  SiluMul r{c[2], -1};
  int s = c[1];
  if (n == 3) {
    if (c[5] != pw_cast || c[7] != s) return std::nullopt;
    r.round = static_cast<int>(p.imm[2]);
    if (r.round != dt_code(DType::f16) && r.round != dt_code(DType::bf16)) return std::nullopt;
    s = c[6];
  }
  const std::size_t m = 5 * (n - 1);
  const int y = 1 - r.x;
  if (c[m] != pw_mul || c[m + 1] != out || !((c[m + 2] == s && c[m + 3] == y) || (c[m + 2] == y && c[m + 3] == s))) return std::nullopt;
  return r;
}

// A clamp bound as the reference applies it to an integer (static_cast<int64_t>), saturated.
inline cl_long integer_bound(const Binder& b, double v) {
  if (std::isnan(v)) b.unsupported("a NaN clamp bound on an integer tensor");
  if (v >= 9223372036854775807.0) return std::numeric_limits<cl_long>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<cl_long>::min();
  return static_cast<cl_long>(v);
}

// A kernel of integer pointwise ops (OpenCLTarget::integer_pointwise; refuse keeps float ones out
// of their chains): each member reads the one before, the first the kernel's input.
inline void bind_integer_pointwise(Binder& b) {
  const Kernel& k = b.k();
  I64 prog{static_cast<std::int64_t>(k.nodes.size())};
  ir::TensorId cur = k.inputs.size() == 1 ? k.inputs[0] : ir::no_tensor;
  for (auto ni : k.nodes) {
    const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
    if (!OpenCLTarget::integer_pointwise(b.g(), n) || n.inputs[0] != cur)
      b.unsupported("an integer pointwise kernel with a member that is not a chained integer relu, neg, abs or clamp (npusim bug): " + n.name);
    cl_long op = 0, lo = std::numeric_limits<cl_long>::min(), hi = std::numeric_limits<cl_long>::max();
    const auto idx = ops::require_op(n);
    if (idx == ops::op_index_v<ops::Neg>) op = 1;
    else if (idx == ops::op_index_v<ops::Abs>) op = 2;
    else if (idx == ops::op_index_v<ops::Clamp>) {
      const auto a = ops::read_attrs<ops::Clamp::Attrs>(n.attrs, n.op_type);
      op = 3;
      if (a.min) lo = integer_bound(b, a.min->value);
      if (a.max) hi = integer_bound(b, a.max->value);
    } else if (idx == ops::op_index_v<ops::ClampMin>) {
      op = 3, lo = integer_bound(b, ops::read_attrs<ops::ClampMin::Attrs>(n.attrs, n.op_type).min.value);
    }
    prog.insert(prog.end(), {op, dt_code(b.g().tensor(n.outputs[0]).dtype), lo, hi});
    cur = n.outputs[0];
  }
  if (cur != b.out()) b.unsupported("an integer pointwise kernel whose chain does not end at its output (npusim bug)");
  b.launch1d(b.program("generic", ocl::cl_source::generic), "pointwise_int", b.numel(cur), 256, b.typed(k.inputs[0]), b.typed(cur), b.desc(prog),
             static_cast<cl_long>(b.numel(cur)));
}

// Binds a kernel whose members are all pointwise (one output of the kernel's output shape).
inline void bind_pointwise(Binder& b) {
  const Kernel& k = b.k();
  if (OpenCLTarget::integer_pointwise(b.g(), b.g().nodes[static_cast<std::size_t>(k.nodes.at(0))])) return bind_integer_pointwise(b);
  const ir::TensorId out = b.out();
  const Shape& os = b.shape(out);
  std::vector<ir::TensorId> ins;
  std::map<ir::TensorId, int> regs;
  PwProgram p;
  for (auto ni : k.nodes)
    for (auto t : b.g().nodes[static_cast<std::size_t>(ni)].inputs)
      if (!regs.count(t) && std::find(k.inputs.begin(), k.inputs.end(), t) != k.inputs.end()) {
        regs[t] = p.regs++;
        ins.push_back(t);
      }
  if (ins.size() > 6) b.unsupported("a pointwise kernel with more than 6 inputs");
  for (auto ni : k.nodes) {
    const ir::Node& n = b.g().nodes[static_cast<std::size_t>(ni)];
    int r = emit_node(p, n, [&](ir::TensorId t) {
      auto it = regs.find(t);
      if (it == regs.end()) b.unsupported("pointwise member reads an unknown value (npusim bug)");
      return it->second;
    });
    // Round to the stored type, as the model does after every op (the output is rounded on store).
    if (n.outputs[0] != out) {
      const DType st = b.storage(n.outputs[0]), irt = b.g().tensor(n.outputs[0]).dtype;
      if (is_half(st)) r = p.emit(pw_cast, r, 0, 0, dt_code(st));
      else if (!is_floating(irt)) r = p.emit(pw_cast, r, 0, 0, dt_code(irt));
    }
    regs[n.outputs[0]] = r;
  }
  if (p.regs > 32) b.unsupported("a pointwise chain longer than the program's 32 registers");
  std::vector<cl_int> prog{static_cast<cl_int>(p.code.size() / 5), regs.at(out)};
  prog.insert(prog.end(), p.code.begin(), p.code.end());
  if (p.imm.empty()) p.imm.push_back(0.0f);
  bool contig = true;
  I64 d{static_cast<std::int64_t>(os.size()), static_cast<std::int64_t>(ins.size()), 0, npusim::numel(os)};
  d.insert(d.end(), os.begin(), os.end());
  for (auto t : ins) {
    Strides st = broadcast_strides(b.shape(t), os);
    contig = contig && b.shape(t) == os;
    d.insert(d.end(), st.begin(), st.end());
  }
  d[2] = contig;
  // An MLP's SiLU*gate (1.1 M values a layer in Qwen2.5-1.5B's prefill): a kernel of its own.
  if (const auto sm = contig && ins.size() == 2 ? silu_mul_form(p, regs.at(out)) : std::nullopt) {
    launch_silu_mul(b, b.typed(ins[static_cast<std::size_t>(sm->x)]), b.typed(ins[static_cast<std::size_t>(1 - sm->x)]), b.typed(out),
                    npusim::numel(os), static_cast<cl_int>(sm->round));
    return;
  }
  std::array<Typed, 6> a;
  for (std::size_t i = 0; i < 6; ++i) a[i] = i < ins.size() ? b.typed(ins[i]) : b.none();
  b.launch1d(b.program("generic", ocl::cl_source::generic), "pointwise", npusim::numel(os), 256, a[0], a[1], a[2], a[3], a[4], a[5], b.typed(out),
             b.desc(d), b.constant(prog.data(), prog.size() * sizeof(cl_int)), b.constant(p.imm.data(), p.imm.size() * sizeof(cl_float)));
}
}  // namespace ocl

// Pointwise: one program per kernel.
template <class Op>
  requires(Op::op_class == ops::OpClass::elementwise && !std::is_same_v<Op, ops::ToDtype>)
struct kernel<Op, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_pointwise(b); }
};

template <class P>
  requires(std::is_same_v<P, fusion::EltwiseChain> || std::is_same_v<P, fusion::AddRelu> || std::is_same_v<P, fusion::SiluGate>)
struct kernel<P, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) { ocl::bind_pointwise(b); }
};

}  // namespace npusim::inline NPUSIM_ABI
