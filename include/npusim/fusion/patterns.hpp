// The fusion patterns. Each is a policy (name + match); targets list the ones they implement, in
// priority order, and provide kernel<Pattern, Target>. Matching is structural and reads every
// parameter from attrs (eps, scale, dims); nothing is keyed on tensor names. `summary` is one line
// for generated docs (npusim ops --markdown -> docs/operators.md).
#pragma once

#include "npusim/config.hpp"
#include "npusim/fusion/pattern.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

namespace detail {
// Follows single-use producers backwards through `to.dtype` casts; returns the node index.
std::int32_t skip_cast_back(const GraphView& v, TensorId t, std::vector<std::int32_t>& members);

// K/V expanded for grouped-query attention: reshape(expand(unsqueeze(kv, 2))) from [B, Hkv, S, D]
// to [B, Hkv*G, S, D]. Returns the source tensor and G, adding the three nodes to `members`.
std::optional<std::pair<TensorId, std::int64_t>> gqa_source(const GraphView& v, TensorId t, std::vector<std::int32_t>& members);

// transpose of the last two dims.
bool is_last2_transpose(const GraphView& v, std::int32_t n);

bool is_last_dim(const GraphView& v, std::int64_t dim, TensorId t);
// From conv2d node n: the single-use batch_norm and relu after it, if any, added to m.nodes with
// the has_bn / has_relu params. Returns the last tensor of the chain.
TensorId conv_bn_relu_chain(const GraphView& v, std::int32_t n, Match& m);
}  // namespace detail

