// core/quant.hpp against hand values: GGML's block formats (bytes, rounding, padding, refusals)
// and the integer arithmetic of affine int8 (PyTorch's parameters, TFLite's requantization).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "npusim/core/quant.hpp"

using namespace npusim;
using namespace npusim::quant;

namespace {
std::vector<std::byte> pack(BlockFormat f, const std::vector<float>& x) {
  std::vector<std::byte> out(row_bytes(f, static_cast<std::int64_t>(x.size())), std::byte{0xAA});
  quantize_row(f, x, out.data());
  return out;
}
std::vector<float> unpack(BlockFormat f, const std::vector<std::byte>& in, std::size_t k) {
  std::vector<float> out(k);
  dequantize_row(f, in.data(), out);
  return out;
}
std::uint16_t u16(const std::vector<std::byte>& b, std::size_t at) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(b[at]) | (std::to_integer<unsigned>(b[at + 1]) << 8));
}
}  // namespace

TEST(Quant, BlockSizesAreGgmls) {
  EXPECT_EQ(block_bytes(BlockFormat::q8_0), 34u);
  EXPECT_EQ(block_bytes(BlockFormat::q4_0), 18u);
  EXPECT_EQ(row_bytes(BlockFormat::q8_0, 1536), 48u * 34);
  EXPECT_EQ(row_bytes(BlockFormat::q4_0, 33), 2u * 18);  // the last block padded
  EXPECT_EQ(row_bytes(BlockFormat::q4_0, 0), 0u);
  EXPECT_DOUBLE_EQ(bits_per_value(BlockFormat::q8_0), 8.5);
  EXPECT_DOUBLE_EQ(bits_per_value(BlockFormat::q4_0), 4.5);
  EXPECT_EQ(parse_block_format("q8"), BlockFormat::q8_0);
  EXPECT_EQ(parse_block_format("q4_0"), BlockFormat::q4_0);
  EXPECT_FALSE(parse_block_format("q4_1"));
  EXPECT_FALSE(parse_block_format("Q8"));
}

