// The CPU target's convolution kernels (f32 pixel blocks; bf16 on AMX tiles, else AVX-512 BF16
// dot products, whichever the CPU has; f16 widened to the f32 kernels, or im2col + GEMM) against
// a double-precision convolution, over geometries the fixtures do not cover: tails of a 32-pixel
// block, output-channel counts that fill no strip or tile, strides 1, 2 and 3 (element gather),
// dilation, groups, 1x1 without and with padding, small images with an odd K. Inputs and weights
// are bf16-representable, so every storage holds them exactly and the only differences left are
// the accumulation order and the output's rounding. f32 runs also with channel-blocked inputs and
// outputs (the layout the CPU target keeps between f32 convolutions). Also the channel-blocked
// max pool that follows a blocked convolution (ResNet's stem), against a plain one, a residual
// added in a convolution's epilogue against the unfused pair, and bf16 3x3 convolutions by
// Winograd F(2x2, 3x3).
#include <random>

#include "../common/bound_kernel.hpp"
#include "../common/test_util.hpp"
#include "npusim/cpu.hpp"

using namespace npusim;

namespace {

struct ConvCase {
  const char* name;
  std::int64_t cin, cout, h, w, k, stride, pad, dil, groups;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

using test::bf16_exact;

std::int64_t out_size(const ConvCase& cc, std::int64_t n) { return (n + 2 * cc.pad - cc.dil * (cc.k - 1) - 1) / cc.stride + 1; }

// The convolution in double, NCHW: x [cin, h, w], weights [cout, cin / groups, k, k], bias (or
// empty), then a relu when asked.
std::vector<double> reference_conv(const ConvCase& cc, const std::vector<float>& x, const std::vector<float>& wv, const std::vector<float>& bias, bool relu) {
  const std::int64_t cg = cc.cin / cc.groups, kg = cc.cout / cc.groups, oh = out_size(cc, cc.h), ow = out_size(cc, cc.w);
  std::vector<double> ref(static_cast<std::size_t>(cc.cout * oh * ow));
  for (std::int64_t o = 0; o < cc.cout; ++o) {
    const std::int64_t gi = o / kg;
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t z = 0; z < ow; ++z) {
        double s = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(o)];
        for (std::int64_t c = 0; c < cg; ++c)
          for (std::int64_t i = 0; i < cc.k; ++i)
            for (std::int64_t j = 0; j < cc.k; ++j) {
              const std::int64_t ih = y * cc.stride - cc.pad + i * cc.dil, iw = z * cc.stride - cc.pad + j * cc.dil;
              if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
              s += static_cast<double>(x[static_cast<std::size_t>(((gi * cg + c) * cc.h + ih) * cc.w + iw)]) *
                   wv[static_cast<std::size_t>(((o * cg + c) * cc.k + i) * cc.k + j)];
            }
        ref[static_cast<std::size_t>((o * oh + y) * ow + z)] = relu && s < 0 ? 0.0 : s;
      }
  }
  return ref;
}

// An NCHW image [C, H, W] into / out of a channel-blocked f32 buffer of shape s = {1, C, H, W}.
void store_blocked(const Shape& s, const std::vector<float>& v, float* p) {
  for (std::int64_t c = 0; c < s[1]; ++c)
    for (std::int64_t i = 0; i < s[2] * s[3]; ++i) p[cpu::blocked_index(s, 0, c, i / s[3], i % s[3])] = v[static_cast<std::size_t>(c * s[2] * s[3] + i)];
}
std::vector<float> load_blocked(const Shape& s, const float* p) {
  std::vector<float> v(static_cast<std::size_t>(s[1] * s[2] * s[3]));
  for (std::int64_t c = 0; c < s[1]; ++c)
    for (std::int64_t i = 0; i < s[2] * s[3]; ++i) v[static_cast<std::size_t>(c * s[2] * s[3] + i)] = p[cpu::blocked_index(s, 0, c, i / s[3], i % s[3])];
  return v;
}

double rel_l2(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
  return std::sqrt(num / den);
}

// Whether a bf16 convolution of this geometry runs by Winograd F(2x2, 3x3) (conv_winograd.hpp):
// the candidate the CPU target chooses for it (kernels/conv.hpp).
bool winograd_runs(const ConvCase& cc) {
  const std::int64_t oh = out_size(cc, cc.h), ow = out_size(cc, cc.w);
  const cpu::ConvGeom g{1, cc.cin, cc.h, cc.w, cc.cout, cc.k, cc.k, oh, ow, cc.groups, cc.stride, cc.stride, cc.pad, cc.pad, cc.dil, cc.dil};
  return cpu::is<cpu::ConvWinograd, cpu::conv_candidates>(cpu::choose_conv(cpu::ConvProblem{g, DType::bf16, DType::bf16, false, false}));
}

class CpuConv : public ::testing::TestWithParam<ConvCase> {};

}  // namespace

