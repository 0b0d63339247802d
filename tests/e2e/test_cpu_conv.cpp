// The CPU target's convolution kernels (f32 pixel blocks, AMX bf16 tiles where the CPU has them,
// im2col + GEMM for f16) against a double-precision convolution, over geometries the fixtures do
// not cover: tails of a 32-pixel block, output-channel counts that fill no strip or tile, strides
// 1, 2 and 3 (element gather), dilation, groups, 1x1 without and with padding. Inputs and weights
// are bf16-representable, so every storage holds them exactly and the only differences left are
// the accumulation order and the output's rounding.
#include <random>

#include "../common/bound_kernel.hpp"
#include "../common/test_util.hpp"
#include "npusim/target/cpu/cpu_target.hpp"

using namespace npusim;

namespace {

struct ConvCase {
  const char* name;
  std::int64_t cin, cout, h, w, k, stride, pad, dil, groups;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

std::vector<float> bf16_exact(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_bits_to_f32(f32_to_bf16_bits(d(rng)));
  return v;
}

class CpuConv : public ::testing::TestWithParam<ConvCase> {};

}  // namespace

TEST_P(CpuConv, MatchesADoublePrecisionConvolution) {
  const ConvCase cc = GetParam();
  const std::int64_t cg = cc.cin / cc.groups, kg = cc.cout / cc.groups;
  const std::int64_t oh = (cc.h + 2 * cc.pad - cc.dil * (cc.k - 1) - 1) / cc.stride + 1, ow = (cc.w + 2 * cc.pad - cc.dil * (cc.k - 1) - 1) / cc.stride + 1;
  const std::vector<float> x = bf16_exact(static_cast<std::size_t>(cc.cin * cc.h * cc.w), 1), wv = bf16_exact(static_cast<std::size_t>(cc.cout * cg * cc.k * cc.k), 2),
                           bias = bf16_exact(static_cast<std::size_t>(cc.cout), 3);
  // The reference, in double.
  std::vector<double> ref(static_cast<std::size_t>(cc.cout * oh * ow));
  for (std::int64_t o = 0; o < cc.cout; ++o) {
    const std::int64_t gi = o / kg;
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t z = 0; z < ow; ++z) {
        double s = bias[static_cast<std::size_t>(o)];
        for (std::int64_t c = 0; c < cg; ++c)
          for (std::int64_t i = 0; i < cc.k; ++i)
            for (std::int64_t j = 0; j < cc.k; ++j) {
              const std::int64_t ih = y * cc.stride - cc.pad + i * cc.dil, iw = z * cc.stride - cc.pad + j * cc.dil;
              if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
              s += static_cast<double>(x[static_cast<std::size_t>(((gi * cg + c) * cc.h + ih) * cc.w + iw)]) *
                   wv[static_cast<std::size_t>(((o * cg + c) * cc.k + i) * cc.k + j)];
            }
        ref[static_cast<std::size_t>((o * oh + y) * ow + z)] = s > 0 ? s : 0.0;  // relu
      }
  }
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dt));
    test::BoundKernel b;
    const ir::TensorId xt = b.add("x", {1, cc.cin, cc.h, cc.w}, dt), yt = b.add("y", {1, cc.cout, oh, ow}, dt);
    cpu::store_row(dt, x.data(), b.ptr(xt), static_cast<std::int64_t>(x.size()));
    Tensor w = Tensor::empty(DType::f32, {cc.cout, cg, cc.k, cc.k});
    std::copy(wv.begin(), wv.end(), w.data<float>());
    ops::Conv2d::Attrs at;
    at.stride = {cc.stride, cc.stride}, at.padding = {cc.pad, cc.pad}, at.dilation = {cc.dil, cc.dil}, at.groups = cc.groups;
    b.bind("conv2d", [&](cpu::Ctx& c) { return cpu::bind_conv(c, xt, w.to(dt), std::make_shared<std::vector<float>>(bias), yt, at, true); });
    b.fn();
    std::vector<float> got(ref.size());
    cpu::load_row(dt, b.ptr(yt), got.data(), static_cast<std::int64_t>(got.size()));
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
    // f32: accumulation order only. bf16/f16: the output's rounding (2^-9 / 2^-12 relative).
    const double tol = dt == DType::f32 ? 1e-6 : dt == DType::bf16 ? 4e-3 : 6e-4;
    EXPECT_LE(std::sqrt(num / den), tol) << "rel L2";
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuConv,
                         ::testing::Values(ConvCase{"k3_s1_p1_c64_tail", 64, 64, 9, 11, 3, 1, 1, 1, 1},     // 99 pixels: a 3-pixel tail
                                           ConvCase{"k3_s1_p1_cout40", 24, 40, 14, 14, 3, 1, 1, 1, 1},     // 40 = 3 strips + 4, a partial tile
                                           ConvCase{"k3_s2_p1", 32, 48, 15, 17, 3, 2, 1, 1, 1},             // stride 2, odd plane
                                           ConvCase{"k7_s2_p3_rgb", 3, 64, 40, 36, 7, 2, 3, 1, 1},         // the stem: K = 147
                                           ConvCase{"k1_s1", 96, 72, 10, 10, 1, 1, 0, 1, 1},                // 1x1 reads planes directly
                                           ConvCase{"k1_s2", 64, 128, 14, 14, 1, 2, 0, 1, 1},               // downsample
                                           ConvCase{"k1_p1", 16, 20, 6, 6, 1, 1, 1, 1, 1},                  // 1x1 with padding
                                           ConvCase{"k3_d2_p2", 20, 36, 12, 12, 3, 1, 2, 2, 1},             // dilation
                                           ConvCase{"k3_s3_p1", 16, 24, 16, 16, 3, 3, 1, 1, 1},             // stride 3: element gather
                                           ConvCase{"k3_g4", 32, 64, 8, 8, 3, 1, 1, 1, 4},                  // groups
                                           ConvCase{"k3_c512_7x7", 512, 512, 7, 7, 3, 1, 1, 1, 1},          // few blocks: one group
                                           ConvCase{"k5_narrow_rows", 8, 16, 20, 3, 5, 1, 2, 1, 1}),        // 3-wide rows: many pieces
                         [](const auto& info) { return std::string(info.param.name); });