// A mixture-of-experts block's experts as transformers' `batched_mm` implementation spells them
// (the form torch.export gives for Mixtral, Qwen2-MoE and OLMoE; docs/moe.md): for each routed
// sample s (a token tok[s] and one of its experts ids[s], weight w[s]),
//   g, u = chunk(gate_up[ids][s] @ x[tok[s]], 2);  o = down[ids][s] @ (silu(g) * u)
//   y = index_add(zeros_like(x), 0, tok, o * w)
// where gate_up[ids] / down[ids] gather whole expert matrices per sample (index_select or
// index.Tensor on dim 0). The kernel reads only the selected experts' rows and never makes those
// copies. Inputs (x, tok, ids, w, gate_up, down): x [T, H], tok/ids/w [S], gate_up [E, 2I, H],
// down [E, H, I]. The router (linear, softmax, topk, renormalisation) stays outside: its ops run
// as they are.
struct Moe {
  static constexpr std::string_view name = "moe";
  static constexpr std::string_view summary =
      "index_add(zeros_like(x), 0, tok, (down[ids] @ (silu(g) * u)) * w), g, u = chunk(gate_up[ids] @ x[tok]): batched_mm experts, only the selected experts computed";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// conv2d [-> batch_norm (not folded)] [-> relu]: one kernel with has_bn / has_relu.
struct ConvBnRelu {
  static constexpr std::string_view name = "conv_bn_relu";
  static constexpr std::string_view summary = "conv2d [-> batch_norm (not folded)] [-> relu]";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// conv2d [-> batch_norm (not folded)] [-> relu] -> max_pool2d: the pool runs on the convolution's
// output rows while they are in cache, so the convolution's output is never stored (ResNet's
// stem: 3.2 MB at f32). Members as conv_bn_relu's, then the pool; params has_bn, has_relu.
struct ConvMaxPool {
  static constexpr std::string_view name = "conv_max_pool";
  static constexpr std::string_view summary = "conv2d [-> batch_norm (not folded)] [-> relu] -> max_pool2d";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// conv2d -> add(., residual) [-> relu]: a residual connection, added in the convolution's
// epilogue. The residual has the conv output's shape (no broadcast). Inputs: the conv's (x,
// weight[, bias]), then the residual. Params: has_relu.
struct ConvAddRelu {
  static constexpr std::string_view name = "conv_add_relu";
  static constexpr std::string_view summary = "conv2d -> add(., residual of the same shape) [-> relu]";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// add(a, b) -> relu
struct AddRelu {
  static constexpr std::string_view name = "add_relu";
  static constexpr std::string_view summary = "add(a, b) -> relu";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// HF RMSNorm: [to f32] -> pow(2) -> mean(-1, keepdim) -> add(eps) -> rsqrt -> mul(x, .) [-> to] -> mul(weight, .)
// Inputs: (x, weight?). Params: eps, has_weight.
struct RmsNorm {
  static constexpr std::string_view name = "rmsnorm";
  static constexpr std::string_view summary = "HF RMSNorm: [to f32] -> pow(2) -> mean(-1) -> add(eps) -> rsqrt -> mul(x, .) [-> to] [-> mul(weight, .)]";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// silu(a) * b
struct SiluGate {
  static constexpr std::string_view name = "silu_gate";
  static constexpr std::string_view summary = "silu(a) * b (the SwiGLU gate)";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// [mul(x, scale)] -> add(., mask) -> softmax(-1) [-> to]: inputs (x, mask). Params scale.
struct MaskedSoftmax {
  static constexpr std::string_view name = "masked_softmax";
  static constexpr std::string_view summary = "[mul(x, scale)] -> add(., mask) -> softmax(-1) [-> to]";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// HF eager attention, GQA included: matmul(q, transpose(K')) [* scale] [+ mask] -> softmax
// [-> to] -> matmul(., V'), where K'/V' are K/V expanded per query group (or K/V themselves).
// Inputs (q, k, v[, mask]) with k, v in [B, Hkv, S, D]. Params scale, group, has_mask.
struct Attention {
  static constexpr std::string_view name = "attention";
  static constexpr std::string_view summary = "matmul(q, kT) [* scale] [+ mask] -> softmax [-> to] -> matmul(., v), GQA expansion of K/V absorbed";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// matmul(a, K') where K' = [transpose of] a GQA expansion of K: the grouped matmul reads K once
// per KV head instead of a materialised repeat. Inputs (a, k). Params group, trans_b.
struct GqaMatmul {
  static constexpr std::string_view name = "gqa_matmul";
  static constexpr std::string_view summary = "matmul(a, K') where K' is [a transpose of] a GQA expansion of K: K read once per KV head";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// matmul(a, transpose(b, -2, -1)) reads b directly (transpose folding). Inputs (a, b).
struct MatmulTransB {
  static constexpr std::string_view name = "matmul_transb";
  static constexpr std::string_view summary = "matmul(a, transpose(b, -2, -1)) reading b directly (transpose folding)";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// x * cos + cat(-x[..., D/2:], x[..., :D/2]) * sin  (HF rotate_half RoPE). Inputs (x, cos, sin).
struct Rotary {
  static constexpr std::string_view name = "rotary";
  static constexpr std::string_view summary = "x * cos + cat(-x[..., D/2:], x[..., :D/2]) * sin (HF rotate_half RoPE)";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// Linears that run as one launch on the OpenCL target (its decode GEMVs, issue 41, which moved them
// here from its executor; and its tensor-core tiles for a prefill, issue 43). "GEMV-sized" means at
// most `gemv_rows` rows of x; linears share a launch only with the same weight dtype and block
// format (a q8_0/q4_0 linear with another in the same format) and the same output dtype.
inline constexpr std::int64_t gemv_rows = 4;
// A folded RMSNorm is reduced again by every work-group of the GEMV: worth it up to this many
// output rows (a 151936-row lm_head keeps its own rmsnorm launch).
inline constexpr std::int64_t folded_norm_rows = 32768;

// linear(x, W[, b]) -> add(., r): the residual added in the product's epilogue. r has the
// result's shape and dtype and is not x. Inputs (x, W[, b], r). Params has_bias.
struct LinearAdd {
  static constexpr std::string_view name = "linear_add";
  static constexpr std::string_view summary = "linear(x, W[, b]) -> add(., residual of the same shape)";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// silu(linear(x, Wg)) * linear(x, Wu), both without bias, any number of rows: one product reading
// both weights (the SwiGLU MLP's gate and up projections). Inputs (x, Wg, Wu).
struct LinearSiluGate {
  static constexpr std::string_view name = "linear_silu_gate";
  static constexpr std::string_view summary = "silu(linear(x, Wg)) * linear(x, Wu): gate and up in one product";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// [RMSNorm ->] up to three linears of one x (q/k/v): one product with an output segment per
// linear. With the RMSNorm (anchored at its pow; GEMV-sized linears only, and it needs a weight,
// float linears, at most folded_norm_rows rows in all, the norm's output read by nothing else and
// stored like its input) the product normalises x itself; without it, two or three linears of any
// number of rows (anchored at the first).
// Inputs (x, [norm weight,] then W[, b] per linear in node order). Params has_norm, eps.
// may_run_early: the projections' views are read before the last projection.
struct LinearGroup {
  static constexpr std::string_view name = "linear_group";
  static constexpr std::string_view summary = "[RMSNorm (GEMV-sized) ->] up to three linears of one input (q/k/v) in one product";
  static constexpr bool may_run_early = true;
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// rotary(q), rotary(k) with one cos/sin -> index_copy(k_cache, 2, pos, k'), index_copy(v_cache, 2,
// pos, v): a decode step's RoPE and KV-cache write. Both caches are graph inputs read by nothing
// else (the planner writes them in place), [B, Hkv, S, D] with k and v [B, Hkv, s, D]; k' is read
// only by its cache write. Anchored at the K cache's index_copy. Inputs (q, cos, sin, k, v, pos,
// k_cache, v_cache).
struct RopeKv {
  static constexpr std::string_view name = "rope_kv";
  static constexpr std::string_view summary = "rotary(q), rotary(k) -> index_copy(k_cache, pos, k'), index_copy(v_cache, pos, v): RoPE and the KV-cache write";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// A linear_group of a token's q, k and v projections (float weights, x one row, the three linears
// in that order) whose outputs reach a rope_kv's q, k and v through views only (each read by the
// next alone): one GEMV that rotates q and k and writes k and v into the caches in its epilogue (a
// decode step's attention inputs in one launch). Heads of D values, D % 4 == 0, cos and sin of D
// values, a cache batch of 1. Inputs: linear_group's, then (cos, sin, pos, k_cache, v_cache);
// params linear_group's and rope_at (where cos is among the inputs).
struct LinearGroupRopeKv {
  static constexpr std::string_view name = "linear_group_rope_kv";
  static constexpr std::string_view summary =
      "[RMSNorm ->] q/k/v linears of one token -> rope_kv: RoPE and the KV-cache write in the projections' epilogue";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// transpose(x, d0, d1) -> rotary (HF's q and k: view(B, L, H, D).transpose(1, 2) then RoPE), the
// transpose a real copy (not a view) read by nothing else and the last dim not moved: the rotary
// reads x through the transposed strides, so the copy is never made. Inputs (x as stored, cos,
// sin). Params dim0, dim1 (normalised).
struct TransposedRotary {
  static constexpr std::string_view name = "transposed_rotary";
  static constexpr std::string_view summary = "transpose(x, d0, d1) -> rotary: RoPE reading x through the transpose's strides";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// attention -> transpose(1, 2) (HF: the heads' outputs back to [B, L, H, D] before o_proj), the
// transpose a real copy and the attention's output read by nothing else: each query row's output is
// written where the transpose would put it. Inputs and params as Attention's.
struct AttentionTransposed {
  static constexpr std::string_view name = "attention_transposed";
  static constexpr std::string_view summary = "attention -> transpose(1, 2): the output written as [B, L, H, D]";
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

// Greedy chains of pointwise ops with one output shape: internal values never leave registers;
// outside operands are read with broadcast strides. Inputs: outside tensors in first-use order.
struct EltwiseChain {
  static constexpr std::string_view name = "eltwise_chain";
  static constexpr std::string_view summary = "a chain of pointwise ops with one output shape (values stay in registers)";
  static bool pointwise(const GraphView& v, std::int32_t n);
  static std::optional<Match> match(const GraphView& v, std::int32_t n);
};

}  // namespace npusim::inline NPUSIM_ABI::fusion

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/fusion/impl/patterns_inl.hpp"
#endif
