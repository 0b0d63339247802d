// Reference kernels: indexing (embedding, index_copy, index_select), attention, creation ops and
// the HF rotary higher-order op.
#pragma once

#include <cmath>

#include "npusim/ops/registry.hpp"
#include "npusim/target/reference/kernels/linalg.hpp"
#include "npusim/target/reference/kernels/common.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace ref {
inline std::int64_t checked_index(std::int64_t i, std::int64_t size, const char* what) {
  std::int64_t r = i < 0 ? i + size : i;
  if (r < 0 || r >= size) throw ops::index_out_of_range(what, i, size);
  return r;
}
}  // namespace ref

template <>
struct kernel<ops::Embedding, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Embedding::Attrs&, ref::Args& args) {
    const Tensor& w = args.x(0);
    const Tensor& idx = args.x(1);
    Tensor& y = args.alloc(0);
    const std::int64_t V = w.shape()[0], D = w.shape()[1];
    const auto es = dtype_size(w.dtype());
    for (std::int64_t i = 0; i < idx.numel(); ++i) {
      std::int64_t r = idx.data<std::int64_t>()[i];
      if (r < 0 || r >= V) throw ops::index_out_of_range("embedding", r, V, false);
      std::memcpy(static_cast<std::byte*>(y.raw()) + static_cast<std::size_t>(i * D) * es,
                  static_cast<const std::byte*>(w.raw()) + static_cast<std::size_t>(r * D) * es, static_cast<std::size_t>(D) * es);
    }
  }
};

template <>
struct kernel<ops::IndexCopy, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::IndexCopy::Attrs& a, ref::Args& args) {
    const Tensor& self = args.x(0);
    const Tensor& idx = args.x(1);
    Tensor src = args.x(2).to(self.dtype());
    Tensor y = self.clone();
    const Shape& s = self.shape();
    if (!s.empty()) {
      auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
      std::int64_t outer = 1, inner = 1;
      for (std::size_t i = 0; i < d; ++i) outer *= s[i];
      for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
      const auto es = dtype_size(self.dtype());
      const std::int64_t n = idx.numel();
      for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t p = ref::checked_index(idx.data<std::int64_t>()[k], s[d], "index_copy");
        for (std::int64_t o = 0; o < outer; ++o)
          std::memcpy(static_cast<std::byte*>(y.raw()) + static_cast<std::size_t>((o * s[d] + p) * inner) * es,
                      static_cast<const std::byte*>(src.raw()) + static_cast<std::size_t>((o * n + k) * inner) * es,
                      static_cast<std::size_t>(inner) * es);
      }
    } else if (idx.numel() > 0) {
      y = src.clone();
    }
    args.out[0] = y;
  }
};

template <>
struct kernel<ops::IndexSelect, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::IndexSelect::Attrs& a, ref::Args& args) {
    const Tensor& x = args.x(0);
    const Tensor& idx = args.x(1);
    Tensor& y = args.alloc(0);
    const Shape& s = x.shape();
    auto d = ref::uidx(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const auto es = dtype_size(x.dtype());
    const std::int64_t n = idx.numel();
    for (std::int64_t k = 0; k < n; ++k) {
      std::int64_t p = ref::checked_index(idx.data<std::int64_t>()[k], s[d], "index_select");
      for (std::int64_t o = 0; o < outer; ++o)
        std::memcpy(static_cast<std::byte*>(y.raw()) + static_cast<std::size_t>((o * n + k) * inner) * es,
                    static_cast<const std::byte*>(x.raw()) + static_cast<std::size_t>((o * s[d] + p) * inner) * es,
                    static_cast<std::size_t>(inner) * es);
    }
  }
};

