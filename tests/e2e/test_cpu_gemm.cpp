// The CPU target's GEMM (cpu::gemm, what linear layers run) against a double-precision product,
// for bf16 activations and weights with more than 4 rows: the AMX tiles where the CPU has them,
// the AVX-512 BF16 dot products (vdpbf16ps) where it has those instead, the f32 micro-kernel
// otherwise. Shapes: row counts that fill no 12-row tile, an odd K (the last element pairs with
// a zero), column counts that leave a single panel or a partial one, bias and relu. A's rows are
// followed by NaN so that a read past K shows. Values are bf16-representable, so the products
// are exact and only the f32 accumulation order differs.
#include <cmath>
#include <limits>
#include <random>

#include "../common/test_util.hpp"
#include "npusim/target/cpu/compute/gemm.hpp"

using namespace npusim;

namespace {

struct GemmCase {
  std::int64_t M, K, N;
};

}  // namespace

TEST(CpuGemm, Bf16RowsMatchADoublePrecisionProduct) {
  for (const GemmCase gc : {GemmCase{5, 64, 32}, GemmCase{13, 7, 40}, GemmCase{30, 33, 16}, GemmCase{128, 96, 80}, GemmCase{12, 1, 48}}) {
    const auto [M, K, N] = gc;
    SCOPED_TRACE(testing::Message() << "M " << M << " K " << K << " N " << N);
    const std::int64_t lda = K + 1;  // one NaN after each row
    const std::vector<float> a = test::bf16_exact(static_cast<std::size_t>(M * K), 1), w = test::bf16_exact(static_cast<std::size_t>(N * K), 2),
                             bias = test::bf16_exact(static_cast<std::size_t>(N), 3);
    std::vector<std::uint16_t> ab(static_cast<std::size_t>(M * lda), f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())), wb(w.size());
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t k = 0; k < K; ++k) ab[static_cast<std::size_t>(m * lda + k)] = f32_to_bf16_bits(a[static_cast<std::size_t>(m * K + k)]);
    for (std::size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16_bits(w[i]);
    const cpu::PackedB pb = cpu::pack_b(wb.data(), DType::bf16, K, N, true);
    for (const bool relu : {false, true}) {
      SCOPED_TRACE(relu ? "bias + relu" : "no epilogue");
      std::vector<float> c(static_cast<std::size_t>(M * N), -7.0f);
      const cpu::GemmScratch lay = cpu::GemmScratch::layout(M, K, N);
      cpu::AlignedBuf scratch = cpu::AlignedBuf::make(lay.bytes());
      cpu::gemm({ab.data(), DType::bf16, lda, false}, M, pb, {c.data(), DType::f32, N, false}, {relu ? bias.data() : nullptr, relu}, lay, scratch.p.get());
      double num = 0, den = 0;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double s = relu ? bias[static_cast<std::size_t>(n)] : 0.0;
          for (std::int64_t k = 0; k < K; ++k) s += static_cast<double>(a[static_cast<std::size_t>(m * K + k)]) * w[static_cast<std::size_t>(n * K + k)];
          if (relu) s = std::max(s, 0.0);
          const double got = c[static_cast<std::size_t>(m * N + n)];
          ASSERT_FALSE(std::isnan(got)) << "row " << m << " column " << n;
          num += (got - s) * (got - s), den += s * s;
        }
      EXPECT_LE(std::sqrt(num / den), 1e-6) << "rel L2";
    }
  }
}
