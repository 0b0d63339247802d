// The CPU target's GEMV and GEMM over q8_0/q4_0 weights (target/cpu/compute/gemv_q.hpp, gemm_q.hpp):
// hand values with exact scales, the vector paths against the portable sums at awkward sizes, and
// both against the formats' meaning (dequantized weights times x) within the activation's rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../common/compile_util.hpp"
#include "../common/test_util.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/cpu.hpp"
#include "npusim/harness/compare.hpp"
#include "npusim/passes/quantize_weights.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/target/cpu/compute/gemm_q.hpp"
#include "npusim/target/cpu/compute/gemv_q.hpp"
#include "npusim/target/cpu/kernels/qlinear.hpp"

using namespace npusim;
using quant::BlockFormat;

namespace {
std::vector<std::byte> pack_rows(BlockFormat f, const std::vector<float>& w, std::int64_t n, std::int64_t k) {
  const std::size_t rb = quant::row_bytes(f, k);
  std::vector<std::byte> out(static_cast<std::size_t>(n) * rb);
  for (std::int64_t r = 0; r < n; ++r)
    quant::quantize_row(f, std::span<const float>(w.data() + r * k, static_cast<std::size_t>(k)), out.data() + static_cast<std::size_t>(r) * rb);
  return out;
}
const char* name(BlockFormat f) { return f == BlockFormat::q8_0 ? "q8_0" : "q4_0"; }
}  // namespace

TEST(CpuGemvQ, ExactScalesGiveTheIntegerDotProduct) {
  // x's block max is 127 (scale 1), w's is 127 for q8_0 (scale 1) or -8 for q4_0 (scale 1): every
  // code is the value itself and y is the integer dot product.
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    const std::int64_t k = 64, n = 5;
    std::vector<float> x(static_cast<std::size_t>(k)), w(static_cast<std::size_t>(n * k));
    for (std::int64_t j = 0; j < k; ++j) x[static_cast<std::size_t>(j)] = j % 32 == 0 ? 127.0f : static_cast<float>((j * 7) % 23 - 11);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t j = 0; j < k; ++j) {
        const float extreme = f == BlockFormat::q8_0 ? -127.0f : -8.0f;
        const int span = f == BlockFormat::q8_0 ? 200 : 15;  // values in [-100, 99] or [-7, 7]
        w[static_cast<std::size_t>(r * k + j)] = j % 32 == 5 ? extreme : static_cast<float>((r * 31 + j * 13) % span - span / 2);
      }
    const auto packed = pack_rows(f, w, n, k);
    cpu::qgemv::QActivation a;
    cpu::qgemv::quantize_activation(f, x.data(), k, a);
    std::vector<float> y(static_cast<std::size_t>(n));
    cpu::qgemv::gemv(f, packed.data(), a, 0, n, y.data());
    for (std::int64_t r = 0; r < n; ++r) {
      double want = 0;
      for (std::int64_t j = 0; j < k; ++j) want += double(w[static_cast<std::size_t>(r * k + j)]) * x[static_cast<std::size_t>(j)];
      EXPECT_EQ(y[static_cast<std::size_t>(r)], static_cast<float>(want)) << name(f) << " row " << r;
    }
  }
}

