// The OpenCL target's q8_0/q4_0 linears (cl/gemv_q.cl): the decode GEMV with each of its fusions
// and the prefill path (dequantize, then the GEMM) bound directly at awkward sizes (K not a multiple
// of 32, N not a multiple of the rows a work-group computes) against the dequantized weights in
// double precision; then whole programs against the reference target's quantized linears.
#include <cmath>

#include "../common/compile_util.hpp"
#include "../common/opencl_buffers.hpp"
#include "../common/test_util.hpp"
#include "npusim/core/quant_matrix.hpp"
#include "npusim/harness/compare.hpp"
#include "npusim/opencl.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/reference.hpp"
#include "npusim/target/opencl/kernels/linalg.hpp"

using namespace npusim;
using quant::BlockFormat;

namespace {

using Buffers = test::OpenCLBuffers;

// A weight [n, k] of bf16-exact values, packed for the device, and the values it stands for.
struct Weight {
  ocl::TensorRef dev;
  std::vector<float> values;  // dequantized, [n, k]
};
Weight weight(Buffers& t, BlockFormat f, std::int64_t n, std::int64_t k, unsigned seed) {
  const std::vector<float> w = test::bf16_exact(static_cast<std::size_t>(n * k), seed);
  Tensor wt = Tensor::empty(DType::f32, {n, k});
  std::copy(w.begin(), w.end(), static_cast<float*>(wt.raw()));
  Weight r{t.bytes(ocl::pack_device_blocks(f, wt), DType::u8), std::vector<float>(static_cast<std::size_t>(n * k))};
  std::vector<std::byte> row(quant::row_bytes(f, k));
  for (std::int64_t i = 0; i < n; ++i) {
    quant::quantize_row(f, std::span<const float>(w.data() + i * k, static_cast<std::size_t>(k)), row.data());
    quant::dequantize_row(f, row.data(), std::span<float>(r.values.data() + i * k, static_cast<std::size_t>(k)));
  }
  return r;
}

double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ADD_FAILURE() << "output " << i << " not written: " << got[i];
      return 1.0;
    }
    num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// y[m, n] = sum_k x[m, k] w[n, k], in double.
std::vector<double> product(const std::vector<float>& x, const std::vector<float>& w, std::int64_t M, std::int64_t N, std::int64_t K) {
  std::vector<double> y(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += static_cast<double>(x[static_cast<std::size_t>(m * K + k)]) * w[static_cast<std::size_t>(n * K + k)];
      y[static_cast<std::size_t>(m * N + n)] = s;
    }
  return y;
}

const char* name(BlockFormat f) { return f == BlockFormat::q8_0 ? "q8_0" : "q4_0"; }

}  // namespace

// Values as the device holds them in storage type dt.
std::vector<float> rounded(std::vector<float> v, DType dt) {
  std::vector<std::uint16_t> bits(v.size());
  convert_elements(DType::f32, v.data(), dt, bits.data(), static_cast<std::int64_t>(v.size()));
  convert_elements(dt, bits.data(), DType::f32, v.data(), static_cast<std::int64_t>(v.size()));
  return v;
}

// One product with bias, residual and ReLU, at 1-4 rows (gemv_q) and at 130 (the tiled GEMM
// dequantizing the blocks as it loads its tiles: 130 rows and 136 columns are more than one tile),
// with bf16 values and, for the GEMM, f16 ones (the tensor-core kernel rounds to either). The GEMM
// multiplies the dequantized values rounded to the weight's storage type (an f16 scale times a code
// is not always bf16-exact, as on the CPU target's prefill): the expected sums use those.
TEST(OpenCLGemvQ, PlainProductWithEpilogueMatchesTheDequantizedWeights) {
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0})
    for (std::int64_t M : {1, 3, 4, 130})
      for (std::int64_t K : {70, 1024})
        for (DType wdt : {DType::bf16, DType::f16}) {
          if (M <= 4 && wdt == DType::f16) continue;
          SCOPED_TRACE(testing::Message() << name(f) << " M " << M << " K " << K << " " << dtype_name(wdt));
          Buffers t;
          const std::int64_t N = M > 4 ? 136 : 13;
          const Weight w = weight(t, f, N, K, 21);
          const std::vector<float> x = rounded(test::bf16_exact(static_cast<std::size_t>(M * K), 22), wdt),
                                   bias = test::bf16_exact(static_cast<std::size_t>(N), 23), res = test::bf16_exact(static_cast<std::size_t>(M * N), 24);
          ocl::Gemm g;
          g.a = t.upload(x, wdt), g.b = w.dev, g.c = t.upload(std::vector<float>(static_cast<std::size_t>(M * N), std::nanf("")), DType::f32);
          g.M = M, g.N = N, g.K = K, g.sam = K, g.sak = 1, g.sbk = 1, g.sbn = K, g.scm = N, g.scn = 1;
          g.bias = t.upload(bias, DType::f32), g.residual = t.upload(res, DType::f32), g.relu = true;
          g.wq = f, g.wdt = wdt;
          ocl::bind_gemm(t.b, g);
          t.run();
          std::vector<double> want = product(x, M > 4 ? rounded(w.values, wdt) : w.values, M, N, K);
          for (std::int64_t m = 0; m < M; ++m)
            for (std::int64_t n = 0; n < N; ++n) {
              double& v = want[static_cast<std::size_t>(m * N + n)];
              v = std::max(v + bias[static_cast<std::size_t>(n)] + res[static_cast<std::size_t>(m * N + n)], 0.0);
            }
          EXPECT_LE(rel_l2(t.download(g.c, want.size()), want), 2e-5);
        }
}