TEST_P(CpuConv, MatchesADoublePrecisionConvolution) {
  const ConvCase cc = GetParam();
  const std::int64_t cg = cc.cin / cc.groups, oh = out_size(cc, cc.h), ow = out_size(cc, cc.w);
  const std::vector<float> x = bf16_exact(static_cast<std::size_t>(cc.cin * cc.h * cc.w), 1), wv = bf16_exact(static_cast<std::size_t>(cc.cout * cg * cc.k * cc.k), 2),
                           bias = bf16_exact(static_cast<std::size_t>(cc.cout), 3);
  const std::vector<double> ref = reference_conv(cc, x, wv, bias, true);
  // Each storage type in NCHW; f32 also with the input and/or output channel-blocked, where the
  // channel counts allow (the blocked kernel, conv_nchwc.hpp).
  struct Run {
    DType dt;
    bool xb, yb;
  };
  std::vector<Run> runs = {{DType::f32, false, false}, {DType::bf16, false, false}, {DType::f16, false, false}};
  const Shape xs{1, cc.cin, cc.h, cc.w}, ys{1, cc.cout, oh, ow};
#if defined(NPUSIM_CPU_AVX512)
  if (cc.groups == 1) {
    if (cpu::blockable(ys)) runs.push_back({DType::f32, false, true});
    if (cpu::blockable(xs)) runs.push_back({DType::f32, true, false});
    if (cpu::blockable(xs) && cpu::blockable(ys)) runs.push_back({DType::f32, true, true});
  }
#endif
  for (const auto [dt_, xb, yb] : runs) {
    const DType dt = dt_;  // captured below: clang 14 cannot capture a structured binding
    SCOPED_TRACE(std::string(dtype_name(dt)) + (xb ? " x blocked" : "") + (yb ? " y blocked" : ""));
    test::BoundKernel b;
    const ir::TensorId xt = b.add("x", xs, dt), yt = b.add("y", ys, dt);
    b.blocked = {xb, yb};
    if (xb) store_blocked(xs, x, reinterpret_cast<float*>(b.ptr(xt)));
    else cpu::store_row(dt, x.data(), b.ptr(xt), static_cast<std::int64_t>(x.size()));
    Tensor w = Tensor::empty(DType::f32, {cc.cout, cg, cc.k, cc.k});
    std::copy(wv.begin(), wv.end(), w.data<float>());
    ops::Conv2d::Attrs at;
    at.stride = {cc.stride, cc.stride}, at.padding = {cc.pad, cc.pad}, at.dilation = {cc.dil, cc.dil}, at.groups = cc.groups;
    b.bind("conv2d", [&](cpu::Ctx& c) { return cpu::bind_conv(c, xt, w.to(dt), std::make_shared<std::vector<float>>(bias), yt, at, true); });
    b.fn();
    std::vector<float> got(ref.size());
    if (yb) got = load_blocked(ys, reinterpret_cast<const float*>(b.ptr(yt)));
    else cpu::load_row(dt, b.ptr(yt), got.data(), static_cast<std::int64_t>(got.size()));
    // f32: accumulation order only. bf16/f16: the output's rounding (2^-9 / 2^-12 relative), and
    // at bf16 by Winograd F(2x2, 3x3) also that of its transformed inputs and weights.
    const double tol = dt == DType::f32 ? 1e-6 : dt == DType::bf16 ? (winograd_runs(cc) ? 8e-3 : 4e-3) : 6e-4;
    EXPECT_LE(rel_l2(got, ref), tol) << "rel L2";
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
                                           ConvCase{"k3_c3_small_odd_k", 3, 20, 6, 7, 3, 1, 1, 1, 1},       // small image, K = 27: an odd last pair
                                           ConvCase{"k5_narrow_rows", 8, 16, 20, 3, 5, 1, 2, 1, 1},         // 3-wide rows: many pieces
                                           ConvCase{"k3_c5_w37", 5, 32, 6, 37, 3, 1, 1, 1, 1},              // NCHW input of 5 channels: 16-column interleave + tail
                                           ConvCase{"k3_c80_cout200", 80, 200, 5, 9, 3, 1, 1, 1, 1},        // blocked: 4 groups of 64 + 8, 5 blocks in
                                           ConvCase{"k3_s2_d2_blocked", 32, 64, 13, 11, 3, 2, 2, 2, 1},     // blocked: stride and dilation with padding
                                           ConvCase{"k5_p2_blocked_w10", 16, 24, 9, 10, 5, 1, 2, 1, 1},     // blocked: two pixels of a row group outside at once
                                           ConvCase{"k3_p1_blocked_w3", 32, 16, 11, 3, 3, 1, 1, 1, 1}),     // blocked, 3-wide rows: pixel groups span rows
                         [](const auto& info) { return std::string(info.param.name); });

#if defined(NPUSIM_CPU_AVX512)
// The blocked convolution splits its work by the pool size it was bound with, so a pool shrunk
// afterwards (cpu::set_threads) runs the same items on fewer threads within the same scratch. The
// geometry (3 groups of 64 output channels, 24 pixel groups) is one where a split recomputed for
// 3 threads would need more scratch per thread than a 4-thread binding reserved.
TEST(CpuConvBlocked, RunsOnAPoolShrunkAfterBinding) {
  const int before = cpu::pool().size();  // (max_threads() would promise kernels this many)
  try {
    cpu::set_threads(4);
  } catch (const Error&) {
    GTEST_SKIP() << "kernels were already bound for fewer threads in this process";
  }
  const ConvCase cc{"shrunk", 16, 192, 12, 12, 3, 1, 1, 1, 1};
  const std::vector<float> x = bf16_exact(static_cast<std::size_t>(cc.cin * cc.h * cc.w), 4), wv = bf16_exact(static_cast<std::size_t>(cc.cout * cc.cin * 9), 5);
  test::BoundKernel b;
  const Shape xs{1, cc.cin, cc.h, cc.w}, ys{1, cc.cout, cc.h, cc.w};
  const ir::TensorId xt = b.add("x", xs, DType::f32), yt = b.add("y", ys, DType::f32);
  b.blocked = {true, true};
  store_blocked(xs, x, reinterpret_cast<float*>(b.ptr(xt)));
  Tensor w = Tensor::empty(DType::f32, {cc.cout, cc.cin, 3, 3});
  std::copy(wv.begin(), wv.end(), w.data<float>());
  ops::Conv2d::Attrs at;
  at.padding = {1, 1};
  b.bind("conv2d", [&](cpu::Ctx& c) { return cpu::bind_conv(c, xt, w, nullptr, yt, at, false); });
  cpu::set_threads(3);
  b.fn();
  // Back to the size before, but not past the 4 threads the kernel was bound for (the pool
  // refuses to grow beyond what bound programs were planned for: on a 16-core machine `before`
  // is 16).
  cpu::set_threads(std::min(before, 4));
  EXPECT_LE(rel_l2(load_blocked(ys, reinterpret_cast<const float*>(b.ptr(yt))), reference_conv(cc, x, wv, {}, false)), 1e-6) << "rel L2";
}