TEST(CpuGemvQ, VectorPathMatchesThePortableSumsAndTheFormatsMeaning) {
  std::mt19937 rng(11);
  std::normal_distribution<float> wd(0.0f, 0.02f), xd(0.0f, 1.0f);
  // K: one block, an odd count of blocks, a row that is not whole blocks, Qwen2.5's hidden size.
  // N: not a multiple of the 4 rows the vector path takes at a time.
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0})
    for (std::int64_t k : {32, 96, 1543, 1536}) {
      const std::int64_t n = 13;
      std::vector<float> x(static_cast<std::size_t>(k)), w(static_cast<std::size_t>(n * k));
      for (auto& v : x) v = xd(rng);
      for (auto& v : w) v = wd(rng);
      const auto packed = pack_rows(f, w, n, k);
      cpu::qgemv::QActivation a;
      cpu::qgemv::quantize_activation(f, x.data(), k, a);
      std::vector<float> y(static_cast<std::size_t>(n)), yp(static_cast<std::size_t>(n));
      cpu::qgemv::gemv(f, packed.data(), a, 0, n, y.data());
      cpu::qgemv::gemv_portable(f, packed.data(), a, 0, n, yp.data());
      std::vector<float> wrow(static_cast<std::size_t>(k));
      for (std::int64_t r = 0; r < n; ++r) {
        quant::dequantize_row(f, packed.data() + static_cast<std::size_t>(r) * quant::row_bytes(f, k), wrow);
        double exact = 0, mag = 0, bound = 0;
        for (std::int64_t j = 0; j < k; ++j) {
          const auto J = static_cast<std::size_t>(j);
          exact += double(wrow[J]) * x[J];
          mag += std::fabs(double(wrow[J]) * x[J]);
          bound += std::fabs(double(wrow[J])) * a.d[static_cast<std::size_t>(j / 32)] / 2;  // |x - dx qx| <= dx / 2
        }
        const auto R = static_cast<std::size_t>(r);
        EXPECT_NEAR(y[R], yp[R], 1e-5 * mag + 1e-7) << name(f) << " K " << k << " row " << r;
        EXPECT_NEAR(yp[R], exact, bound * 1.001 + 1e-5 * mag) << name(f) << " K " << k << " row " << r;
      }
#if defined(NPUSIM_CPU_QGEMV_BF16)
      // The bf16-unpack variant (measured, not bound): the dequantized weights times bf16(x).
      cpu::qgemv::BActivation ab;
      cpu::qgemv::bf16_activation(x.data(), k, ab);
      std::vector<float> yb(static_cast<std::size_t>(n));
      cpu::qgemv::gemv_bf16_unpack(f, packed.data(), ab, 0, n, yb.data());
      for (std::int64_t r = 0; r < n; ++r) {
        quant::dequantize_row(f, packed.data() + static_cast<std::size_t>(r) * quant::row_bytes(f, k), wrow);
        double want = 0, mag = 0;
        for (std::int64_t j = 0; j < k; ++j) {
          const double xb = bf16_bits_to_f32(f32_to_bf16_bits(x[static_cast<std::size_t>(j)]));
          want += double(wrow[static_cast<std::size_t>(j)]) * xb;
          mag += std::fabs(double(wrow[static_cast<std::size_t>(j)]) * xb);
        }
        EXPECT_NEAR(yb[static_cast<std::size_t>(r)], want, 1e-5 * mag + 1e-7) << name(f) << " bf16 unpack, K " << k << " row " << r;
      }
#endif
      // Row ranges: [3, 11) computes those rows only.
      std::vector<float> part(static_cast<std::size_t>(n), -7.0f);
      cpu::qgemv::gemv(f, packed.data(), a, 3, 11, part.data());
      EXPECT_EQ(part[2], -7.0f);
      EXPECT_EQ(part[11], -7.0f);
      EXPECT_NEAR(part[5], y[5], 1e-6 * std::fabs(y[5]) + 1e-7);
    }
}

