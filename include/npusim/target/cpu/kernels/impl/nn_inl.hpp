// Definitions for npusim/target/cpu/kernels/nn.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/nn.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_rmsnorm(Ctx& c) {
  const ir::TensorId x = c.in(0), y = c.out();
  const bool has_w = c.k.params.find("has_weight")->as_bool();
  const float eps = static_cast<float>(c.k.param("eps"));
  const std::int64_t D = c.shape(y).back(), rows = c.numel(y) / D;
  // The value the weight multiplies is rounded to its stored type (e.g. bf16 after the cast).
  DType pre_w = DType::f32;
  if (has_w) {
    const ir::Node& last = c.g.nodes[static_cast<std::size_t>(c.k.nodes.back())];
    for (auto t : last.inputs)
      if (t != c.in(1)) pre_w = c.storage(t);
  }
  const Tensor* wt = has_w ? c.weight(c.in(1)) : nullptr;
  std::shared_ptr<std::vector<float>> w;
  const std::byte* wp = nullptr;
  DType wd = DType::f32;
  if (wt) w = c.own(std::vector<float>(static_cast<std::size_t>(D))), load_row(wt->dtype(), wt->raw(), w->data(), D);
  else if (has_w) wp = c.ptr(c.in(1)), wd = c.storage(c.in(1));
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  return [=] {
    parallel_for(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
      float* buf = row_buffer(0, D);
      float* wrow = w ? w->data() : nullptr;
      if (has_w && !w) wrow = row_buffer(1, D), load_row(wd, wp, wrow, D);
      for (std::int64_t r = r0; r < r1; ++r) {
        load_row(dx, px + static_cast<std::size_t>(r * D) * dtype_size(dx), buf, D);
        const float inv = 1.0f / std::sqrt(sum_squares(buf, D) / static_cast<float>(D) + eps);
        std::int64_t i = 0;
        for (; i + static_cast<std::int64_t>(W) <= D; i += W) (fbatch::load_unaligned(buf + i) * fbatch(inv)).store_unaligned(buf + i);
        for (; i < D; ++i) buf[i] *= inv;
        if (has_w) {
          round_to_storage(pre_w, buf, D);
          for (i = 0; i + static_cast<std::int64_t>(W) <= D; i += W)
            (fbatch::load_unaligned(buf + i) * fbatch::load_unaligned(wrow + i)).store_unaligned(buf + i);
          for (; i < D; ++i) buf[i] *= wrow[i];
        }
        store_row(dy, buf, py + static_cast<std::size_t>(r * D) * dtype_size(dy), D);
      }
    });
  };
}

NPUSIM_FUNC Fn bind_softmax(Ctx& c, std::int64_t dim, bool log, bool masked) {
  const ir::TensorId x = c.in(0), y = c.out();
  const Shape& s = c.shape(x);
  const std::size_t d = s.empty() ? 0 : static_cast<std::size_t>(normalize_dim(dim, static_cast<std::int64_t>(s.size())));
  std::int64_t outer = 1, inner = 1;
  const std::int64_t len = s.empty() ? 1 : s[d];
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  // Masked form: scale and mask, with the roundings the graph stores between them.
  const float scale = masked ? static_cast<float>(c.k.param("scale", 1.0)) : 1.0f;
  const std::byte* pm = masked ? c.ptr(c.in(1)) : nullptr;
  const DType dm = masked ? c.storage(c.in(1)) : DType::f32;
  Strides mst = masked ? broadcast_strides(c.shape(c.in(1)), s) : Strides{};
  DType mid = DType::f32;  // storage of (x*scale + mask), which the softmax reads
  if (masked) {
    for (auto n : c.k.nodes)
      if (c.g.nodes[static_cast<std::size_t>(n)].op_type.find("softmax") != std::string::npos) mid = c.storage(c.g.nodes[static_cast<std::size_t>(n)].inputs[0]);
  }
  const bool mask_row_contig = masked && mst.back() == 1;
  return [=] {
    parallel_for(outer * inner, 16, [&](std::int64_t r0, std::int64_t r1) {
      float* buf = row_buffer(0, len);
      float* mb = row_buffer(1, len);
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t o = r / inner, in = r % inner;
        const std::int64_t base = o * len * inner + in;
        if (inner == 1) load_row(dx, px + static_cast<std::size_t>(base) * dtype_size(dx), buf, len);
        else
          visit_float_storage(dx, [&](auto tag) {
            const auto* p = reinterpret_cast<const typename decltype(tag)::T*>(px);
            for (std::int64_t k = 0; k < len; ++k) buf[k] = to_f32(tag, p[base + k * inner]);
          });
        if (masked) {
          std::int64_t moff = 0, rem = base;
          Strides cs = contiguous_strides(s);
          for (std::size_t dd = 0; dd < s.size(); ++dd) moff += (rem / cs[dd]) * mst[dd], rem %= cs[dd];
          if (mask_row_contig) load_row(dm, pm + static_cast<std::size_t>(moff) * dtype_size(dm), mb, len);
          else
            visit_float_storage(dm, [&](auto tag) {
              const auto* p = reinterpret_cast<const typename decltype(tag)::T*>(pm);
              for (std::int64_t k = 0; k < len; ++k) mb[k] = to_f32(tag, p[moff + k * mst.back()]);
            });
          if (scale != 1.0f) {
            for (std::int64_t k = 0; k < len; ++k) buf[k] *= scale;
            round_to_storage(dx, buf, len);
          }
          for (std::int64_t k = 0; k < len; ++k) buf[k] += mb[k];
          round_to_storage(mid, buf, len);
        }
        softmax_row(buf, len, log);
        if (inner == 1) store_row(dy, buf, py + static_cast<std::size_t>(base) * dtype_size(dy), len);
        else
          visit_float_storage(dy, [&](auto tag) {
            auto* p = reinterpret_cast<typename decltype(tag)::T*>(py);
            for (std::int64_t k = 0; k < len; ++k) p[base + k * inner] = from_f32(tag, buf[k]);
          });
      }
    });
  };
}

