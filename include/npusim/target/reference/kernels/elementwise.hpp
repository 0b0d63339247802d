// Reference kernels: pointwise ops. They apply the op policy's own scalar `fn`, so the reference
// is the op definition executed literally, with broadcasting done by strided iteration.
#pragma once

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/common.hpp"
#include "npusim/target/reference/kernels/xt.hpp"

#include <xtensor/xoperation.hpp>

namespace npusim::inline NPUSIM_ABI {

template <class Op>
  requires meta::contains_v<Op, ops::unary_ops>
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x();
    Tensor& y = args.alloc(0);
    const std::int64_t n = x.numel();
    if (x.dtype() == DType::f32) {
      const float* s = x.data<float>();
      float* d = y.data<float>();
      for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(Op::fn(a, s[i]));
    } else if constexpr (Op::integer_ok) {
      Tensor xi = x.to(DType::i64);
      const auto* s = xi.data<std::int64_t>();
      auto* d = y.data<std::int64_t>();
      for (std::int64_t i = 0; i < n; ++i) d[i] = Op::fn(a, s[i]);
    } else {
      throw Error(ErrorCode::dtype, std::string(Op::id) + " needs a floating-point input");
    }
  }
};

namespace ref {
// Result[i] = f(a[bcast i], b[bcast i]) over the output shape.
template <class T, class O, class F>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& y, F&& f) {
  const Shape& os = y.shape();
  std::array<Strides, 3> st{contiguous_strides(os), broadcast_strides(a.shape(), os), broadcast_strides(b.shape(), os)};
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  O* py = y.data<O>();
  strided_for_each<3>(os, st, [&](const std::array<std::int64_t, 3>& o) { py[o[0]] = static_cast<O>(f(pa[o[1]], pb[o[2]])); });
}
}  // namespace ref

template <class Op>
  requires meta::contains_v<Op, ops::binary_ops>
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs& a, ref::Args& args) {
    bool float_math = is_floating(args.out_specs[0].dtype);
    for (const auto& s : args.in_specs) float_math = float_math || is_floating(s.dtype);
    if (args.in.size() == 1 && a.other && !a.other->is_integral) float_math = true;
    const DType ct = float_math ? DType::f32 : DType::i64;
    Tensor A = args.x(0).to(ct);
    Tensor B = args.in.size() == 2 ? args.x(1).to(ct)
                                   : (float_math ? Tensor::scalar<float>(static_cast<float>(a.other->value))
                                                 : Tensor::scalar<std::int64_t>(static_cast<std::int64_t>(a.other->value)));
    Tensor& Y = args.alloc(0);
    visit_dtype(ct, [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::int64_t>) {
        visit_dtype(Y.dtype(), [&]<class O>() {
          if constexpr (std::is_same_v<O, float> || std::is_same_v<O, std::int64_t> || std::is_same_v<O, bool>)
            ref::broadcast_binary<T, O>(A, B, Y, [&](T u, T v) { return Op::fn(a, u, v); });
        });
      }
    });
  }
};

template <>
struct kernel<ops::Where, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Where::Attrs&, ref::Args& args) {
    Tensor& y = args.alloc(0);
    const Tensor a = args.x(1).to(y.dtype()), b = args.x(2).to(y.dtype());
    ref::visit_runtime(y.dtype(), [&]<class T>() {
      auto Y = ref::xt_of<T>(y);
      Y = xt::broadcast(xt::where(ref::xt_of<bool>(args.x(0)), ref::xt_of<T>(a), ref::xt_of<T>(b)), Y.shape());
    });
  }
};

// A cast. Between two float IR dtypes the reference keeps float32 values (the executor rounds to
// the target dtype when asked); other casts convert (float -> int truncates, like torch).
template <>
struct kernel<ops::ToDtype, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::ToDtype::Attrs&, ref::Args& args) {
    DType from = args.in_specs[0].dtype, to = args.out_specs[0].dtype;
    if (from == to) {
      args.alias(0, args.x());
      return;
    }
    DType rt = ref::runtime_dtype(to);
    args.out[0] = args.x().dtype() == rt ? args.x().clone() : args.x().to(rt);
  }
};

}  // namespace npusim::inline NPUSIM_ABI

namespace npusim::inline NPUSIM_ABI::ref {
// The kernel calls of the pointwise ops (ops::unary_ops then ops::binary_ops; `i` indexes that
// list, the first ops of ops::all_ops): make_node_fn's first half, compiled in a file of its own.
NodeFn make_pointwise_node_fn(std::size_t i, const ir::Node& n);
}  // namespace npusim::inline NPUSIM_ABI::ref

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/reference/kernels/impl/elementwise_inl.hpp"
#endif