// parallel_items (how the pixel-block and Winograd convolutions share out their items): the
// initial shares are contiguous ranges in thread order, each thread's total cost within half an
// item of its share at either end (uniform, one heavy item, 24.5 blocks as a 28 x 28 image, zero
// costs, and none at all); a thread that finds its share empty takes the others' items from their
// backs, one at a time, and runs of a thread's own items stop at multiples of `run`; a real
// parallel run hands out every item exactly once.
TEST(CpuParallelItems, SharesBalancedRangesAndHandsOutEveryItemOnce) {
  const std::vector<std::vector<double>> patterns = {std::vector<double>(7, 1.0), {1, 1, 1, 10, 1, 1, 1, 1}, [] {
                                                       std::vector<double> c(50, 2.0);
                                                       c[48] = c[49] = 1.0;
                                                       return c;
                                                     }(),
                                                     {0, 0, 3, 0, 5, 0, 0, 2}, std::vector<double>(5, 0.0), {4.0}};
  for (const int threads : {2, 3, 5}) {
    for (const std::vector<double>& c : patterns) {
      SCOPED_TRACE(testing::Message() << threads << " threads, " << c.size() << " items");
      const auto n = static_cast<std::int64_t>(c.size());
      auto cost = [&](std::int64_t i) { return c[static_cast<std::size_t>(i)]; };
      cpu::ItemShares shares(n, threads, cost);
      double total = 0, biggest = 0;
      for (double x : c) total += x, biggest = std::max(biggest, x);
      std::int64_t next = 0;
      for (int t = 0; t < threads; ++t) {
        const auto [b, e] = shares.left(t);
        EXPECT_EQ(b, next) << "shares out of order";
        next = e;
        double share = 0;
        for (std::int64_t i = b; i < e; ++i) share += c[static_cast<std::size_t>(i)];
        if (total > 0) EXPECT_LE(share, total / threads + biggest) << "an unbalanced share";
        else EXPECT_LE(e - b, (n + threads - 1) / threads) << "unequal counts";
      }
      EXPECT_EQ(next, n);
      // Thread 1 alone (the others never start): its share in runs ending at multiples of 2,
      // then the largest share left, from the back.
      const auto [b1, e1] = shares.left(1);
      std::vector<int> seen(c.size(), 0);
      std::int64_t b, e, expect = b1;
      while (shares.claim(1, b, e, 2)) {
        if (expect < e1) {
          EXPECT_EQ(b, expect) << "own items out of order";
          EXPECT_EQ(e, std::min(e1, (b / 2 + 1) * 2)) << "a run past a multiple of 2";
          expect = e;
        } else {
          EXPECT_EQ(e - b, 1) << "more than one item taken from another share";
        }
        for (std::int64_t i = b; i < e; ++i) ++seen[static_cast<std::size_t>(i)];
      }
      for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "item " << i;
    }
  }
  // On the pool: every item once, whichever thread runs it.
  std::vector<std::atomic<int>> seen(1000);
  cpu::parallel_items(1000, [](std::int64_t i) { return 1.0 + i % 7; }, [&](int, auto& claim) {
    for (std::int64_t i; claim(i);) seen[static_cast<std::size_t>(i)].fetch_add(1);
  });
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].load(), 1) << "item " << i;
}

