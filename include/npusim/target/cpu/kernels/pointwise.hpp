// Pointwise kernels: every single pointwise op and every pointwise fusion (eltwise_chain,
// add_relu, silu_gate) runs through one engine. The output is processed in blocks of 512
// elements; outside operands are read into float blocks (contiguous runs directly, broadcast ones
// through strides); each member op runs vectorised (xsimd) on the blocks, intermediates rounded to
// their planned storage; the last block is converted to the output storage. Integer/bool
// members take a scalar path that applies the op policy's own `fn`. Bound for every pointwise op and
// for the eltwise_chain, add_relu and silu_gate patterns.
#pragma once

#include <cmath>
#include <map>

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/target/cpu/simd.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

using VecFn = std::function<void(const float* const* args, float* out, std::int64_t n)>;
using ScalarFn = std::function<double(const double* args)>;

namespace pw {

template <class VF, class SF>
VecFn unary(VF vf, SF sf) {
  return [vf, sf](const float* const* a, float* out, std::int64_t n) {
    std::int64_t i = 0;
    for (; i + static_cast<std::int64_t>(W) <= n; i += W) vf(fbatch::load_unaligned(a[0] + i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = sf(a[0][i]);
  };
}
template <class VF, class SF>
VecFn binary(VF vf, SF sf) {
  return [vf, sf](const float* const* a, float* out, std::int64_t n) {
    std::int64_t i = 0;
    for (; i + static_cast<std::int64_t>(W) <= n; i += W) vf(fbatch::load_unaligned(a[0] + i), fbatch::load_unaligned(a[1] + i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = sf(a[0][i], a[1][i]);
  };
}

// The vectorised form of an op, or nullptr when it has none (then the scalar path runs).
template <class Op>
VecFn vec_fn(const typename Op::Attrs& at) {
  using B = fbatch;
  auto s1 = [at](float x) -> float {
    if constexpr (requires { Op::fn(at, x); }) return static_cast<float>(Op::fn(at, x));
    else return (void)at, x;
  };
  if constexpr (std::is_same_v<Op, ops::Relu>) return unary([](B x) { return xsimd::max(x, B(0.f)); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Silu>) return unary([](B x) { return x / (B(1.f) + xsimd::exp(-x)); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Neg>) return unary([](B x) { return -x; }, s1);
  else if constexpr (std::is_same_v<Op, ops::Abs>) return unary([](B x) { return xsimd::abs(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Rsqrt>) return unary([](B x) { return B(1.f) / xsimd::sqrt(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Sqrt>) return unary([](B x) { return xsimd::sqrt(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Reciprocal>) return unary([](B x) { return B(1.f) / x; }, s1);
  else if constexpr (std::is_same_v<Op, ops::Cos>) return unary([](B x) { return xsimd::cos(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Sin>) return unary([](B x) { return xsimd::sin(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Exp>) return unary([](B x) { return xsimd::exp(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Log>) return unary([](B x) { return xsimd::log(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Tanh>) return unary([](B x) { return xsimd::tanh(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Erf>) return unary([](B x) { return xsimd::erf(x); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Sigmoid>) return unary([](B x) { return B(1.f) / (B(1.f) + xsimd::exp(-x)); }, s1);
  else if constexpr (std::is_same_v<Op, ops::Gelu>) {
    if (at.approximate == "tanh")
      return unary([](B x) { return B(0.5f) * x * (B(1.f) + xsimd::tanh(B(0.7978845608028654f) * (x + B(0.044715f) * x * x * x))); }, s1);
    return unary([](B x) { return B(0.5f) * x * (B(1.f) + xsimd::erf(x * B(0.7071067811865476f))); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::Hardtanh>) {
    const float lo = static_cast<float>(at.min_val), hi = static_cast<float>(at.max_val);
    return unary([lo, hi](B x) { return xsimd::min(xsimd::max(x, B(lo)), B(hi)); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::Hardswish>) {
    return unary([](B x) { return x * xsimd::min(xsimd::max(x + B(3.f), B(0.f)), B(6.f)) / B(6.f); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::Hardsigmoid>) {
    return unary([](B x) { return xsimd::min(xsimd::max(x + B(3.f), B(0.f)), B(6.f)) / B(6.f); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::LeakyRelu>) {
    const float s = static_cast<float>(at.negative_slope);
    return unary([s](B x) { return xsimd::select(x > B(0.f), x, x * B(s)); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::Clamp>) {
    const float lo = at.min ? static_cast<float>(at.min->value) : -INFINITY, hi = at.max ? static_cast<float>(at.max->value) : INFINITY;
    return unary([lo, hi](B x) { return xsimd::min(xsimd::max(x, B(lo)), B(hi)); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::ClampMin>) {
    const float lo = static_cast<float>(at.min.value);
    return unary([lo](B x) { return xsimd::max(x, B(lo)); }, s1);
  } else if constexpr (std::is_same_v<Op, ops::PowScalar>) {
    const double e = at.exponent.value;
    if (e == 2.0) return unary([](B x) { return x * x; }, s1);
    if (e == 0.5) return unary([](B x) { return xsimd::sqrt(x); }, s1);
    if (e == -1.0) return unary([](B x) { return B(1.f) / x; }, s1);
    return nullptr;
  } else if constexpr (std::is_same_v<Op, ops::ToDtype>) {
    return unary([](B x) { return x; }, [](float x) { return x; });
  } else if constexpr (std::is_same_v<Op, ops::Add> || std::is_same_v<Op, ops::Sub> || std::is_same_v<Op, ops::Rsub>) {
    const float al = static_cast<float>(at.alpha.value);
    auto sf = [at](float x, float y) { return static_cast<float>(Op::fn(at, x, y)); };
    if constexpr (std::is_same_v<Op, ops::Add>) return binary([al](B x, B y) { return al == 1.f ? x + y : xsimd::fma(B(al), y, x); }, sf);
    else if constexpr (std::is_same_v<Op, ops::Sub>) return binary([al](B x, B y) { return al == 1.f ? x - y : x - B(al) * y; }, sf);
    else return binary([al](B x, B y) { return al == 1.f ? y - x : y - B(al) * x; }, sf);
  } else if constexpr (std::is_same_v<Op, ops::Mul>) {
    return binary([](B x, B y) { return x * y; }, [](float x, float y) { return x * y; });
  } else if constexpr (std::is_same_v<Op, ops::Div>) {
    return binary([](B x, B y) { return x / y; }, [](float x, float y) { return x / y; });
  } else if constexpr (std::is_same_v<Op, ops::Maximum> || std::is_same_v<Op, ops::Minimum>) {
    return nullptr;  // NaN propagation rules: scalar path
  } else {
    (void)at;
    return nullptr;
  }
}

template <class Op>
ScalarFn scalar_fn(const typename Op::Attrs& at) {
  if constexpr (std::is_same_v<Op, ops::Where>) {
    return [](const double* v) { return v[0] != 0.0 ? v[1] : v[2]; };
  } else if constexpr (std::is_same_v<Op, ops::ToDtype> || std::is_same_v<Op, ops::TypeAs>) {
    return [](const double* v) { return v[0]; };
  } else if constexpr (std::is_same_v<Op, ops::MaskedFill>) {
    // masked_fill.Scalar: (self, mask) and the attribute; masked_fill.Tensor: (self, mask, value).
    if (at.value) return [value = at.value->value](const double* v) { return v[1] != 0.0 ? value : v[0]; };
    return [](const double* v) { return v[1] != 0.0 ? v[2] : v[0]; };
  } else if constexpr (Op::arity == 1) {
    return [at](const double* v) {
      if constexpr (Op::integer_ok) return static_cast<double>(Op::fn(at, v[0]));
      else return static_cast<double>(Op::fn(at, static_cast<float>(v[0])));
    };
  } else {
    return [at](const double* v) {
      if constexpr (requires { Op::template fn<double>(at, 0.0, 0.0); }) return static_cast<double>(Op::fn(at, v[0], v[1]));
      else return static_cast<double>(Op::fn(at, static_cast<float>(v[0]), static_cast<float>(v[1])));
    };
  }
}

struct Operand {
  const std::byte* base = nullptr;
  DType dtype = DType::f32;
  Strides st;           // broadcast strides over the output shape
  bool contiguous = false;
  bool is_scalar = false;
  double scalar = 0.0;
};

struct Member {
  VecFn vec;
  ScalarFn scal;
  std::vector<int> args;  // >= 0: member result; < 0: operand -(i + 1)
  DType storage = DType::f32;
  bool float_out = true;
};

// Reads n elements of `o` starting at output index `begin` (over `shape`) into floats.
inline void gather(const Operand& o, const Shape& shape, std::int64_t begin, std::int64_t n, float* dst) {
  if (o.is_scalar) {
    std::fill(dst, dst + n, static_cast<float>(o.scalar));
    return;
  }
  const std::size_t es = dtype_size(o.dtype);
  if (o.contiguous) {
    load_row(o.dtype, o.base + static_cast<std::size_t>(begin) * es, dst, n);
    return;
  }
  const std::size_t r = shape.size();
  std::vector<std::int64_t> idx(r);
  std::int64_t rem = begin, off = 0;
  for (std::size_t d = r; d-- > 0;) idx[d] = rem % shape[d], rem /= shape[d], off += idx[d] * o.st[d];
  const std::int64_t inner = shape.back(), ist = o.st.back();
  std::int64_t done = 0;
  while (done < n) {
    const std::int64_t run = std::min(n - done, inner - idx[r - 1]);
    if (ist == 1) {
      load_row(o.dtype, o.base + static_cast<std::size_t>(off) * es, dst + done, run);
    } else {
      visit_float_storage(o.dtype, [&](auto tag) {
        const auto* p = reinterpret_cast<const typename decltype(tag)::T*>(o.base) + off;
        for (std::int64_t i = 0; i < run; ++i) dst[done + i] = to_f32(tag, p[i * ist]);
      });
    }
    done += run;
    off += run * ist;
    idx[r - 1] += run;
    for (std::size_t d = r - 1; d > 0 && idx[d] == shape[d]; --d) {
      off -= idx[d] * o.st[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += o.st[d - 1];
    }
  }
}

inline double read_scalar(const Operand& o, std::int64_t off) {
  if (o.is_scalar) return o.scalar;
  return visit_dtype(o.dtype, [&]<class T>() -> double { return convert_scalar<double>(reinterpret_cast<const T*>(o.base)[off]); });
}

}  // namespace pw

// Binds any pointwise kernel (one op, or a chain of them).
Fn bind_pointwise(Ctx& c);

}  // namespace npusim::inline NPUSIM_ABI::cpu

// ---- kernel<Op/Pattern, CpuTarget> --------------------------------------------------------------
namespace npusim::inline NPUSIM_ABI {

template <class Op>
  requires(Op::op_class == ops::OpClass::elementwise)
struct kernel<Op, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pointwise(c)}; }
};

template <class P>
  requires(std::is_same_v<P, fusion::EltwiseChain> || std::is_same_v<P, fusion::AddRelu> || std::is_same_v<P, fusion::SiluGate>)
struct kernel<P, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_pointwise(c)}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/pointwise_inl.hpp"
#endif
