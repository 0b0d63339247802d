// scaled_dot_product_attention(q, k, v, attn_mask?, dropout_p, is_causal, scale, enable_gqa).
#pragma once

#include <cmath>

#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::ops {

struct ScaledDotProductAttention {
  static constexpr std::string_view id = "sdpa";
  static constexpr std::array aten{"aten.scaled_dot_product_attention.default"sv};
  static constexpr OpClass op_class = OpClass::attention;
  struct Attrs {
    double dropout_p = 0.0;
    bool is_causal = false;
    std::optional<double> scale;
    bool enable_gqa = false;
    template <class V> void visit(V& v) { v("dropout_p", dropout_p), v("is_causal", is_causal), v("scale", scale), v("enable_gqa", enable_gqa); }
    void check() const {
      if (dropout_p != 0.0) throw unsupported_attr("dropout_p", std::to_string(dropout_p), "0.0 (inference)");
    }
  };
  static double effective_scale(const Attrs& a, std::int64_t head_dim) {
    return a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  }
  static Specs infer(const Attrs& a, InSpecs in) {
    expect_arity(in, 3, 4, id);
    const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
    if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
      throw Error(ErrorCode::shape, "sdpa q, k, v must have the same rank >= 2", {.found = to_string(q) + " " + to_string(k) + " " + to_string(v)});
    std::size_t r = q.size();
    if (k[r - 1] != q[r - 1] || v[r - 2] != k[r - 2])
      throw Error(ErrorCode::shape, "sdpa head dims do not match", {.found = to_string(q) + " " + to_string(k) + " " + to_string(v)});
    if (r >= 3 && q[r - 3] != k[r - 3] && !(a.enable_gqa && k[r - 3] > 0 && q[r - 3] % k[r - 3] == 0))
      throw Error(ErrorCode::shape, "sdpa head counts differ (enable_gqa is false)", {.found = to_string(q) + " " + to_string(k)});
    if (in.size() == 4) {
      Shape scores(q.begin(), q.end() - 1);
      scores.push_back(k[r - 2]);
      if (broadcast_shapes(in[3].shape, scores) != scores)
        throw Error(ErrorCode::shape, "sdpa attn_mask does not broadcast to the score shape", {.expected = to_string(scores), .found = to_string(in[3].shape)});
    }
    Shape o = q;
    o.back() = v.back();
    return {{o, in[0].dtype}};
  }
};

}  // namespace npusim::inline NPUSIM_ABI::ops