TEST(CpuGemvQ, VectorQuantizationIsThePortableOneCodeForCode) {
  // Random rows, ties (values that land on k + 0.5 codes: 127 * 0.5 / 127 steps) and a row that is
  // not whole blocks: the AVX-512 path and the portable block function give the same codes, scales
  // and sums.
  std::mt19937 rng(3);
  std::normal_distribution<float> xd(0.0f, 2.0f);
  const std::int64_t k = 32 * 7 + 5, nb = quant::blocks_per_row(k);
  std::vector<float> x(static_cast<std::size_t>(k));
  for (auto& v : x) v = xd(rng);
  for (std::int64_t j = 32; j < 64; ++j) x[static_cast<std::size_t>(j)] = (j == 32 ? 127.0f : static_cast<float>(j % 9) + 0.5f);
  std::vector<std::int8_t> q(static_cast<std::size_t>(nb * 32)), qp(q.size());
  std::vector<float> d(static_cast<std::size_t>(nb)), dp(d.size());
  std::vector<std::int32_t> sums(d.size()), sp(d.size());
  cpu::qgemv::quantize_blocks(x.data(), k, q.data(), d.data(), sums.data());
  for (std::int64_t b = 0; b < nb; ++b)
    sp[static_cast<std::size_t>(b)] = cpu::qgemv::detail::quantize_block(x.data() + b * 32, std::min<std::int64_t>(32, k - b * 32), b * 32,
                                                                        qp.data() + b * 32, dp.data() + b);
  EXPECT_EQ(q, qp);
  EXPECT_EQ(d, dp);
  EXPECT_EQ(sums, sp);
  EXPECT_EQ(q[33], 6);  // 6.5 -> 6, ties to even
  EXPECT_EQ(q[34], 8);  // 7.5 -> 8
}

TEST(CpuGemvQ, NonFiniteInputsAndMismatchedFormatsAreErrors) {
  std::vector<float> x(40, 1.0f);
  x[33] = std::nanf("");
  cpu::qgemv::QActivation a;
  try {
    cpu::qgemv::quantize_activation(BlockFormat::q4_0, x.data(), 40, a);
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 33"), std::string::npos) << e.what();
  }
  x[33] = 1.0f;
  cpu::qgemv::quantize_activation(BlockFormat::q4_0, x.data(), 40, a);
  const auto packed = pack_rows(BlockFormat::q8_0, std::vector<float>(40, 0.5f), 1, 40);
  float y = 0;
  EXPECT_THROW(cpu::qgemv::gemv(BlockFormat::q8_0, packed.data(), a, 0, 1, &y), Error);
}

// ---- the prefill GEMM ----------------------------------------------------------------------------
namespace {
// Y = X W^T through the block GEMM (all panels), as [m][n].
std::vector<float> qgemm_run(BlockFormat f, const std::vector<std::byte>& packed, const std::vector<float>& x, std::int64_t m, std::int64_t k, std::int64_t n,
                             bool portable, std::vector<float>* scales = nullptr) {
  std::vector<std::byte> mem(cpu::qgemm::QRows::bytes(m, k));
  const auto rows = cpu::qgemm::QRows::in(f, m, k, mem.data());
  cpu::qgemm::quantize_rows(rows, 0, m, [&](std::int64_t r, float* dst) { std::copy_n(x.data() + r * k, k, dst); });
  if (scales) scales->assign(rows.d, rows.d + m * rows.blocks);
  std::vector<float> y(static_cast<std::size_t>(m * n), std::nanf(""));
  cpu::qgemm::gemm(
      packed.data(), n, rows, 0, cpu::qgemm::panels(n),
      [&](std::int64_t m0, int r, std::int64_t n0, std::int64_t cols, const float* out, std::int64_t ld) {
        for (int i = 0; i < r; ++i)
          for (std::int64_t c = 0; c < cols; ++c) y[static_cast<std::size_t>((m0 + i) * n + n0 + c)] = out[i * ld + c];
      },
      portable);
  return y;
}
}  // namespace