// The NCHW plane kernel (max_pool_plane: window rows, then window columns) against max_pool2d's
// definition, element by element: strides 1, 2 (the vector paths) and 3 (the gathered one),
// unequal kernel sides, strides and paddings, dilation, ceil_mode, rows of more than 16 outputs,
// and NaN and infinities in the input.
TEST(CpuMaxPoolPlane, MatchesTheDefinition) {
  struct PoolCase {
    std::int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil;
  };
  for (const PoolCase& pc : {PoolCase{112, 112, 3, 3, 2, 2, 1, 1, 1, 1, false}, PoolCase{9, 41, 3, 3, 1, 1, 1, 1, 1, 1, false}, PoolCase{10, 50, 3, 3, 3, 3, 1, 1, 1, 1, true},
                            PoolCase{11, 37, 2, 4, 1, 2, 1, 2, 2, 1, false}, PoolCase{8, 70, 3, 2, 2, 3, 0, 1, 1, 2, true}, PoolCase{7, 5, 3, 3, 2, 1, 1, 1, 1, 2, true}}) {
    SCOPED_TRACE(testing::Message() << pc.h << "x" << pc.w << " k" << pc.kh << "x" << pc.kw << " s" << pc.sh << "x" << pc.sw << " p" << pc.ph << "x" << pc.pw << " d"
                                    << pc.dh << "x" << pc.dw << (pc.ceil ? " ceil" : ""));
    ops::MaxPool2d::Attrs a;
    a.kernel_size = {pc.kh, pc.kw}, a.stride = {pc.sh, pc.sw}, a.padding = {pc.ph, pc.pw}, a.dilation = {pc.dh, pc.dw}, a.ceil_mode = pc.ceil;
    const std::int64_t oh = ops::window_output_size(pc.h, pc.kh, pc.sh, pc.ph, pc.dh, pc.ceil, "test"), ow = ops::window_output_size(pc.w, pc.kw, pc.sw, pc.pw, pc.dw, pc.ceil, "test");
    std::vector<float> x = bf16_exact(static_cast<std::size_t>(pc.h * pc.w), 7);
    for (std::size_t i = 0; i < x.size(); i += 97) x[i] = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i = 13; i < x.size(); i += 89) x[i] = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 29; i < x.size(); i += 151) x[i] = std::numeric_limits<float>::infinity();
    std::vector<float> got(static_cast<std::size_t>(oh * ow), 12345.0f);
    cpu::max_pool_plane(a, x.data(), pc.h, pc.w, got.data(), oh, ow);
    int nans = 0;
    for (std::int64_t r = 0; r < oh; ++r)
      for (std::int64_t c = 0; c < ow; ++c) {
        float want = -std::numeric_limits<float>::infinity();
        for (std::int64_t i = 0; i < pc.kh; ++i)
          for (std::int64_t j = 0; j < pc.kw; ++j) {
            const std::int64_t ih = r * pc.sh - pc.ph + i * pc.dh, iw = c * pc.sw - pc.pw + j * pc.dw;
            if (ih < 0 || ih >= pc.h || iw < 0 || iw >= pc.w) continue;
            const float v = x[static_cast<std::size_t>(ih * pc.w + iw)];
            if (v > want || std::isnan(v)) want = v;
          }
        const float g = got[static_cast<std::size_t>(r * ow + c)];
        nans += std::isnan(want);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(g)) << "output " << r << "," << c;
        else EXPECT_EQ(g, want) << "output " << r << "," << c;
      }
    EXPECT_GT(nans, 0) << "the case has no NaN window";
  }
}

// The channel-blocked max pool against the NCHW plane kernel (max_pool_plane): padding on every side (windows cut at the
// left, right, top and bottom), dilation, ceil_mode (windows running past the end), rows of more
// than 16 outputs at strides 1 and 2 (the plane kernel's vector steps and their masked tails),
// and NaN and infinities in the input (a NaN in the window gives NaN; -inf is an ordinary value).
TEST(CpuMaxPoolBlocked, MatchesAPlainMaxPool) {
  struct PoolCase {
    std::int64_t h, w, k, s, p, d;
    bool ceil;
  };
  for (const PoolCase pc : {PoolCase{13, 11, 3, 2, 1, 1, false}, PoolCase{12, 12, 3, 2, 1, 1, false}, PoolCase{10, 9, 3, 1, 1, 2, false}, PoolCase{7, 8, 2, 2, 0, 1, true},
                            PoolCase{9, 9, 3, 2, 1, 1, true}, PoolCase{6, 37, 3, 2, 1, 1, false}, PoolCase{5, 40, 3, 1, 1, 1, false}}) {
    SCOPED_TRACE(testing::Message() << pc.h << "x" << pc.w << " k" << pc.k << " s" << pc.s << " p" << pc.p << " d" << pc.d << (pc.ceil ? " ceil" : ""));
    ops::MaxPool2d::Attrs a;
    a.kernel_size = {pc.k, pc.k}, a.stride = {pc.s, pc.s}, a.padding = {pc.p, pc.p}, a.dilation = {pc.d, pc.d}, a.ceil_mode = pc.ceil;
    const std::int64_t C = 32, oh = ops::window_output_size(pc.h, pc.k, pc.s, pc.p, pc.d, pc.ceil, "test"), ow = ops::window_output_size(pc.w, pc.k, pc.s, pc.p, pc.d, pc.ceil, "test");
    std::vector<float> x = bf16_exact(static_cast<std::size_t>(C * pc.h * pc.w), 6);
    for (std::size_t i = 0; i < x.size(); i += 97) x[i] = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i = 13; i < x.size(); i += 89) x[i] = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 29; i < x.size(); i += 151) x[i] = std::numeric_limits<float>::infinity();
    std::vector<float> ref(static_cast<std::size_t>(C * oh * ow));  // the NCHW kernel, plane by plane
    for (std::int64_t c = 0; c < C; ++c) cpu::max_pool_plane(a, x.data() + c * pc.h * pc.w, pc.h, pc.w, ref.data() + c * oh * ow, oh, ow);
    const Shape xs{1, C, pc.h, pc.w}, ys{1, C, oh, ow};
    cpu::AlignedBuf xb = cpu::AlignedBuf::make(static_cast<std::size_t>(C * pc.h * pc.w) * 4), yb = cpu::AlignedBuf::make(static_cast<std::size_t>(C * oh * ow) * 4);
    store_blocked(xs, x, xb.as<float>());
    cpu::bind_max_pool_blocked(a, xb.as<float>(), yb.as<float>(), C / cpu::CBLK, pc.h, pc.w, oh, ow)();
    const std::vector<float> got = load_blocked(ys, yb.as<float>());
    int nans = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      nans += std::isnan(ref[i]);
      if (std::isnan(ref[i])) EXPECT_TRUE(std::isnan(got[i])) << "output " << i;
      else EXPECT_EQ(got[i], ref[i]) << "output " << i;
    }
    EXPECT_GT(nans, 0) << "the case has no NaN window";
  }
}
#endif