TEST(Quant, Q8RoundsTiesAwayFromZeroWithScaleOfMaxOver127) {
  // max |x| = 127: the scale is exactly 1 (f16 0x3c00) and the codes are round(x), ties away.
  std::vector<float> x(32, 0.0f);
  const float vals[] = {127, -127, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.49f, 100.51f};
  for (std::size_t i = 0; i < std::size(vals); ++i) x[i] = vals[i];
  const auto b = pack(BlockFormat::q8_0, x);
  ASSERT_EQ(b.size(), 34u);
  EXPECT_EQ(u16(b, 0), 0x3c00);
  const int want[] = {127, -127, 1, -1, 2, 3, -3, 3, 101};
  for (std::size_t i = 0; i < std::size(want); ++i)
    EXPECT_EQ(static_cast<std::int8_t>(std::to_integer<int>(b[2 + i])), want[i]) << i;
  for (std::size_t i = std::size(want); i < 32; ++i) EXPECT_EQ(std::to_integer<int>(b[2 + i]), 0) << i;
  const auto y = unpack(BlockFormat::q8_0, b, 32);
  for (std::size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(y[i], static_cast<float>(want[i]));
}

TEST(Q4, LargestMagnitudeIsCodeZeroAndOthersTruncateFromHalfUp) {
  // m = -8 (largest magnitude, negative): d = m / -8 = 1, code = min(15, trunc(x + 8.5)).
  std::vector<float> x(32, 0.0f);
  x[0] = -8;
  x[1] = 7;
  x[2] = 7.4f;   // 15.9 -> 15
  x[3] = 0.49f;  // 8.99 -> 8
  x[4] = 0.5f;   // 9.0  -> 9
  x[5] = -0.5f;  // 8.0  -> 8
  x[16] = 3;     // 11, in byte 0's high nibble
  x[31] = -3;    // 5, in byte 15's high nibble
  const auto b = pack(BlockFormat::q4_0, x);
  ASSERT_EQ(b.size(), 18u);
  EXPECT_EQ(u16(b, 0), 0x3c00);
  auto code = [&](int j) { return j < 16 ? std::to_integer<int>(b[2 + j]) & 15 : std::to_integer<int>(b[2 + j - 16]) >> 4; };
  const std::pair<int, int> want[] = {{0, 0}, {1, 15}, {2, 15}, {3, 8}, {4, 9}, {5, 8}, {6, 8}, {16, 11}, {31, 5}};
  for (auto [j, c] : want) EXPECT_EQ(code(j), c) << j;
  const auto y = unpack(BlockFormat::q4_0, b, 32);
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_EQ(y[2], 7.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[16], 3.0f);
  EXPECT_EQ(y[31], -3.0f);
}

TEST(Q4, PositiveExtremeGivesNegativeScaleAndTheOtherExtremeClampsToSevenSteps) {
  std::vector<float> x(32, 0.0f);
  x[0] = 8;   // m: d = -1, code 0, value -1 * (0 - 8) = 8
  x[1] = -8;  // same magnitude, found later: 8 * 1 + 8.5 = 16.5 -> 16 -> clamped to 15: value -7
  x[2] = -7;
  const auto b = pack(BlockFormat::q4_0, x);
  EXPECT_EQ(u16(b, 0), 0xbc00);  // -1.0 in f16
  const auto y = unpack(BlockFormat::q4_0, b, 32);
  EXPECT_EQ(y[0], 8.0f);
  EXPECT_EQ(y[1], -7.0f);
  EXPECT_EQ(y[2], -7.0f);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(Quant, RowsNotAMultipleOf32PadTheLastBlockWithZeros) {
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    std::vector<float> x(33);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 16.0f;
    const auto b = pack(f, x);
    ASSERT_EQ(b.size(), 2 * block_bytes(f));
    // The second block holds one value (16); the other 31 are zeros, not the buffer's 0xAA.
    std::vector<float> padded(64);
    dequantize_row(f, b.data(), padded);
    for (int j = 33; j < 64; ++j) EXPECT_EQ(padded[static_cast<std::size_t>(j)], 0.0f) << to_string(f) << " " << j;
    EXPECT_NEAR(padded[32], 16.0f, f == BlockFormat::q8_0 ? 0.07f : 1.1f);
    // Dequantizing 33 values writes 33, nothing past them.
    std::vector<float> y(34, -1.0f);
    dequantize_row(f, b.data(), std::span<float>(y.data(), 33));
    EXPECT_EQ(y[33], -1.0f);
  }
}

TEST(Quant, RoundTripErrorIsWithinHalfAStepPlusTheScalesRounding) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 0.02f);
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    std::vector<float> x(32 * 50 + 7);
    for (auto& v : x) v = n(rng);
    x[5] = 0.9f;  // an outlier in one block
    const auto y = unpack(f, pack(f, x), x.size());
    for (std::size_t b = 0; b * 32 < x.size(); ++b) {
      float amax = 0;
      for (std::size_t j = b * 32; j < std::min(x.size(), b * 32 + 32); ++j) amax = std::max(amax, std::fabs(x[j]));
      // q8: step amax/127, error <= step/2 plus 127 steps of the f16 scale's relative error (2^-11).
      // q4: step amax/8; the opposite extreme may clamp a whole step.
      const float step = f == BlockFormat::q8_0 ? amax / 127 : amax / 8;
      const float tol = (f == BlockFormat::q8_0 ? 0.5f : 1.0f) * step + amax * 0x1p-10f;
      for (std::size_t j = b * 32; j < std::min(x.size(), b * 32 + 32); ++j)
        ASSERT_LE(std::fabs(x[j] - y[j]), tol) << to_string(f) << " value " << j;
    }
  }
}

