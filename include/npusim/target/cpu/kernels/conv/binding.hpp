// What the CPU target's convolution candidates (kernels/conv/*.hpp) decide on and bind from: the
// problem (geometry, storage types, blocked layout) and the binding (the problem plus the context,
// weights, bias, relu and a residual to add in the epilogue).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "npusim/core/tensor.hpp"
#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/conv_block.hpp"
#include "npusim/target/cpu/context.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

// What decides a convolution's candidate (conv_candidates): its geometry, the storage types of
// its input and output, and whether layout.hpp holds them channel-blocked.
struct ConvProblem {
  ConvGeom g;
  DType dx = DType::f32, dy = DType::f32;
  bool blocked_in = false, blocked_out = false;
  std::int64_t Cg() const { return g.C / g.G; }
  std::int64_t Kg() const { return g.K / g.G; }
  std::int64_t M() const { return g.OH * g.OW; }
};

// "3x3 stride 1 pad 1, 64 -> 64 channels, ..." for reasons.
std::string conv_shape(const ConvGeom& g);

// A convolution to bind: y = conv(x, wt) (+ b) (+ residual) (relu). A candidate's bind reads what
// it needs; `residual` is set only when the candidate's fuses_residual said yes (otherwise
// bind_conv adds it in a pass of its own).
struct ConvBinding {
  Ctx& c;
  ConvProblem p;
  const Tensor& wt;
  std::shared_ptr<std::vector<float>> b;  // f32 bias, may be null
  ir::TensorId x, y;
  bool relu = false;
  std::optional<ir::TensorId> residual;
  const std::byte* px = nullptr;
  std::byte* py = nullptr;

  const ConvGeom& g() const { return p.g; }
  std::size_t ex() const { return dtype_size(p.dx); }
  std::size_t ey() const { return dtype_size(p.dy); }
  std::int64_t KK() const { return p.Cg() * p.g.kh * p.g.kw; }

  // The weights of each group packed by `pack(const std::byte* group_weights)`, owned by the context.
  template <class Pack>
  auto pack_groups(Pack pack) const {
    const std::size_t ew = dtype_size(wt.dtype());
    std::vector<std::shared_ptr<decltype(pack(px))>> v;
    for (std::int64_t gi = 0; gi < p.g.G; ++gi)
      v.push_back(c.own(pack(static_cast<const std::byte*>(wt.raw()) + static_cast<std::size_t>(gi * p.Kg() * KK()) * ew)));
    return v;
  }

  // The bound kernel: f(group weights, group input planes, group output rows, group bias) for every
  // image and group.
  template <class Packs, class F>
  Fn each_group(Packs packs, F f) const {
    const ConvGeom g = p.g;
    const std::int64_t Cg = p.Cg(), Kg = p.Kg(), M = p.M();
    const std::size_t ex = this->ex(), ey = this->ey();
    const std::byte* px = this->px;
    std::byte* py = this->py;
    auto b = this->b;
    return [=] {
      for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t gi = 0; gi < g.G; ++gi)
          f(*packs[static_cast<std::size_t>(gi)], px + static_cast<std::size_t>((n * g.C + gi * Cg) * g.H * g.W) * ex,
            py + static_cast<std::size_t>((n * g.K + gi * Kg) * M) * ey, b ? b->data() + gi * Kg : nullptr);
    };
  }
};

// Says a candidate is not in this build when the chooser picked it anyway (its applies declines
// first, so only an npusim bug gets here).
[[noreturn]] inline Fn conv_not_built(const ConvBinding& b, std::string_view name) {
  b.c.unsupported(std::string(name) + " chosen in a build without it (npusim bug)");
}

inline const char* const no_avx512 = "not built with AVX-512 (the compiler's target has no -mavx512f)";
inline const char* const no_avx512_bf16 = "not built with AVX-512 BF16 (the compiler's target has no -mavx512bf16)";

}  // namespace npusim::inline NPUSIM_ABI::cpu