// conv_max_pool (ResNet's stem followed by its max pool, fused: cpu/kernels_conv_pool.hpp). At
// f32 the fused kernel computes the convolution rows into a ring and pools them, so its output
// must equal the unfused blocked convolution followed by the blocked max pool bit for bit, and
// the double-precision conv + relu + max pool to rounding; f16/bf16 run the two kernels in turn.
// Cases: NCHW and blocked inputs and outputs, output channels that fill no block (NCHW output
// only), more than one K chunk, 3-wide rows, pool dilation (a 5-row ring), ceil_mode, batch 2.
namespace {

struct ConvPoolCase {
  const char* name;
  ConvCase conv;
  std::int64_t k, s, p, d;
  bool ceil;
  std::int64_t batch;
};

std::ostream& operator<<(std::ostream& os, const ConvPoolCase& c) { return os << c.name; }

// max_pool2d in double over an NCHW [C, H, W] image.
std::vector<double> reference_max_pool(const ConvPoolCase& pc, const std::vector<double>& x, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t OH,
                                       std::int64_t OW) {
  std::vector<double> y(static_cast<std::size_t>(C * OH * OW), -std::numeric_limits<double>::infinity());
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow)
        for (std::int64_t i = 0; i < pc.k; ++i)
          for (std::int64_t j = 0; j < pc.k; ++j) {
            const std::int64_t ih = oh * pc.s - pc.p + i * pc.d, iw = ow * pc.s - pc.p + j * pc.d;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double& o = y[static_cast<std::size_t>((c * OH + oh) * OW + ow)];
            o = std::max(o, x[static_cast<std::size_t>((c * H + ih) * W + iw)]);
          }
  return y;
}

class CpuConvMaxPool : public ::testing::TestWithParam<ConvPoolCase> {};

}  // namespace