TEST(Quant, AllZeroBlocksHaveScaleZero) {
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    const auto b = pack(f, std::vector<float>(32, 0.0f));
    // q8_0: 0 / 127 = +0; q4_0: 0 / -8 = -0 (0x8000), as GGML stores it.
    EXPECT_EQ(u16(b, 0), f == BlockFormat::q8_0 ? 0x0000u : 0x8000u);
    for (float v : unpack(f, b, 32)) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Quant, NonFiniteValuesAndScalesThatOverflowF16AreRefused) {
  for (auto f : {BlockFormat::q8_0, BlockFormat::q4_0}) {
    std::vector<float> x(40, 1.0f);
    x[37] = std::numeric_limits<float>::quiet_NaN();
    try {
      pack(f, x);
      FAIL() << "NaN accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::weights);
      EXPECT_NE(std::string(e.what()).find("index 37"), std::string::npos) << e.what();
    }
    x[37] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(pack(f, x), Error);
    x[37] = 1e10f;  // finite, but the block's scale (1e10 / 127 or / 8) is past f16's 65504
    try {
      pack(f, x);
      FAIL() << "scale overflow accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();
    }
  }
}

TEST(Quant, BadScalesInPackedBytesAreFound) {
  auto b = pack(BlockFormat::q4_0, std::vector<float>(96, 1.0f));
  EXPECT_FALSE(first_bad_scale(BlockFormat::q4_0, b.data(), 96));
  b[2 * 18 + 1] = std::byte{0x7c};  // block 2's scale: 0x7cxx is Inf or NaN
  EXPECT_EQ(first_bad_scale(BlockFormat::q4_0, b.data(), 96), 2);
}

// ---- affine int8 -------------------------------------------------------------------------------

TEST(Affine, ParametersAreMinMaxObserversWithZeroExact) {
  // [-1, 3] over int8: scale 4/255, zero point -128 - round(-1 / (4/255)) = -128 + 64 = -64.
  auto a = choose_affine(-1.0f, 3.0f);
  EXPECT_FLOAT_EQ(a.scale, 4.0f / 255.0f);
  EXPECT_EQ(a.zero_point, -64);
  EXPECT_EQ(quantize(0.0f, a), -64);
  EXPECT_EQ(dequantize(quantize(0.0f, a), a), 0.0f);
  // A range that does not hold zero is widened to it: [2, 5] -> [0, 5], zero point qmin.
  a = choose_affine(2.0f, 5.0f);
  EXPECT_FLOAT_EQ(a.scale, 5.0f / 255.0f);
  EXPECT_EQ(a.zero_point, -128);
  // Symmetric (weights): zero point 0, scale max|x| / 127.5.
  a = choose_affine(-0.3f, 0.51f, /*symmetric=*/true);
  EXPECT_EQ(a.zero_point, 0);
  EXPECT_FLOAT_EQ(a.scale, 0.51f / 127.5f);
  // An empty range gets the smallest scale, not a division by zero.
  a = choose_affine(0.0f, 0.0f);
  EXPECT_EQ(a.scale, std::numeric_limits<float>::epsilon());
  EXPECT_THROW(choose_affine(1.0f, 0.0f), Error);
  EXPECT_THROW(choose_affine(0.0f, std::numeric_limits<float>::infinity()), Error);
}

TEST(Affine, QuantizeRoundsHalfToEvenAndSaturates) {
  const Affine a{.scale = 0.5f, .zero_point = 3, .qmin = -128, .qmax = 127};
  EXPECT_EQ(quantize(0.25f, a), 3);   // 0.5 -> 0 (even)
  EXPECT_EQ(quantize(0.75f, a), 5);   // 1.5 -> 2
  EXPECT_EQ(quantize(-0.75f, a), 1);  // -1.5 -> -2
  EXPECT_EQ(quantize(1000.0f, a), 127);
  EXPECT_EQ(quantize(-1000.0f, a), -128);
  EXPECT_EQ(quantize(std::numeric_limits<float>::infinity(), a), 127);
  EXPECT_THROW(quantize(std::numeric_limits<float>::quiet_NaN(), a), Error);
  EXPECT_EQ(dequantize(5, a), 1.0f);
}