// The decode fusions: three segments of one x (q/k/v), and the gate (silu(x Wg^T) * (x Wu^T)).
TEST(OpenCLGemvQ, SegmentsAndGateMatchTheDequantizedWeights) {
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    SCOPED_TRACE(name(f));
    const std::int64_t M = 2, K = 96;
    {
      Buffers t;
      const std::int64_t Ns[3] = {11, 5, 7};
      const std::vector<float> x = test::bf16_exact(static_cast<std::size_t>(M * K), 31);
      ocl::Gemm g;
      std::vector<Weight> ws;
      std::vector<ocl::TensorRef> cs;
      for (int s = 0; s < 3; ++s) {
        ws.push_back(weight(t, f, Ns[s], K, 40u + static_cast<unsigned>(s)));
        cs.push_back(t.upload(std::vector<float>(static_cast<std::size_t>(M * Ns[s]), std::nanf("")), DType::f32));
      }
      g.a = t.upload(x, DType::f32), g.b = ws[0].dev, g.c = cs[0];
      g.M = M, g.N = Ns[0], g.K = K, g.sam = K, g.sak = 1, g.sbk = 1, g.sbn = K, g.scm = Ns[0], g.scn = 1;
      g.more = {{ws[1].dev, std::nullopt, cs[1], Ns[1]}, {ws[2].dev, std::nullopt, cs[2], Ns[2]}};
      g.wq = f;
      ocl::bind_gemm(t.b, g);
      t.run();
      for (int s = 0; s < 3; ++s) EXPECT_LE(rel_l2(t.download(cs[static_cast<std::size_t>(s)], static_cast<std::size_t>(M * Ns[s])), product(x, ws[static_cast<std::size_t>(s)].values, M, Ns[s], K)), 1e-5) << "segment " << s;
    }
    {
      Buffers t;
      const std::int64_t N = 10;
      const std::vector<float> x = test::bf16_exact(static_cast<std::size_t>(M * K), 51);
      const Weight wg = weight(t, f, N, K, 52), wu = weight(t, f, N, K, 53);
      ocl::Gemm g;
      g.a = t.upload(x, DType::f32), g.b = wg.dev, g.up = wu.dev, g.c = t.upload(std::vector<float>(static_cast<std::size_t>(M * N), std::nanf("")), DType::f32);
      g.M = M, g.N = N, g.K = K, g.sam = K, g.sak = 1, g.sbk = 1, g.sbn = K, g.scm = N, g.scn = 1;
      g.wq = f;
      ocl::bind_gemm(t.b, g);
      t.run();
      const std::vector<double> gate = product(x, wg.values, M, N, K), up = product(x, wu.values, M, N, K);
      std::vector<double> want(gate.size());
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      EXPECT_LE(rel_l2(t.download(g.c, want.size()), want), 1e-5);
    }
  }
}

namespace {
program::CompiledProgram compile_q(const ir::Graph& g, const partition::TargetInfo& t, DType dt, const std::string& format, bool opencl) {
  program::CompileOptions o = test::reference_options(dt);
  if (opencl) o.evaluator = evaluator_for<OpenCLTarget>();
  o.weight_quant.format = format;
  return program::compile(g, t, o);
}
}  // namespace

// Whole programs: the executor packs the weights, the target's result is the reference's
// quantized product (f32: the same values in another order), and not the float model's.
TEST(OpenCLQuantizedLinear, MatchesTheReferencesQuantizedWeights) {
  for (std::string cs : {"flatten_linear", "linear_nobias"})
    for (std::string fmt : {"q8_0", "q4_0"}) {
      SCOPED_TRACE(cs + " " + fmt);
      runtime::ModelDir c = runtime::ModelDir::open(test::data("ops/" + cs));
      const auto po = compile_q(c.graph, describe_target<OpenCLTarget>(), DType::f32, fmt, true);
      const auto pr = compile_q(c.graph, describe_target<ReferenceTarget>(), DType::f32, fmt, false);
      EXPECT_EQ(po.stats.pass_counts.find("quantize_weights")->as_int(), 1);
      EXPECT_EQ(po.partitions.size(), 1u);
      const Tensor got = runner_for<OpenCLTarget>::make(po, c.weights.get())->run(c.inputs()).at(0).to(DType::f32);
      const Tensor ref = runner_for<ReferenceTarget>::make(pr, c.weights.get())->run(c.inputs()).at(0).to(DType::f32);
      EXPECT_LT(harness::compare(got, ref).rel_l2, 1e-5);
    }
}

// A .npubin with q4_0 weights: the OpenCL target regroups the stored blocks for the device and
// computes the same bits as from the float weights.
TEST(OpenCLQuantizedLinear, PackedWeightsInANpubinRunBitExactly) {
  runtime::ModelDir c = runtime::ModelDir::open(test::data("models/qwen2_tiny_decode"));
  const auto p = compile_q(c.graph, describe_target<OpenCLTarget>(), DType::bf16, "q4_0", true);
  test::TempDir dir;
  const std::string file = dir.file("q4.npubin");
  program::save(p, file, c.weights.get());
  auto w = program::embedded_weights(file);
  ASSERT_TRUE(w);
  const auto in = test::any_inputs(c);
  const auto a = runner_for<OpenCLTarget>::make(p, w.get())->run(in), b = runner_for<OpenCLTarget>::make(p, c.weights.get())->run(in);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i;
}
