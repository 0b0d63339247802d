// The OpenCL target's matrix kernels bound directly (ocl::bind_gemm, as the executor binds a linear
// or matmul kernel), against a double-precision product: shapes that fill no tile (M, N, K not
// multiples of 8, 16, 32, 64 or 128), a K long enough for many slices and for split-K, a K shorter
// than the pipeline, batches with broadcast and with grouped heads, B as W rows (linear) and as K
// rows (matmul), aligned rows (the tensor-core kernels' cp.async staging) and unaligned ones,
// and the epilogue (bias, residual, ReLU, a half output). Operands are bf16/f16-exact, so products
// are exact and only the f32 accumulation order differs. Outputs are poisoned first: every element
// must be written. Which kernels run depends on the device: the FP32 tiles on PoCL, the tensor
// cores on NVIDIA (compute capability >= 8.0), the emulated tensor-core kernels with
// NPUSIM_OPENCL_MMA=emulate (ctest opencl.mma_emulated) - the same expectations hold for all three.
#include <cmath>
#include <random>

#include "../common/opencl_buffers.hpp"
#include "../common/test_util.hpp"
#include "npusim/target/opencl/kernels/linalg.hpp"
#include "npusim/target/opencl/mma.hpp"
#include "npusim/target/opencl/opencl_target.hpp"

using namespace npusim;

