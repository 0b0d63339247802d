// Attention kernels of the OpenCL target (sdpa and the attention pattern): one work-group per
// query row and key split, online softmax, grouped-query heads by index, masked keys skipped; the
// last split of a row to finish merges the row's splits.
#pragma once

#include "npusim/fusion/patterns.hpp"
#include "npusim/target/kernel.hpp"
#include "npusim/target/opencl/binder.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"

namespace npusim::inline NPUSIM_ABI {

struct OpenCLTarget;

namespace ocl {
// q [B, Hq, L, D], k/v [B, Hkv, S, D], mask broadcast to [B, Hq, L, S] -> out [B, Hq, L, Dv], or
// [B, L, Hq, Dv] with out_transposed (fusion::AttentionTransposed).
inline void bind_attention(Binder& b, ir::TensorId q, ir::TensorId k, ir::TensorId v, std::optional<ir::TensorId> mask, ir::TensorId out,
                           double scale, bool causal, bool out_transposed = false) {
  Shape qs = b.shape(q), ks = b.shape(k), vs = b.shape(v);
  if (qs.size() == 3) qs.insert(qs.begin(), 1), ks.insert(ks.begin(), 1), vs.insert(vs.begin(), 1);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) b.unsupported("attention on tensors that are not rank 3 or 4");
  const std::int64_t B = qs[0], Hq = qs[1], L = qs[2], D = qs[3], S = ks[2], Dv = vs[3], Hkv = ks[1];
  if (Hkv == 0 || Hq % Hkv || D > 256 || Dv > 256) b.unsupported("attention with head dim > 256 or query heads not a multiple of KV heads");
  const Shape want = out_transposed ? Shape{B, L, Hq, Dv} : Shape{B, Hq, L, Dv};
  if (npusim::numel(b.shape(out)) != npusim::numel(want) || (b.shape(out).size() == 4 && b.shape(out) != want))
    b.unsupported("attention output of shape " + to_string(b.shape(out)) + ", expected " + to_string(want) + " (npusim bug)");
  I64 d{B, Hq, L, S, D, Dv, Hq / Hkv, 0, 0, 0, 0, out_transposed ? 1 : 0};
  int mask_kind = 0;
  if (mask) {
    Shape full{B, Hq, L, S};
    Shape ms = b.shape(*mask);
    while (ms.size() < 4) ms.insert(ms.begin(), 1);
    Strides st = broadcast_strides(ms, full);
    d[7] = st[0], d[8] = st[1], d[9] = st[2], d[10] = st[3];
    mask_kind = b.storage(*mask) == DType::boolean ? 2 : 1;
  }
  const bool vec = D % 8 == 0 && b.ref(k).off % 32 == 0 && dtype_size(b.storage(k)) >= 2;
  // Decode (few query rows) over half-type K/V with heads of 32-128 values in aligned rows:
  // attention_dec, a team of D / 8 items per key.
  const std::int64_t team = D / 8;
  const bool dec = B * Hq * L < 256 && D == Dv && D % 8 == 0 && team >= 4 && team <= 16 && (team & (team - 1)) == 0 &&
                   (b.storage(k) == DType::bf16 || b.storage(k) == DType::f16) && b.ref(k).off % 16 == 0 && b.ref(v).off % 16 == 0 &&
                   b.ref(q).off % 16 == 0 &&
                   (b.storage(q) == DType::f32 || b.storage(q) == DType::f16 || b.storage(q) == DType::bf16);
  if (b.storage(k) != b.storage(v)) b.unsupported("attention with K and V stored in different types");
  // Few query rows (decode): split the keys over work-groups and merge the splits after. At most
  // 32 splits, so a long cache does not multiply the work-groups: a 32k cache has as many as a
  // 2k one, and within a split only the keys up to the last unmasked one are read.
  const std::int64_t rows = B * Hq * L;
  const std::int64_t max_splits = dec ? 64 : 32;
  const std::int64_t chunk = rows < 256 ? std::max<std::int64_t>(64, (S + max_splits - 1) / max_splits) : std::max<std::int64_t>(S, 1),
                     nsplit = (S + chunk - 1) / chunk;
  // With splits, each row's last split to finish merges them: `part` holds the splits' partial
  // results, `counts` one zeroed counter per row (the merging work-group zeroes it again).
  // Without splits the merge is not compiled (AT_SPLIT=0): PoCL pays seconds to generate it.
  cl_program p = b.program("attention", ocl::cl_source::attention,
                           Binder::type_options({{"TK", b.storage(k)}}) + (nsplit > 1 ? " -DAT_SPLIT=1" : " -DAT_SPLIT=0"));
  cl_mem part = b.none().r.mem, counts = b.none().r.mem;
  if (nsplit > 1) {
    part = b.scratch(static_cast<std::size_t>(rows * nsplit * (Dv + 2)) * sizeof(float));
    counts = b.zeroed(static_cast<std::size_t>(rows) * sizeof(cl_int));
  }
  b.launch(p, dec ? "attention_dec" : "attention", {static_cast<std::size_t>(rows * nsplit) * 128, 1, 1}, {128, 1, 1}, 1, b.typed(q), b.ptr(k),
           b.ptr(v), mask ? b.typed(*mask) : b.none(), static_cast<cl_int>(mask_kind), b.typed(out), b.desc(d), static_cast<cl_float>(scale), causal,
           static_cast<cl_int>(dec ? team : vec), static_cast<cl_int>(nsplit), static_cast<cl_long>(chunk), part, counts);
}
}  // namespace ocl

template <>
struct kernel<ops::ScaledDotProductAttention, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    auto a = b.attrs<ops::ScaledDotProductAttention>();
    const auto& in = b.node().inputs;
    const double scale = ops::ScaledDotProductAttention::effective_scale(a, b.shape(in[0]).back());
    ocl::bind_attention(b, in[0], in[1], in[2], in.size() > 3 ? std::optional(in[3]) : std::nullopt, b.out(), scale, a.is_causal);
  }
};

// attention -> transpose(1, 2) (fusion::AttentionTransposed): each query row's output written at its
// [B, L, H] place.
template <>
struct kernel<fusion::AttentionTransposed, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    ocl::bind_attention(b, b.in(0), b.in(1), b.in(2), k.inputs.size() > 3 ? std::optional(b.in(3)) : std::nullopt, b.out(), k.param("scale", 1.0), false,
                        true);
  }
};

template <>
struct kernel<fusion::Attention, OpenCLTarget> {
  static constexpr bool provided = true;
  static void bind(ocl::Binder& b) {
    const Kernel& k = b.k();
    ocl::bind_attention(b, b.in(0), b.in(1), b.in(2), k.inputs.size() > 3 ? std::optional(b.in(3)) : std::nullopt,
                        b.out(), k.param("scale", 1.0), false);
  }
};

}  // namespace npusim::inline NPUSIM_ABI