// softmax(q k^T * scale + mask) v, per (batch..., head); GQA maps query head h to kv head h / (Hq/Hkv).
template <>
struct kernel<ops::ScaledDotProductAttention, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::ScaledDotProductAttention::Attrs& a, ref::Args& args) {
    const Tensor &q = args.x(0), &k = args.x(1), &v = args.x(2);
    Tensor& y = args.alloc(0);
    const std::size_t r = q.rank();
    const std::int64_t L = q.shape()[r - 2], E = q.shape()[r - 1], S = k.shape()[r - 2], Ev = v.shape()[r - 1];
    const std::int64_t Hq = r >= 3 ? q.shape()[r - 3] : 1, Hk = r >= 3 ? k.shape()[r - 3] : 1;
    const std::int64_t B = q.numel() / (Hq * L * E), group = Hq / Hk;
    const double scale = ops::ScaledDotProductAttention::effective_scale(a, E);
    Tensor mask;
    if (args.in.size() == 4) {
      Shape ms(q.shape().begin(), q.shape().end() - 1);
      ms.push_back(S);
      mask = ref::strided_copy(args.x(3), ms, broadcast_strides(args.x(3).shape(), ms));
    }
    std::vector<double> sc(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < Hq; ++h) {
        const float* pq = q.data<float>() + ((b * Hq + h) * L) * E;
        const float* pk = k.data<float>() + ((b * Hk + h / group) * S) * E;
        const float* pv = v.data<float>() + ((b * Hk + h / group) * S) * Ev;
        float* py = y.data<float>() + ((b * Hq + h) * L) * Ev;
        for (std::int64_t i = 0; i < L; ++i) {
          double m = -INFINITY;
          for (std::int64_t j = 0; j < S; ++j) {
            double s = 0;
            for (std::int64_t e = 0; e < E; ++e) s += static_cast<double>(pq[i * E + e]) * pk[j * E + e];
            s *= scale;
            if (a.is_causal && j > i) s = -INFINITY;
            if (mask.defined()) {
              std::int64_t mo = ((b * Hq + h) * L + i) * S + j;
              if (mask.dtype() == DType::boolean) s = mask.data<bool>()[mo] ? s : -INFINITY;
              else s += mask.data<float>()[mo];
            }
            sc[ref::uidx(j)] = s;
            m = std::max(m, s);
          }
          double sum = 0;
          for (std::int64_t j = 0; j < S; ++j) sum += (sc[ref::uidx(j)] = std::exp(sc[ref::uidx(j)] - m));
          for (std::int64_t e = 0; e < Ev; ++e) {
            double o = 0;
            for (std::int64_t j = 0; j < S; ++j) o += sc[ref::uidx(j)] * pv[j * Ev + e];
            py[i * Ev + e] = static_cast<float>(o / sum);
          }
        }
      }
  }
};

namespace ref {
inline void fill(Tensor& t, double v) {
  visit_dtype(t.dtype(), [&]<class T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = convert_scalar<T>(v);
  });
}
}  // namespace ref

template <>
struct kernel<ops::Full, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Full::Attrs& a, ref::Args& args) { ref::fill(args.alloc(0), a.fill_value.value); }
};
template <class Op>
  requires(std::is_same_v<Op, ops::Zeros> || std::is_same_v<Op, ops::Ones>)
struct kernel<Op, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const typename Op::Attrs&, ref::Args& args) { ref::fill(args.alloc(0), Op::value); }
};
template <>
struct kernel<ops::ScalarTensor, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::ScalarTensor::Attrs& a, ref::Args& args) { ref::fill(args.alloc(0), a.s.value); }
};
template <>
struct kernel<ops::Arange, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::Arange::Attrs& a, ref::Args& args) {
    Tensor& y = args.alloc(0);
    visit_dtype(y.dtype(), [&]<class T>() {
      T* p = y.data<T>();
      for (std::int64_t i = 0; i < y.numel(); ++i)
        p[i] = convert_scalar<T>(a.start.value + static_cast<double>(i) * a.step.value);
    });
  }
};

// HF rotary embedding: f = pos * inv_freq in float32; emb = cat(f, f); outputs cos(emb), sin(emb).
template <>
struct kernel<ops::RotaryHop, ReferenceTarget> {
  static constexpr bool provided = true;
  static void run(const ops::RotaryHop::Attrs&, ref::Args& args) {
    const Tensor& inv = args.x(0);
    const Tensor& pos = args.x(1);
    Tensor& c = args.alloc(0);
    Tensor& s = args.alloc(1);
    const std::int64_t half = inv.numel(), D = 2 * half, BS = pos.numel();
    for (std::int64_t t = 0; t < BS; ++t) {
      const float p = static_cast<float>(pos.data<std::int64_t>()[t]);
      for (std::int64_t i = 0; i < half; ++i) {
        const float f = p * inv.data<float>()[i];
        const float cv = std::cos(f), sv = std::sin(f);
        c.data<float>()[t * D + i] = c.data<float>()[t * D + half + i] = cv;
        s.data<float>()[t * D + i] = s.data<float>()[t * D + half + i] = sv;
      }
    }
  }
};

}  // namespace npusim::inline NPUSIM_ABI