namespace {

using Buffers = test::OpenCLBuffers;

// Values exactly representable in dt (bf16-exact values are f16-exact in [-1, 1) too).
std::vector<float> values(std::size_t n, unsigned seed) { return test::bf16_exact(n, seed); }

struct Case {
  std::int64_t M, N, K;
  DType dt;
  bool trans_b;            // B given as W[N, K] (linear) rather than [K, N]
  std::int64_t nb0 = 1, nb1 = 1, group = 1;  // batches: [nb0, nb1], B's second batch dim divided by group
  std::size_t pad_a = 0;   // NaN elements before A (unaligned rows when odd)
  bool epilogue = false;   // bias per column, residual, ReLU, output in dt
};

double rel_l2_of(const Case& c) {
  Buffers t;
  const std::int64_t M = c.M, N = c.N, K = c.K, nb = c.nb0 * c.nb1, nbb = c.nb0 * (c.nb1 / c.group);
  const std::vector<float> a = values(static_cast<std::size_t>(nb * M * K), 11), bm = values(static_cast<std::size_t>(nbb * K * N), 12),
                           bias = values(static_cast<std::size_t>(N), 13), res = values(static_cast<std::size_t>(nb * M * N), 14);
  ocl::Gemm g;
  g.a = t.upload(a, c.dt, c.pad_a), g.b = t.upload(bm, c.dt);
  const DType out_t = c.epilogue ? c.dt : DType::f32;
  g.c = t.upload(std::vector<float>(static_cast<std::size_t>(nb * M * N), std::nanf("")), out_t);
  g.M = M, g.N = N, g.K = K;
  g.sam = K, g.sak = 1, g.scm = N, g.scn = 1;
  if (c.trans_b) g.sbk = 1, g.sbn = K;
  else g.sbk = N, g.sbn = 1;
  g.nb0 = c.nb0, g.nb1 = c.nb1, g.sa0 = c.nb1 * M * K, g.sa1 = M * K, g.sc0 = c.nb1 * M * N, g.sc1 = M * N;
  g.sb0 = (c.nb1 / c.group) * K * N, g.sb1 = K * N, g.bdiv = c.group;
  if (c.epilogue) g.bias = t.upload(bias, c.dt), g.residual = t.upload(res, c.dt), g.relu = true;
  ocl::bind_gemm(t.b, g);
  t.run();
  const std::vector<float> got = t.download(g.c, static_cast<std::size_t>(nb * M * N));
  double num = 0, den = 0;
  for (std::int64_t z0 = 0; z0 < c.nb0; ++z0)
    for (std::int64_t z1 = 0; z1 < c.nb1; ++z1) {
      const std::int64_t z = z0 * c.nb1 + z1, zb = z0 * (c.nb1 / c.group) + z1 / c.group;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double s = 0;
          for (std::int64_t k = 0; k < K; ++k) {
            const double bv = c.trans_b ? bm[static_cast<std::size_t>(zb * K * N + n * K + k)] : bm[static_cast<std::size_t>(zb * K * N + k * N + n)];
            s += static_cast<double>(a[static_cast<std::size_t>(z * M * K + m * K + k)]) * bv;
          }
          const std::size_t o = static_cast<std::size_t>(z * M * N + m * N + n);
          if (c.epilogue) s = std::max(s + bias[static_cast<std::size_t>(n)] + res[o], 0.0);
          const double v = got[o];
          if (!std::isfinite(v)) {
            ADD_FAILURE() << "output (" << z << ", " << m << ", " << n << ") not written: " << v;
            return 1.0;
          }
          num += (v - s) * (v - s), den += s * s;
        }
    }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace

TEST(OpenCLGemm, MatrixKernelsMatchADoublePrecisionProduct) {
  std::printf("matrix kernels on %s: %s\n", ocl::open_device()->info().name.c_str(), ocl::mma_support(*ocl::open_device()).why.c_str());
  const Case cases[] = {
      {77, 201, 333, DType::bf16, true},              // linear, tails everywhere, K % 8 != 0
      {128, 256, 512, DType::bf16, true},             // full tiles, 16-byte rows
      {65, 136, 72, DType::bf16, true},               // 16-byte rows (cp.async staging), tails: zero-filled chunks
      {16, 16, 16, DType::bf16, true},                // one K slice: fewer than the stages in flight
      {16, 16, 4096, DType::bf16, true},              // few tiles, long K: split-K
      {37, 72, 264, DType::f16, false},               // B as K rows (matmul), aligned
      {5, 40, 99, DType::f16, false},                 // few rows, K % 8 != 0, N % 8 == 0
      {64, 24, 160, DType::bf16, true, 1, 1, 1, 3},   // A rows unaligned (3 elements of padding)
      {50, 60, 70, DType::bf16, false, 2, 6, 3},      // batched, grouped heads (6 query heads on 2 KV heads)
      {9, 130, 48, DType::f16, true, 1, 1, 1, 0, true},  // epilogue: bias, residual, ReLU, f16 output
      {140, 33, 200, DType::bf16, false, 1, 1, 1, 0, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "M " << c.M << " N " << c.N << " K " << c.K << " " << dtype_name(c.dt) << (c.trans_b ? " W rows" : " K rows")
                                    << " batches " << c.nb0 << "x" << c.nb1 << "/" << c.group << " pad " << c.pad_a << (c.epilogue ? " epilogue" : ""));
    // f32 accumulation of exact products; a half output adds its own rounding.
    EXPECT_LE(rel_l2_of(c), c.epilogue ? 8e-3 : 2e-5);
  }
}

// Grouped products (issue 43): a linear_group's segments (q/k/v: one x, several weights, each its
// output and bias) and a linear_silu_gate's gate (silu(x Wg^T) * (x Wu^T)), as a prefill binds them
// (more rows than a GEMV takes). The tensor cores (and their emulation) run each in one launch
// where every segment but the last is whole tiles (-DM_SEG, -DM_GATE), else the products apart,
// as the FP32 tiles always do; the values must be the same either way.
namespace {
struct GroupedCase {
  std::int64_t M, K;
  std::vector<std::int64_t> N;  // one per segment; a gate when `gate`
  std::vector<bool> bias;
  bool gate = false;
  DType out = DType::f32;
  std::size_t fused_launches = 0;  // launches on the tensor cores (0: not checked)
};
double grouped_rel_l2(const GroupedCase& c, bool mma) {
  Buffers t;
  const std::int64_t M = c.M, K = c.K;
  const std::vector<float> a = values(static_cast<std::size_t>(M * K), 21);
  std::vector<std::vector<float>> w, bias, want;
  ocl::Gemm g;
  const std::size_t nw = c.gate ? 2 : c.N.size();
  for (std::size_t s = 0; s < nw; ++s) {
    const std::int64_t N = c.gate ? c.N[0] : c.N[s];
    w.push_back(values(static_cast<std::size_t>(N * K), 30 + static_cast<unsigned>(s)));
    bias.push_back(s < c.bias.size() && c.bias[s] ? values(static_cast<std::size_t>(N), 40 + static_cast<unsigned>(s)) : std::vector<float>{});
  }
  auto product = [&](std::size_t s, std::int64_t m, std::int64_t n) {
    double v = bias[s].empty() ? 0.0 : bias[s][static_cast<std::size_t>(n)];
    for (std::int64_t k = 0; k < K; ++k) v += static_cast<double>(a[static_cast<std::size_t>(m * K + k)]) * w[s][static_cast<std::size_t>(n * K + k)];
    return v;
  };
  std::vector<ocl::TensorRef> outs;
  for (std::size_t s = 0; s < (c.gate ? 1 : nw); ++s) {
    const std::int64_t N = c.N[s];
    outs.push_back(t.upload(std::vector<float>(static_cast<std::size_t>(M * N), std::nanf("")), c.out));
    want.emplace_back();
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        const double v = product(s, m, n);
        want[s].push_back(static_cast<float>(c.gate ? v / (1.0 + std::exp(-v)) * product(1, m, n) : v));
      }
    if (s == 0) {
      g = ocl::linear_layout({M, K}, {N, K});
      g.a = t.upload(a, DType::bf16), g.b = t.upload(w[0], DType::bf16), g.c = outs[0];
      if (!bias[0].empty()) g.bias = t.upload(bias[0], DType::bf16);
    } else {
      g.more.push_back({t.upload(w[s], DType::bf16), bias[s].empty() ? std::nullopt : std::optional(t.upload(bias[s], DType::bf16)), outs[s], N});
    }
  }
  if (c.gate) g.up = t.upload(w[1], DType::bf16);
  ocl::bind_gemm(t.b, g);
  if (mma && c.fused_launches) {
    EXPECT_EQ(t.launches.size(), c.fused_launches) << "one launch for the grouped product";
  }
  t.run();
  double num = 0, den = 0;
  for (std::size_t s = 0; s < outs.size(); ++s) {
    const std::vector<float> got = t.download(outs[s], want[s].size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) {
        ADD_FAILURE() << "segment " << s << " element " << i << " not written: " << got[i];
        return 1.0;
      }
      num += (got[i] - want[s][i]) * (got[i] - want[s][i]), den += static_cast<double>(want[s][i]) * want[s][i];
    }
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
}  // namespace

TEST(OpenCLGemm, GroupedProductsMatchADoublePrecisionProduct) {
  const bool mma = ocl::mma_support(*ocl::open_device()).ok;
  const GroupedCase cases[] = {
      {40, 96, {128, 256, 72}, {true, false, true}, false, DType::f32, 1},  // q/k/v-like: whole tiles, a partial last one
      {130, 64, {256, 128}, {false, true}, false, DType::bf16, 1},          // two segments, rows past a tile, bf16 out
      {24, 80, {100, 60}, {true, true}, false, DType::f32, 0},              // segment 0 not whole tiles: apart
      {16, 2048, {128, 128, 64}, {true, false, true}, false, DType::f32, 2}, // few tiles, long K: split-K, gemm_reduce_seg
      {40, 96, {200}, {}, true, DType::f32, 1},                             // gate: columns past a tile
      {130, 64, {136}, {}, true, DType::bf16, 1},                           // gate, bf16 rounding of gate, silu and up
      {16, 72, {64}, {}, true, DType::f32, 1},
  };
  for (const GroupedCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "M " << c.M << " K " << c.K << (c.gate ? " gate N " : " segments ") << c.N[0] << (c.N.size() > 1 ? ", ..." : "")
                                    << " " << dtype_name(c.out));
    EXPECT_LE(grouped_rel_l2(c, mma), c.out == DType::f32 ? 2e-5 : 8e-3);
  }
}