NPUSIM_FUNC Fn bind_layer_norm(Ctx& c, const ops::LayerNorm::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId x = n.inputs[0], y = n.outputs[0];
  const std::int64_t D = numel(Shape(a.normalized_shape.begin(), a.normalized_shape.end())), rows = c.numel(x) / D;
  std::shared_ptr<std::vector<float>> w, b;
  auto param = [&](std::size_t i) {
    auto v = c.own(std::vector<float>(static_cast<std::size_t>(D)));
    if (const Tensor* t = c.weight(n.inputs[i])) load_row(t->dtype(), t->raw(), v->data(), D);
    else load_row(c.storage(n.inputs[i]), c.ptr(n.inputs[i]), v->data(), D);  // read at bind: graph inputs are not supported here
    return v;
  };
  if (n.inputs.size() >= 2) {
    if (!c.weight(n.inputs[1]) || (n.inputs.size() == 3 && !c.weight(n.inputs[2]))) c.unsupported("layer_norm parameters must be weights");
    w = param(1);
    if (n.inputs.size() == 3) b = param(2);
  }
  const float eps = static_cast<float>(a.eps);
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  return [=] {
    parallel_for(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
      float* buf = row_buffer(0, D);
      for (std::int64_t r = r0; r < r1; ++r) {
        load_row(dx, px + static_cast<std::size_t>(r * D) * dtype_size(dx), buf, D);
        double mean = 0, var = 0;
        for (std::int64_t i = 0; i < D; ++i) mean += buf[i];
        mean /= static_cast<double>(D);
        for (std::int64_t i = 0; i < D; ++i) var += (buf[i] - mean) * (buf[i] - mean);
        const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(D) + eps)), mu = static_cast<float>(mean);
        for (std::int64_t i = 0; i < D; ++i) buf[i] = (buf[i] - mu) * inv * (w ? (*w)[static_cast<std::size_t>(i)] : 1.0f) + (b ? (*b)[static_cast<std::size_t>(i)] : 0.0f);
        store_row(dy, buf, py + static_cast<std::size_t>(r * D) * dtype_size(dy), D);
      }
    });
  };
}