TEST_P(CpuConvMaxPool, EqualsTheConvolutionThenTheMaxPool) {
  const ConvPoolCase pc = GetParam();
  const ConvCase& cc = pc.conv;
  const std::int64_t N = pc.batch, oh = out_size(cc, cc.h), ow = out_size(cc, cc.w);
  const std::int64_t ph = ops::window_output_size(oh, pc.k, pc.s, pc.p, pc.d, pc.ceil, "test"), pw = ops::window_output_size(ow, pc.k, pc.s, pc.p, pc.d, pc.ceil, "test");
  ops::Conv2d::Attrs at;
  at.stride = {cc.stride, cc.stride}, at.padding = {cc.pad, cc.pad}, at.dilation = {cc.dil, cc.dil};
  ops::MaxPool2d::Attrs pa;
  pa.kernel_size = {pc.k, pc.k}, pa.stride = {pc.s, pc.s}, pa.padding = {pc.p, pc.p}, pa.dilation = {pc.d, pc.d}, pa.ceil_mode = pc.ceil;
  const Shape xs{N, cc.cin, cc.h, cc.w}, ms{N, cc.cout, oh, ow}, ys{N, cc.cout, ph, pw}, x1{1, cc.cin, cc.h, cc.w}, y1{1, cc.cout, ph, pw};
  const std::vector<float> wv = bf16_exact(static_cast<std::size_t>(cc.cout * cc.cin * cc.k * cc.k), 8), bias = bf16_exact(static_cast<std::size_t>(cc.cout), 9);
  std::vector<std::vector<float>> x;  // per image
  std::vector<std::vector<double>> ref;
  for (std::int64_t n = 0; n < N; ++n) {
    x.push_back(bf16_exact(static_cast<std::size_t>(cc.cin * cc.h * cc.w), 10 + static_cast<unsigned>(n)));
    ref.push_back(reference_max_pool(pc, reference_conv(cc, x.back(), wv, bias, true), cc.cout, oh, ow, ph, pw));
  }
  Tensor w = Tensor::empty(DType::f32, {cc.cout, cc.cin, cc.k, cc.k});
  std::copy(wv.begin(), wv.end(), w.data<float>());
  const std::int64_t xn = numel(x1), yn = numel(y1);

  struct Run {
    DType dt;
    bool xb, yb;
  };
  std::vector<Run> runs = {{DType::f32, false, false}, {DType::bf16, false, false}, {DType::f16, false, false}};
#if defined(NPUSIM_CPU_AVX512)
  if (cpu::blockable(ys)) runs.push_back({DType::f32, false, true});
  if (cpu::blockable(xs)) runs.push_back({DType::f32, true, false});
  if (cpu::blockable(xs) && cpu::blockable(ys)) runs.push_back({DType::f32, true, true});
#endif
  for (const auto [dt_, xb, yb] : runs) {
    const DType dt = dt_;  // captured below: clang 14 cannot capture a structured binding
    SCOPED_TRACE(std::string(dtype_name(dt)) + (xb ? " x blocked" : "") + (yb ? " y blocked" : ""));
    test::BoundKernel b;
    const ir::TensorId xt = b.add("x", xs, dt), mt = b.add("mid", ms, dt), yt = b.add("y", ys, dt);
    b.blocked = {xb, false, yb};
    for (std::int64_t n = 0; n < N; ++n) {
      if (xb) store_blocked(x1, x[static_cast<std::size_t>(n)], reinterpret_cast<float*>(b.ptr(xt)) + n * xn);
      else cpu::store_row(dt, x[static_cast<std::size_t>(n)].data(), b.ptr(xt) + static_cast<std::size_t>(n * xn) * dtype_size(dt), xn);
    }
    b.bind("conv_max_pool", [&](cpu::Ctx& c) { return cpu::bind_conv_max_pool(c, xt, w.to(dt), std::make_shared<std::vector<float>>(bias), mt, yt, at, true, pa); });
    b.fn();
    const double tol = dt == DType::f32 ? 1e-6 : dt == DType::bf16 ? 4e-3 : 6e-4;
    for (std::int64_t n = 0; n < N; ++n) {
      std::vector<float> got(static_cast<std::size_t>(yn));
      if (yb) got = load_blocked(y1, reinterpret_cast<const float*>(b.ptr(yt)) + n * yn);
      else cpu::load_row(dt, b.ptr(yt) + static_cast<std::size_t>(n * yn) * dtype_size(dt), got.data(), yn);
      EXPECT_LE(rel_l2(got, ref[static_cast<std::size_t>(n)]), tol) << "image " << n << ": rel L2";
#if defined(NPUSIM_CPU_AVX512)
      // The unfused f32 pair: the blocked convolution into a blocked tensor, then the blocked max pool.
      if (dt != DType::f32 || !cpu::blockable(ms)) continue;
      test::BoundKernel u;
      const Shape m1{1, cc.cout, oh, ow};
      const ir::TensorId ux = u.add("x", x1, DType::f32), um = u.add("mid", m1, DType::f32);
      u.blocked = {false, true};
      cpu::store_row(DType::f32, x[static_cast<std::size_t>(n)].data(), u.ptr(ux), xn);
      u.bind("conv2d", [&](cpu::Ctx& c) { return cpu::bind_conv(c, ux, w, std::make_shared<std::vector<float>>(bias), um, at, true); });
      u.fn();
      cpu::AlignedBuf pooled = cpu::AlignedBuf::make(static_cast<std::size_t>(yn) * 4);
      cpu::bind_max_pool_blocked(pa, reinterpret_cast<const float*>(u.ptr(um)), pooled.as<float>(), cc.cout / cpu::CBLK, oh, ow, ph, pw)();
      const std::vector<float> want = load_blocked(y1, pooled.as<float>());
      std::int64_t differ = 0;
      for (std::size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0) << "image " << n << ": outputs that differ from the unfused kernels'";
#endif
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuConvMaxPool,
    ::testing::Values(ConvPoolCase{"stem", {"", 3, 64, 30, 26, 7, 2, 3, 1, 1}, 3, 2, 1, 1, false, 1},          // ResNet's stem and pool, smaller image
                      ConvPoolCase{"blocked_cout80_ceil", {"", 32, 80, 9, 10, 3, 1, 1, 1, 1}, 2, 2, 0, 1, true, 1},  // two 64-channel groups, windows past the end
                      ConvPoolCase{"cout40_dilated", {"", 16, 40, 12, 11, 3, 1, 1, 1, 1}, 3, 1, 1, 2, false, 1},    // a partial block; a 5-row ring
                      ConvPoolCase{"rows_of_3", {"", 16, 16, 11, 3, 3, 1, 1, 1, 1}, 3, 2, 1, 1, false, 1},         // conv rows of 3 pixels
                      ConvPoolCase{"two_k_chunks", {"", 80, 32, 8, 9, 3, 1, 1, 1, 1}, 3, 2, 1, 1, false, 1},       // 720 K rows: partial sums
                      ConvPoolCase{"batch2_s1", {"", 16, 32, 10, 12, 3, 2, 1, 1, 1}, 2, 1, 0, 1, false, 2}),       // two images, stride-1 pool
    [](const auto& info) { return std::string(info.param.name); });

// bf16 3x3 stride-1 convolutions by Winograd F(2x2, 3x3) (conv_winograd.hpp) against the
// double-precision convolution, over how its tiles go into blocks: one tile row a block (ResNet's
// 56x56), several rows with a partial last block, rows of more than 32 tiles in two segments, an
// odd channel count (a zero partner in the last pair), output channels that fill no strip, an f32
// output, and more than 12 K pairs. The error allowed is twice the direct kernel's: Winograd also
// rounds its transformed inputs and weights to bf16 (about 1.7x the direct error on these).
TEST(CpuConvWinograd, MatchesADoublePrecisionConvolution) {
#if !defined(NPUSIM_CPU_CONV_WINOGRAD)
  GTEST_SKIP() << "no AVX-512 BF16 in this build";
#else
  if (!winograd_runs({"probe", 64, 64, 56, 56, 3, 1, 1, 1, 1})) GTEST_SKIP() << "Winograd not chosen on this CPU (AMX tiles come first, or NPUSIM_CPU_SKIP)";
  struct Case {
    ConvCase cc;
    DType out;
  };
  for (const auto& [cc, ydt] : {Case{{"rows_of_28", 64, 64, 56, 56, 3, 1, 1, 1, 1}, DType::bf16},   // one tile row a block
                                Case{{"rows_of_7", 24, 40, 14, 14, 3, 1, 1, 1, 1}, DType::bf16},    // 4 + 3 tile rows, 40 = 3 strips + 4
                                Case{{"two_segments", 16, 20, 8, 72, 3, 1, 1, 1, 1}, DType::bf16},  // 36 tiles a row: 2 x 18
                                Case{{"odd_c", 3, 12, 10, 12, 3, 1, 1, 1, 1}, DType::bf16},         // 3 channels: a zero partner
                                Case{{"f32_out", 40, 28, 12, 18, 3, 1, 1, 1, 1}, DType::f32},       // 9 tiles a row, f32 output
                                Case{{"c256", 256, 24, 14, 10, 3, 1, 1, 1, 1}, DType::bf16}}) {    // 128 K pairs, 35 tiles
    SCOPED_TRACE(cc.name);
    ASSERT_TRUE(winograd_runs(cc));
    const Shape xs{1, cc.cin, cc.h, cc.w}, ys{1, cc.cout, cc.h, cc.w};
    const std::vector<float> x = bf16_exact(static_cast<std::size_t>(numel(xs)), 31), wv = bf16_exact(static_cast<std::size_t>(cc.cout * cc.cin * 9), 32),
                             bias = bf16_exact(static_cast<std::size_t>(cc.cout), 33);
    const std::vector<double> ref = reference_conv(cc, x, wv, bias, true);
    test::BoundKernel b;
    const ir::TensorId xt = b.add("x", xs, DType::bf16), yt = b.add("y", ys, ydt);
    cpu::store_row(DType::bf16, x.data(), b.ptr(xt), numel(xs));
    Tensor w = Tensor::empty(DType::f32, {cc.cout, cc.cin, 3, 3});
    std::copy(wv.begin(), wv.end(), w.data<float>());
    ops::Conv2d::Attrs at;
    at.padding = {1, 1};
    b.bind("conv2d", [&](cpu::Ctx& c) { return cpu::bind_conv(c, xt, w, std::make_shared<std::vector<float>>(bias), yt, at, true); });
    b.fn();
    std::vector<float> got(ref.size());
    cpu::load_row(ydt, b.ptr(yt), got.data(), numel(ys));
    EXPECT_LE(rel_l2(got, ref), 8e-3) << "rel L2";
    // Every output written, the borders (padding) and each block's last tiles included: none off
    // by a tenth of the outputs' rms (Winograd's error scales with that, not with each output).
    double rms = 0;
    for (double r : ref) rms += r * r;
    rms = std::sqrt(rms / static_cast<double>(ref.size()));
    std::int64_t far = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) far += std::abs(got[i] - ref[i]) > 0.1 * rms;
    EXPECT_EQ(far, 0) << "outputs far from the reference";
  }
#endif
}

// conv_add_relu in NCHW: the convolution with the residual added in its epilogue (the bf16
// dot-product kernel, where it runs) must give the unfused pair's answer bit for bit — the
// convolution's output rounded to its storage, then the residual added, then relu — in every
// storage type, with a block tail and a partial strip (cout 40, 99 pixels), two K chunks, and a
// geometry that runs by Winograd at bf16.
TEST(CpuConvResidual, EqualsTheConvolutionThenTheAdd) {
  for (const ConvCase& cc : {ConvCase{"tail", 24, 40, 9, 11, 3, 1, 1, 1, 1}, ConvCase{"k_chunks", 96, 32, 8, 8, 3, 1, 1, 1, 1}, ConvCase{"k1", 64, 48, 7, 9, 1, 1, 0, 1, 1},
                             ConvCase{"winograd", 24, 40, 12, 14, 3, 1, 1, 1, 1}}) {
    const std::int64_t oh = out_size(cc, cc.h), ow = out_size(cc, cc.w);
    const Shape xs{1, cc.cin, cc.h, cc.w}, ys{1, cc.cout, oh, ow};
    const std::vector<float> x = bf16_exact(static_cast<std::size_t>(numel(xs)), 21), wv = bf16_exact(static_cast<std::size_t>(cc.cout * cc.cin * cc.k * cc.k), 22),
                             bias = bf16_exact(static_cast<std::size_t>(cc.cout), 23), res = bf16_exact(static_cast<std::size_t>(numel(ys)), 24);
    Tensor w = Tensor::empty(DType::f32, {cc.cout, cc.cin, cc.k, cc.k});
    std::copy(wv.begin(), wv.end(), w.data<float>());
    ops::Conv2d::Attrs at;
    at.stride = {cc.stride, cc.stride}, at.padding = {cc.pad, cc.pad}, at.dilation = {cc.dil, cc.dil};
    for (const DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(cc.name) + " " + std::string(dtype_name(dt)));
      // fused: 0 = conv then add (two kernels), 1 = conv with the residual.
      std::vector<float> out[2];
      for (int fused = 0; fused < 2; ++fused) {
        test::BoundKernel b;
        const ir::TensorId xt = b.add("x", xs, dt), yt = b.add("y", ys, dt), rt = b.add("r", ys, dt);
        cpu::store_row(dt, x.data(), b.ptr(xt), numel(xs));
        cpu::store_row(dt, res.data(), b.ptr(rt), numel(ys));
        auto bias_p = std::make_shared<std::vector<float>>(bias);
        b.bind("conv_add_relu", [&](cpu::Ctx& c) -> cpu::Fn {
          if (fused) return cpu::bind_conv(c, xt, w.to(dt), bias_p, yt, at, true, rt);
          cpu::Fn conv = cpu::bind_conv(c, xt, w.to(dt), bias_p, yt, at, false), add = cpu::bind_residual_add(c, yt, rt, true);
          return [=] { conv(), add(); };
        });
        b.fn();
        out[fused].resize(static_cast<std::size_t>(numel(ys)));
        cpu::load_row(dt, b.ptr(yt), out[fused].data(), numel(ys));
      }
      std::int64_t differ = 0, zeros = 0;
      for (std::size_t i = 0; i < out[0].size(); ++i) differ += out[0][i] != out[1][i], zeros += out[1][i] == 0.0f;
      EXPECT_EQ(differ, 0) << "outputs that differ from the unfused pair's";
      EXPECT_GT(zeros, 0) << "relu never applied";
    }
  }
}