TEST(CpuGemmQ, ExactScalesGiveTheIntegerProducts) {
  // As the GEMV's test: every code is its value, so Y is the integer product, whatever the path.
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    const std::int64_t m = 9, k = 64, n = 18;
    std::vector<float> x(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < k; ++j)
        x[static_cast<std::size_t>(r * k + j)] = j % 32 == r % 32 ? 127.0f : static_cast<float>((j * 7 + r * 5) % 23 - 11);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t j = 0; j < k; ++j) {
        const int span = f == BlockFormat::q8_0 ? 200 : 15;
        w[static_cast<std::size_t>(r * k + j)] = j % 32 == 5 ? (f == BlockFormat::q8_0 ? -127.0f : -8.0f) : static_cast<float>((r * 31 + j * 13) % span - span / 2);
      }
    const auto packed = pack_rows(f, w, n, k);
    for (bool portable : {false, true}) {
      const auto y = qgemm_run(f, packed, x, m, k, n, portable);
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < n; ++c) {
          double want = 0;
          for (std::int64_t j = 0; j < k; ++j) want += double(w[static_cast<std::size_t>(c * k + j)]) * x[static_cast<std::size_t>(r * k + j)];
          EXPECT_EQ(y[static_cast<std::size_t>(r * n + c)], static_cast<float>(want)) << name(f) << (portable ? " portable" : "") << " at " << r << ", " << c;
        }
    }
  }
}

TEST(CpuGemmQ, VectorPathIsThePortableSumsBitForBitAndNearTheFormatsMeaning) {
  std::mt19937 rng(5);
  std::normal_distribution<float> wd(0.0f, 0.02f), xd(0.0f, 1.0f);
  // M: fewer rows than a tile, a tile and a part. K: one block, odd blocks, not whole blocks.
  // N: one panel, and panels with a part (the last one packed portably).
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0})
    for (std::int64_t m : {3, 13})
      for (std::int64_t k : {32, 96, 1543})
        for (std::int64_t n : {16, 37}) {
          SCOPED_TRACE(std::string(name(f)) + " M " + std::to_string(m) + " K " + std::to_string(k) + " N " + std::to_string(n));
          std::vector<float> x(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
          for (auto& v : x) v = xd(rng);
          for (auto& v : w) v = wd(rng);
          const auto packed = pack_rows(f, w, n, k);
          std::vector<float> dx;
          const auto y = qgemm_run(f, packed, x, m, k, n, false, &dx), yp = qgemm_run(f, packed, x, m, k, n, true);
          std::vector<float> wrow(static_cast<std::size_t>(k)), ygemv(static_cast<std::size_t>(n));
          for (std::int64_t r = 0; r < m; ++r) {
            // The decode GEMV on the same row: the same codes, the blocks summed in another order.
            cpu::qgemv::QActivation a;
            cpu::qgemv::quantize_activation(f, x.data() + r * k, k, a);
            cpu::qgemv::gemv(f, packed.data(), a, 0, n, ygemv.data());
            for (std::int64_t c = 0; c < n; ++c) {
              const auto at = static_cast<std::size_t>(r * n + c);
              ASSERT_EQ(y[at], yp[at]) << "row " << r << " column " << c;
              quant::dequantize_row(f, packed.data() + static_cast<std::size_t>(c) * quant::row_bytes(f, k), wrow);
              double exact = 0, mag = 0, bound = 0;
              for (std::int64_t j = 0; j < k; ++j) {
                const double wv = wrow[static_cast<std::size_t>(j)], xv = x[static_cast<std::size_t>(r * k + j)];
                exact += wv * xv;
                mag += std::fabs(wv * xv);
                bound += std::fabs(wv) * dx[static_cast<std::size_t>(r * quant::blocks_per_row(k) + j / 32)] / 2;
              }
              EXPECT_NEAR(y[at], exact, bound * 1.001 + 1e-5 * mag) << "row " << r << " column " << c;
              EXPECT_NEAR(y[at], ygemv[static_cast<std::size_t>(c)], 1e-5 * mag + 1e-7) << "row " << r << " column " << c;
            }
          }
        }
}

TEST(CpuGemmQ, NonFiniteInputsNameTheirIndex) {
  const std::int64_t m = 2, k = 40;
  std::vector<float> x(static_cast<std::size_t>(m * k), 1.0f);
  x[static_cast<std::size_t>(k + 35)] = std::numeric_limits<float>::infinity();
  std::vector<std::byte> mem(cpu::qgemm::QRows::bytes(m, k));
  const auto rows = cpu::qgemm::QRows::in(BlockFormat::q8_0, m, k, mem.data());
  try {
    cpu::qgemm::quantize_rows(rows, 0, m, [&](std::int64_t r, float* dst) { std::copy_n(x.data() + r * k, k, dst); });
    FAIL() << "Inf accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 35"), std::string::npos) << e.what();
  }
}