TEST(FixedPoint, MultipliersAreTfLitesQuantizeMultiplier) {
  auto m = quantize_multiplier(0.5);
  EXPECT_EQ(m.multiplier, 1 << 30);
  EXPECT_EQ(m.shift, 0);
  m = quantize_multiplier(1.0);
  EXPECT_EQ(m.multiplier, 1 << 30);
  EXPECT_EQ(m.shift, 1);
  m = quantize_multiplier(0.25);
  EXPECT_EQ(m.multiplier, 1 << 30);
  EXPECT_EQ(m.shift, -1);
  // 0.75 = 0.75 * 2^0: 0.75 * 2^31 = 1610612736.
  m = quantize_multiplier(0.75);
  EXPECT_EQ(m.multiplier, 1610612736);
  EXPECT_EQ(m.shift, 0);
  // Just under 1.0 rounds up to 2^31: halved, shift incremented.
  m = quantize_multiplier(1.0 - 1e-12);
  EXPECT_EQ(m.multiplier, 1 << 30);
  EXPECT_EQ(m.shift, 1);
  EXPECT_EQ(quantize_multiplier(0.0).multiplier, 0);
  EXPECT_EQ(quantize_multiplier(1e-12).multiplier, 0);  // below 2^-31: nothing left
  EXPECT_THROW(quantize_multiplier(-0.5), Error);
  EXPECT_THROW(quantize_multiplier(std::nan("")), Error);
  EXPECT_THROW(quantize_multiplier(1e10), Error);
}

TEST(FixedPoint, RoundingIsGemmlowps) {
  // The divide by a power of two rounds ties away from zero; the doubling high multiply ties upward.
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);
  EXPECT_EQ(rounding_divide_by_pot(4, 1), 2);
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5 -> -2
  EXPECT_EQ(rounding_divide_by_pot(6, 2), 2);    // 1.5 -> 2
  EXPECT_EQ(rounding_divide_by_pot(7, 0), 7);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::min()),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);  // -1.5 -> -1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, 1 << 30), 0);   // -0.5 -> 0
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1, 1 << 30), 1);    // 0.5 -> 1
  // 3 * 0.5 = 1.5 -> 2; -3 * 0.5 = -1.5 -> -1 (the multiply's tie rule).
  const auto half = quantize_multiplier(0.5);
  EXPECT_EQ(multiply_by_quantized_multiplier(3, half), 2);
  EXPECT_EQ(multiply_by_quantized_multiplier(-3, half), -1);
  // 0.25 of an even x: the multiply is exact (x / 2), the divide by 2 rounds away from zero:
  // -10 * 0.25 = -2.5 -> -3, -6 * 0.25 = -1.5 -> -2.
  EXPECT_EQ(multiply_by_quantized_multiplier(-10, quantize_multiplier(0.25)), -3);
  EXPECT_EQ(multiply_by_quantized_multiplier(-6, quantize_multiplier(0.25)), -2);
  EXPECT_EQ(multiply_by_quantized_multiplier(100, half), 50);
  // A typical conv requantization: in 0.02 * weight 0.003 / out 0.05 = 0.0012.
  const auto m = quantize_multiplier(0.0012);
  for (std::int32_t acc : {0, 1, -1, 417, -417, 12345, -99999, 1 << 24})
    EXPECT_EQ(multiply_by_quantized_multiplier(acc, m), static_cast<std::int32_t>(std::round(acc * 0.0012))) << acc;
  // Multipliers >= 1 shift left: TFLite's integers where x << shift fits, saturation where not.
  EXPECT_EQ(multiply_by_quantized_multiplier(1000, quantize_multiplier(4.0)), 4000);
  EXPECT_EQ(multiply_by_quantized_multiplier(-7, quantize_multiplier(1.5)), -10);  // -10.5 -> -10 (upward)
  EXPECT_EQ(multiply_by_quantized_multiplier(7, quantize_multiplier(1.5)), 11);
  EXPECT_EQ(multiply_by_quantized_multiplier(std::numeric_limits<std::int32_t>::max(), quantize_multiplier(4.0)),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(multiply_by_quantized_multiplier(std::numeric_limits<std::int32_t>::min(), quantize_multiplier(4.0)),
            std::numeric_limits<std::int32_t>::min());
}