// The CPU target's kernel choice (candidates.hpp, kernels/conv.hpp, compute/gemm.hpp): the list is
// walked best first, the generic candidate ends it, every candidate that declines says why, and
// the choice does not depend on the machine where the problem rules a candidate out.
TEST(CpuKernelCandidates, ChoiceWalksTheListBestFirstAndSaysWhyEachDeclines) {
  auto check = [](const cpu::Choice& ch, const std::vector<cpu::CandidateInfo>& list) {
    ASSERT_FALSE(ch.chosen.empty());
    std::size_t i = 0;
    for (; i < list.size() && list[i].name != ch.chosen; ++i) {
      ASSERT_LT(i, ch.declined.size());
      EXPECT_EQ(ch.declined[i].first, list[i].name);
      EXPECT_FALSE(ch.declined[i].second.empty()) << list[i].name << " declined without a reason";
    }
    EXPECT_EQ(ch.declined.size(), i) << "candidates after the chosen one are not reported";
  };
  const auto convs = cpu::candidate_infos<cpu::conv_candidates>(), gemms = cpu::candidate_infos<cpu::gemm_candidates>();
  // Depthwise 3x3 in f32: no blocked layout, so the depthwise kernel, whatever the CPU.
  cpu::Choice ch;
  const cpu::ConvGeom dw{1, 32, 14, 14, 32, 3, 3, 14, 14, 32, 1, 1, 1, 1, 1, 1};
  EXPECT_TRUE((cpu::is<cpu::ConvDepthwise, cpu::conv_candidates>(cpu::choose_conv({dw, DType::f32, DType::f32, false, false}, &ch))));
  EXPECT_EQ(ch.chosen, cpu::ConvDepthwise::name);
  check(ch, convs);
  // A 1x1 convolution on f16 activations: no bf16 kernel, no f32 kernel, not widened (1x1): the
  // generic im2col + GEMM, and each better one says why.
  ch = {};
  const cpu::ConvGeom pw{1, 64, 14, 14, 128, 1, 1, 14, 14, 1, 1, 1, 0, 0, 1, 1};
  EXPECT_TRUE((cpu::is<cpu::ConvIm2colGemm, cpu::conv_candidates>(cpu::choose_conv({pw, DType::f16, DType::f16, false, false}, &ch))));
  check(ch, convs);
  EXPECT_EQ(ch.declined.size(), convs.size() - 1);
  // GEMM: 2 rows of f32 stream the weights (gemm_gemv); 64 rows of f32 take the generic kernel.
  for (const auto& [M, want] : {std::pair<std::int64_t, std::string_view>{2, cpu::GemmGemv::name}, {64, cpu::GemmF32::name}}) {
    ch = {};
    const cpu::GemmProblem p{M, DType::f32, DType::f32, false, false};
    const std::size_t i = cpu::choose<cpu::gemm_candidates>(p, &ch);
    EXPECT_EQ(gemms[i].name, want);
    EXPECT_EQ(ch.chosen, want);
    check(ch, gemms);
  }
}