// ---- the quantized linear as compiled programs run it ------------------------------------------
// Linear fixtures compiled with --weights-dtype's option on the CPU target and on the reference
// (the format's meaning): flatten_linear and linear_fp16 have 2 rows (the block GEMV, with a bias;
// f16 input), linear_nobias 7 (the block GEMM; K = 96, an odd number of blocks). Both quantize the
// activation per block, which the reference does not.
namespace {
program::CompiledProgram compile_q(const ir::Graph& g, const partition::TargetInfo& t, DType dt, const std::string& format) {
  program::CompileOptions o = test::reference_options(dt);
  o.weight_quant.format = format;
  return program::compile(g, t, o);
}
Tensor run_one(const program::CompiledProgram& p, bool cpu, const runtime::ModelDir& c) {
  auto r = cpu ? runner_for<CpuTarget>::make(p, c.weights.get()) : runner_for<ReferenceTarget>::make(p, c.weights.get());
  return r->run(c.inputs()).at(0).to(DType::f32);
}
}  // namespace

TEST(CpuQuantizedLinear, MatchesTheReferencesQuantizedWeightsAndIsNotTheFloatModel) {
  for (std::string cs : {"flatten_linear", "linear_fp16", "linear_nobias"})
    for (std::string fmt : {"q8_0", "q4_0"})
      for (DType dt : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(cs + " " + fmt + " " + std::string(dtype_name(dt)));
        runtime::ModelDir c = runtime::ModelDir::open(test::data("ops/" + cs));
        const auto pc = compile_q(c.graph, describe_target<CpuTarget>(), dt, fmt);
        const auto pr = compile_q(c.graph, describe_target<ReferenceTarget>(), DType::f32, fmt);
        const auto pf = compile_q(c.graph, describe_target<ReferenceTarget>(), DType::f32, "");
        EXPECT_EQ(pc.stats.pass_counts.find("quantize_weights")->as_int(), 1);
        const Tensor cpu = run_one(pc, true, c), ref = run_one(pr, false, c), flt = run_one(pf, false, c);
        const auto vs_ref = harness::compare(cpu, ref), quant_err = harness::compare(ref, flt);
        // The activation's int8 rounding (about 0.4% of each block's max); bf16: its storage
        // rounding on top, and the weights quantized from their bf16 values (a q4_0 code that flips
        // is a whole step).
        EXPECT_LT(vs_ref.rel_l2, dt == DType::bf16 ? (fmt == "q4_0" ? 3e-2 : 1.5e-2) : 1.5e-2);
        // The quantization itself: q8_0 about 1%, q4_0 about 10% of the float product here.
        EXPECT_GT(quant_err.rel_l2, fmt == "q8_0" ? 1e-3 : 2e-2);
        EXPECT_LT(quant_err.rel_l2, fmt == "q8_0" ? 2e-2 : 0.2);
      }
}