// Which devices try the tensor cores, without a GPU: compute capability 9.x by default (validated on
// an H100), 8.x only when opted in, never below 8.0 or off NVIDIA's platform; an unknown value of
// NPUSIM_OPENCL_MMA is an error, not a silent default.
TEST(OpenCLMmaGate, DefaultOnCapability9OptInOn8NeverElsewhere) {
  using npusim::ocl::mma_gate;
  EXPECT_TRUE(mma_gate("", "NVIDIA CUDA", 9, 0).probe);
  EXPECT_TRUE(mma_gate("1", "NVIDIA CUDA", 9, 0).probe);
  EXPECT_FALSE(mma_gate("0", "NVIDIA CUDA", 9, 0).probe);
  const auto ampere = mma_gate("", "NVIDIA CUDA", 8, 6);
  EXPECT_FALSE(ampere.probe);
  EXPECT_FALSE(ampere.support.ok);
  EXPECT_NE(ampere.support.why.find("NPUSIM_OPENCL_MMA=1"), std::string::npos) << ampere.support.why;
  EXPECT_TRUE(mma_gate("1", "NVIDIA CUDA", 8, 6).probe);
  EXPECT_FALSE(mma_gate("1", "NVIDIA CUDA", 7, 5).probe);
  EXPECT_FALSE(mma_gate("", "Portable Computing Language", 9, 0).probe);
  EXPECT_FALSE(mma_gate("1", "Portable Computing Language", 0, 0).probe);
  const auto emu = mma_gate("emulate", "Portable Computing Language", 0, 0);
  EXPECT_FALSE(emu.probe);
  EXPECT_TRUE(emu.support.ok && emu.support.emulated);
  EXPECT_THROW(mma_gate("yes", "NVIDIA CUDA", 9, 0), npusim::Error);
}

// The tuning variables of the tensor-core GEMM (docs/opencl.md): a tile name or a fill it does not
// know is an error, not a silent default.
TEST(OpenCLMmaGate, TuningVariablesAreCheckedNotIgnored) {
  auto with = [](const char* var, const char* value, auto&& fn) {
    ::setenv(var, value, 1);
    fn();
    ::unsetenv(var);
  };
  EXPECT_FALSE(ocl::mma_tile_override().has_value());
  EXPECT_EQ(ocl::mma_fill(128), 2);
  EXPECT_EQ(ocl::mma_fill(256), 1);
  with("NPUSIM_OPENCL_GEMM_TILE", "64x128", [] { EXPECT_EQ(ocl::mma_tile_override()->bm, 64); });
  with("NPUSIM_OPENCL_GEMM_TILE", "96x96", [] { EXPECT_THROW(ocl::mma_tile_override(), Error); });
  with("NPUSIM_OPENCL_GEMM_FILL", "4", [] {
    EXPECT_EQ(ocl::mma_fill(128), 4);
    EXPECT_EQ(ocl::mma_fill(256), 2);
  });
  with("NPUSIM_OPENCL_GEMM_FILL", "0", [] { EXPECT_THROW(ocl::mma_fill(128), Error); });
  with("NPUSIM_OPENCL_GEMM_FILL", "2x", [] { EXPECT_THROW(ocl::mma_fill(128), Error); });
}