// A candidate list is checked at compile time: names unique, the last and only the last generic;
// a type without applies is not a candidate.
namespace list_checks {
struct P {};
struct A {
  static constexpr std::string_view name = "a", what = "";
  static constexpr bool generic = false;
  static bool applies(const P&, std::string*) { return false; }
};
struct G {
  static constexpr std::string_view name = "g", what = "";
  static constexpr bool generic = true;
  static bool applies(const P&, std::string*) { return true; }
};
struct A2 : A {};  // the same name as A
struct NoApplies {
  static constexpr std::string_view name = "n", what = "";
  static constexpr bool generic = false;
};
static_assert(cpu::check_candidate_list<P>(meta::list<A, G>{}));
static_assert(!cpu::check_candidate_list<P>(meta::list<A>{}), "no generic last");
static_assert(!cpu::check_candidate_list<P>(meta::list<G, A, G>{}), "a generic before the last");
static_assert(!cpu::check_candidate_list<P>(meta::list<A, A2, G>{}), "a duplicate name");
static_assert(!cpu::Candidate<NoApplies, P>);
static_assert(cpu::Candidate<cpu::ConvWinograd, cpu::ConvProblem> && cpu::Candidate<cpu::GemmAmx, cpu::GemmProblem>);
struct Q {
  int v;
};
struct Even {
  static constexpr std::string_view name = "even", what = "";
  static constexpr bool generic = false;
  static bool applies(const Q& p, std::string* why) { return p.v % 2 == 0 || cpu::decline(why, "odd"); }
};
struct Any {
  static constexpr std::string_view name = "any", what = "";
  static constexpr bool generic = true;
  static bool applies(const Q&, std::string*) { return true; }
};
}  // namespace list_checks

// The chooser runs what it reports: a candidate that declines is passed over, and the generic one
// catches what nothing else takes.
TEST(CpuKernelCandidates, ChooserReturnsTheFirstThatApplies) {
  using namespace list_checks;
  using L = meta::list<Even, Any>;
  cpu::Choice ch;
  EXPECT_EQ(cpu::choose<L>(Q{4}), 0u);
  EXPECT_EQ(cpu::choose<L>(Q{3}, &ch), 1u);
  EXPECT_EQ(ch.chosen, "any");
  ASSERT_EQ(ch.declined.size(), 1u);
  EXPECT_EQ(ch.declined[0].second, "odd");
  EXPECT_EQ((cpu::with_candidate<std::string_view, L>(1, []<class C>() { return C::name; })), "any");
}
