// Definitions for npusim/target/cpu/kernels/pointwise.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/pointwise.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_pointwise(Ctx& c) {
  using namespace pw;
  const ir::TensorId out = c.out();
  const Shape shape = c.shape(out);
  const std::int64_t n = npusim::numel(shape);
  std::vector<Operand> operands;
  std::vector<Member> members;
  std::map<ir::TensorId, int> member_of;  // tensor -> member producing it
  bool vector_ok = is_floating(c.storage(out));
  auto operand_for = [&](ir::TensorId t) -> int {
    for (std::size_t i = 0; i < c.k.inputs.size(); ++i)
      if (c.k.inputs[i] == t && i < operands.size()) return -static_cast<int>(i) - 1;
    throw Error(ErrorCode::runtime, "pointwise kernel reads an unknown tensor (npusim bug)", {.tensor = c.g.tensor(t).name});
  };
  for (ir::TensorId t : c.k.inputs) {
    Operand o;
    o.base = c.ptr(t);
    o.dtype = c.storage(t);
    o.st = broadcast_strides(c.shape(t), shape);
    o.contiguous = c.shape(t) == shape;
    vector_ok = vector_ok && is_floating(o.dtype);
    operands.push_back(std::move(o));
  }
  for (std::size_t mi = 0; mi < c.k.nodes.size(); ++mi) {
    const ir::Node& node = c.node(mi);
    Member m;
    ops::dispatch_op<void>(ops::require_op(node), [&]<class Op>() {
      if constexpr (Op::op_class == ops::OpClass::elementwise) {
        auto at = ops::read_attrs<typename Op::Attrs>(node.attrs, node.op_type);
        m.vec = vec_fn<Op>(at);
        m.scal = scalar_fn<Op>(at);
        if constexpr (requires { at.other; })
          if (node.inputs.size() == 1 && at.other) {
            Operand s;
            s.is_scalar = true;
            s.scalar = at.other->value;
            operands.push_back(s);
            m.args.push_back(0);  // placeholder, fixed below
            m.args.back() = -static_cast<int>(operands.size());
          }
      } else {
        c.unsupported("pointwise kernel given a non-pointwise node " + node.op_type);
      }
    });
    std::vector<int> args;
    for (ir::TensorId t : node.inputs) {
      auto it = member_of.find(t);
      args.push_back(it != member_of.end() ? it->second : operand_for(t));
    }
    args.insert(args.end(), m.args.begin(), m.args.end());  // the scalar operand comes second
    m.args = args;
    m.storage = c.storage(node.outputs[0]);
    m.float_out = is_floating(c.g.tensor(node.outputs[0]).dtype);
    vector_ok = vector_ok && m.vec && m.float_out;
    member_of[node.outputs[0]] = static_cast<int>(mi);
    members.push_back(std::move(m));
  }
  const int last = member_of.at(out);
  std::byte* dst = c.ptr(out);
  const DType out_storage = c.storage(out);
  constexpr std::int64_t BLK = 512;

  if (vector_ok) {
    const std::size_t slots = operands.size() + members.size();
    auto scratch = c.own(std::vector<std::vector<float>>(static_cast<std::size_t>(max_threads()), std::vector<float>(slots * BLK)));
    return [=, operands = std::move(operands), members = std::move(members)] {
      const std::int64_t blocks = (n + BLK - 1) / BLK;
      parallel_for_t(blocks, 64, [&](int tid, std::int64_t b0, std::int64_t b1) {
        float* s = (*scratch)[static_cast<std::size_t>(tid)].data();
        const std::size_t no = operands.size();
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t beg = b * BLK, len = std::min(BLK, n - beg);
          for (std::size_t i = 0; i < no; ++i) gather(operands[i], shape, beg, len, s + i * BLK);
          for (std::size_t mi = 0; mi < members.size(); ++mi) {
            const Member& m = members[mi];
            const float* args[3];
            for (std::size_t a = 0; a < m.args.size(); ++a)
              args[a] = m.args[a] >= 0 ? s + (no + static_cast<std::size_t>(m.args[a])) * BLK : s + static_cast<std::size_t>(-m.args[a] - 1) * BLK;
            float* o = s + (no + mi) * BLK;
            m.vec(args, o, len);
            if (static_cast<int>(mi) != last) round_to_storage(m.storage, o, len);
          }
          store_row(out_storage, s + (no + static_cast<std::size_t>(last)) * BLK, dst + static_cast<std::size_t>(beg) * dtype_size(out_storage), len);
        }
      });
    };
  }
  // Scalar path (integers, bools, comparisons, where, NaN-exact min/max).
  return [=, operands = std::move(operands), members = std::move(members)] {
    const std::size_t r = shape.size();
    std::vector<std::int64_t> idx(r, 0);
    std::vector<double> vals(members.size());
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::size_t mi = 0; mi < members.size(); ++mi) {
        const Member& m = members[mi];
        double a[3];
        for (std::size_t k = 0; k < m.args.size(); ++k) {
          if (m.args[k] >= 0) {
            a[k] = vals[static_cast<std::size_t>(m.args[k])];
          } else {
            const Operand& o = operands[static_cast<std::size_t>(-m.args[k] - 1)];
            std::int64_t off = 0;
            if (!o.is_scalar)
              for (std::size_t d = 0; d < r; ++d) off += idx[d] * o.st[d];
            a[k] = read_scalar(o, off);
          }
        }
        double v = m.scal(a);
        vals[mi] = (m.float_out && is_half(m.storage) && static_cast<int>(mi) != last) ? round_to(m.storage, static_cast<float>(v)) : v;
      }
      visit_dtype(out_storage, [&]<class T>() { reinterpret_cast<T*>(dst)[i] = convert_scalar<T>(vals[static_cast<std::size_t>(last)]); });
      for (std::size_t d = r; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