NPUSIM_FUNC Fn bind_batch_norm(Ctx& c, const ops::BatchNorm::Attrs& a) {
  const ir::Node& n = c.node();
  const bool affine = n.inputs.size() == 5;
  const Shape& s = c.shape(n.inputs[0]);
  const std::int64_t N = s[0], C = s[1], inner = numel(s) / (N * C);
  auto get = [&](std::size_t i) {
    const Tensor* t = c.weight(n.inputs[i]);
    if (!t) c.unsupported("batch_norm statistics must be weights");
    Tensor f = t->to(DType::f32);
    return std::vector<float>(f.data<float>(), f.data<float>() + C);
  };
  std::vector<float> mean = get(affine ? 3 : 1), var = get(affine ? 4 : 2), gamma = affine ? get(1) : std::vector<float>(C, 1.f),
                     beta = affine ? get(2) : std::vector<float>(C, 0.f);
  auto scale = c.own(std::vector<float>(static_cast<std::size_t>(C))), shift = c.own(std::vector<float>(static_cast<std::size_t>(C)));
  for (std::int64_t i = 0; i < C; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double sc = gamma[k] / std::sqrt(static_cast<double>(var[k]) + a.eps);
    (*scale)[k] = static_cast<float>(sc), (*shift)[k] = static_cast<float>(beta[k] - mean[k] * sc);
  }
  const std::byte* px = c.ptr(n.inputs[0]);
  std::byte* py = c.ptr(n.outputs[0]);
  const DType dx = c.storage(n.inputs[0]), dy = c.storage(n.outputs[0]);
  return [=] {
    parallel_for(N * C, 4, [&](std::int64_t r0, std::int64_t r1) {
      float* buf = row_buffer(0, inner);
      for (std::int64_t r = r0; r < r1; ++r) {
        const auto ch = static_cast<std::size_t>(r % C);
        load_row(dx, px + static_cast<std::size_t>(r * inner) * dtype_size(dx), buf, inner);
        for (std::int64_t i = 0; i < inner; ++i) buf[i] = buf[i] * (*scale)[ch] + (*shift)[ch];
        store_row(dy, buf, py + static_cast<std::size_t>(r * inner) * dtype_size(dy), inner);
      }
    });
  };
}

#if defined(NPUSIM_CPU_AVX512)
NPUSIM_FUNC Fn bind_max_pool_blocked(const ops::MaxPool2d::Attrs& a, const float* x, float* y, std::int64_t blocks, std::int64_t H,
                                     std::int64_t Wd, std::int64_t OH, std::int64_t OW) {
  const BlockedMaxPool mp = BlockedMaxPool::make(a, H, Wd, OH, OW);
  return [=] {
    parallel_for(OH * blocks, 1, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t oh = r / blocks, blk = r % blocks;
        const float* in = x + blk * H * Wd * CBLK;
        float* out = y + (blk * OH + oh) * OW * CBLK;
        mp.row(oh, [&](std::int64_t ih) { return in + ih * Wd * CBLK; }, [&](std::int64_t ow, fbatch v) { v.store_aligned(out + ow * CBLK); });
      }
    });
  };
}
#endif

NPUSIM_FUNC Fn bind_vector_norm(Ctx& c, const ops::LinalgVectorNorm::Attrs& a) {
  const ir::TensorId x = c.node().inputs[0], y = c.node().outputs[0];
  const Shape xs = c.shape(x);
  const std::vector<bool> red = ops::LinalgVectorNorm::reduced(a, xs.size());
  const Strides ost = reduced_out_strides(xs, red);
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dy = c.storage(y);
  const std::int64_t on = c.numel(y);
  const double ord = a.ord.value;
  return [=] {
    const bool inf = std::isinf(ord);
    std::vector<double> acc(static_cast<std::size_t>(on), inf && ord < 0 ? INFINITY : 0.0);
    visit_dtype(dx, [&]<class T>() {
      const T* p = reinterpret_cast<const T*>(px);
      const std::int64_t total = numel(xs);
      std::vector<std::int64_t> idx(xs.size(), 0);
      std::int64_t o = 0;
      for (std::int64_t i = 0; i < total; ++i) {
        const double e = std::fabs(convert_scalar<double>(p[i]));
        double& s = acc[static_cast<std::size_t>(o)];
        if (inf) s = ord > 0 ? std::max(s, e) : std::min(s, e);
        else if (ord == 0) s += e != 0 ? 1.0 : 0.0;
        else if (ord == 1) s += e;
        else if (ord == 2) s += e * e;
        else s += std::pow(e, ord);
        for (std::size_t d = xs.size(); d-- > 0;) {
          o += ost[d];
          if (++idx[d] < xs[d]) break;
          o -= ost[d] * xs[d];
          idx[d] = 0;
        }
      }
    });
    if (!inf && ord != 0 && ord != 1)
      for (double& v : acc) v = ord == 2 ? std::sqrt(v) : std::pow(v, 1.0 / ord);
    visit_dtype(dy, [&]<class T>() {
      for (std::int64_t i = 0; i < on; ++i) reinterpret_cast<T*>(py)[i] = convert_scalar<T>(static_cast<float>(acc[static_cast<std::size_t>(i)]));
    });
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