// The quantized linear's two paths are candidates (kernels/qlinear/): explain --kernels names the
// one the binder runs (it named the float GEMM's before), and the GEMV says why it took the rows.
TEST(CpuQuantizedLinear, ExplainNamesTheBlockPathTheBinderRuns) {
  cpu::Choice ch;
  EXPECT_TRUE((cpu::is<cpu::QLinearGemv, cpu::qlinear_candidates>(cpu::choose<cpu::qlinear_candidates>(cpu::QLinearProblem{2, quant::BlockFormat::q4_0}, &ch))));
  ASSERT_EQ(ch.declined.size(), 1u);
  EXPECT_EQ(ch.declined[0].first, cpu::QLinearGemm::name);
  EXPECT_EQ(ch.declined[0].second, "2 rows: at most 4 (the GEMV reads each block once per row)");
  for (const auto& [cs, want] : {std::pair<std::string, std::string_view>{"flatten_linear", cpu::QLinearGemv::name}, {"linear_nobias", cpu::QLinearGemm::name}})
    for (std::string fmt : {"q8_0", "q4_0"}) {
      SCOPED_TRACE(cs + " " + fmt);
      runtime::ModelDir c = runtime::ModelDir::open(test::data("ops/" + cs));
      const auto pc = compile_q(c.graph, describe_target<CpuTarget>(), DType::f32, fmt);
      const std::vector<KernelImplementation> impl = implementations_for<CpuTarget>::of(pc.partitions.at(0));
      ASSERT_EQ(impl.size(), 1u);
      EXPECT_EQ(impl[0].chosen, want);
    }
}

TEST(CpuQuantizedLinear, TargetsWithoutTheKernelRefuseTheNode) {
  runtime::ModelDir c = runtime::ModelDir::open(test::data("ops/linear_nobias"));
  auto t = describe_target<ReferenceTarget>();
  t.weight_formats = {"q8_0"};
  EXPECT_THROW(compile_q(c.graph, t, DType::f32, "q4_0"), Error);  // asked for: an error
  // An IR whose linear already says q4_0 (a hand-edited file): that node goes to the fallback.
  ir::Graph g = c.graph;
  for (auto& n : g.nodes)
    if (n.op_type == "aten.linear.default") n.attrs.set("weight_format", ir::AttrValue("q4_0"));
  const auto sup = partition::node_support(g, t);
  bool refused = false;
  for (const auto& s : sup) refused = refused || (!s.on_target && s.reason.find("no linear kernel for q4_0") != std::string::npos);
  EXPECT_TRUE(refused);
  for (auto& n : g.nodes)
    if (n.op_type == "aten.linear.default") n.attrs.set("weight_format", ir::AttrValue("q5_1"));
  EXPECT_THROW(ops::check_graph(g), Error);
}

TEST(CpuQuantizedLinear, KeepAndFormatErrorsAreNotIgnored) {
  ir::Graph g = runtime::ModelDir::open(test::data("models/qwen2_tiny_decode")).graph;
  const auto total = passes::quantize_linear_weights(g, {"q8", {}});
  EXPECT_GT(total, 10);
  ir::Graph g2 = runtime::ModelDir::open(test::data("models/qwen2_tiny_decode")).graph;
  EXPECT_EQ(passes::quantize_linear_weights(g2, {"q4", {"lm_head"}}), total - 1);
  EXPECT_THROW(passes::quantize_linear_weights(g2, {"q4", {"no_such_layer"}}), Error);
  EXPECT_THROW(passes::quantize_linear_weights(g2, {"q3", {}}), Error);
  EXPECT_THROW(passes::quantize_linear_weights(g2, {"", {"lm_head"}}), Error);
}

// A .npubin with q4_0 weights: the CPU target runs the stored blocks (copied, not quantized again)
// to the same bits as from the float weights.
TEST(CpuQuantizedLinear, PackedWeightsInANpubinRunBitExactly) {
  runtime::ModelDir c = runtime::ModelDir::open(test::data("models/qwen2_tiny_decode"));
  const auto p = compile_q(c.graph, describe_target<CpuTarget>(), DType::bf16, "q4_0");
  test::TempDir dir;
  const std::string file = dir.file("q4.npubin");
  program::save(p, file, c.weights.get());
  auto w = program::embedded_weights(file);
  ASSERT_TRUE(w);
  ASSERT_FALSE(w->info().notes.empty());
  const auto in = test::any_inputs(c);
  const auto a = runner_for<CpuTarget>::make(p, w.get())->run(in), b = runner_for<CpuTarget>::make(p, c.weights.get())->run(in);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i;
}
