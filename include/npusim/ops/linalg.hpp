// Matrix products: linear (x @ W^T + b), matmul (NumPy broadcasting rules), bmm, mm, addmm.
#pragma once

#include <algorithm>
#include <optional>

#include "npusim/core/quant.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct Linear {
  static constexpr std::string_view id = "linear";
  static constexpr std::array aten{"aten.linear.default"sv};
  static constexpr OpClass op_class = OpClass::matmul;
  // weight_format: npusim's own, never in an export. "" computes with the weight as given; "q8_0"
  // or "q4_0" with the weight quantized to those blocks (core/quant.hpp) when it is bound
  // (`compile --weights-dtype`, docs/quantization.md). Targets that have no such kernel refuse
  // the node (partition::node_support).
  struct Attrs {
    std::string weight_format;
    template <class V> void visit(V& v) { v("weight_format", weight_format); }
    void check() const {
      if (!weight_format.empty() && weight_format != "q8_0" && weight_format != "q4_0")
        throw unsupported_attr("weight_format", weight_format, "\"\", \"q8_0\" or \"q4_0\"");
    }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 3, id);
    expect_rank(in[0], 1, 8, "linear input");
    expect_rank(in[1], 2, 2, "linear weight");
    std::int64_t k = in[0].shape.back();
    if (in[1].shape[1] != k)
      throw Error(ErrorCode::shape, "linear weight does not match the input features",
                  {.expected = "[N, " + std::to_string(k) + "]", .found = to_string(in[1].shape)});
    if (in.size() == 3 && !(in[2].shape == Shape{in[1].shape[0]}))
      throw Error(ErrorCode::shape, "linear bias size", {.expected = "[" + std::to_string(in[1].shape[0]) + "]", .found = to_string(in[2].shape)});
    Shape o = in[0].shape;
    o.back() = in[1].shape[0];
    return {{o, promote_types(in[0], in[1])}};
  }
};

// The block format node n reads its weight (input 1) in: a linear's weight_format; nullopt for a
// float weight and for every other op.
inline std::optional<quant::BlockFormat> weight_block_format(const ir::Node& n) {
  if (n.inputs.size() < 2 || std::find(Linear::aten.begin(), Linear::aten.end(), n.op_type) == Linear::aten.end()) return std::nullopt;
  const ir::AttrValue* f = n.attrs.find("weight_format");
  return f && f->is_string() ? quant::parse_block_format(f->as_string()) : std::nullopt;
}

// matmul shape rules (torch.matmul): 1-D operands get a dim prepended/appended and removed after;
// batch dims broadcast.
struct MatmulShapes {
  Shape batch;  // broadcast batch shape
  std::int64_t m, k, n;
  bool a_vec, b_vec;
  Shape out;
};
inline MatmulShapes matmul_shapes(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) throw Error(ErrorCode::shape, "matmul operands must be at least 1-D");
  MatmulShapes r{};
  r.a_vec = a.size() == 1;
  r.b_vec = b.size() == 1;
  Shape A = r.a_vec ? Shape{1, a[0]} : a, B = r.b_vec ? Shape{b[0], 1} : b;
  r.m = A[A.size() - 2];
  r.k = A.back();
  r.n = B.back();
  if (B[B.size() - 2] != r.k)
    throw Error(ErrorCode::shape, "matmul inner dimensions differ", {.expected = "K = " + std::to_string(r.k), .found = to_string(b)});
  Shape ab(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  r.batch = broadcast_shapes(ab, bb);
  r.out = r.batch;
  if (!r.a_vec) r.out.push_back(r.m);
  if (!r.b_vec) r.out.push_back(r.n);
  return r;
}

struct Matmul {
  static constexpr std::string_view id = "matmul";
  static constexpr std::array aten{"aten.matmul.default"sv, "aten.mm.default"sv, "aten.bmm.default"sv};
  static constexpr OpClass op_class = OpClass::matmul;
  using Attrs = NoAttrs;
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 2, 2, id);
    return {{matmul_shapes(in[0].shape, in[1].shape).out, promote_types(in[0], in[1])}};
  }
};

// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b)
struct Addmm {
  static constexpr std::string_view id = "addmm";
  static constexpr std::array aten{"aten.addmm.default"sv};
  static constexpr OpClass op_class = OpClass::matmul;
  struct Attrs {
    Scalar beta{1.0, true}, alpha{1.0, true};
    template <class V> void visit(V& v) { v("beta", beta), v("alpha", alpha); }
  };
  static Specs infer(const Attrs&, InSpecs in) {
    expect_arity(in, 3, 3, id);
    expect_rank(in[1], 2, 2, "addmm mat1");
    expect_rank(in[2], 2, 2, "addmm mat2");
    MatmulShapes s = matmul_shapes(in[1].shape, in[2].shape);
    broadcast_shapes(in[0].shape, s.out);
    return {{s.out, promote_types(in[1], in[2])}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
