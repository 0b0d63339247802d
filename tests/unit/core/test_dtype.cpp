#include <gtest/gtest.h>

#include <Eigen/Core>  // the half types npusim's own conversions replaced: the results must be theirs
#include <cmath>
#include <cstring>
#include <limits>

#include "npusim/core/tensor.hpp"

using namespace npusim;

TEST(DType, ParsesBothTorchSpellingsAndSafetensorsNames) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("torch.bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("BF16"), DType::bf16);
  EXPECT_EQ(parse_dtype("torch.float32"), DType::f32);
  EXPECT_EQ(parse_dtype("int64"), DType::i64);
  EXPECT_EQ(parse_dtype("bool"), DType::boolean);
  EXPECT_EQ(parse_dtype("uint8"), DType::u8);
  EXPECT_FALSE(parse_dtype("complex64"));
  EXPECT_FALSE(parse_dtype("float8_e4m3fn"));
}

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(round_to(DType::bf16, 1.0f + 0x1p-8f), 1.0f);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up to the even one.
  EXPECT_EQ(round_to(DType::bf16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(round_to(DType::bf16, 1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isnan(round_to(DType::bf16, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(f32_to_bf16_bits(-3.3895313892515355e38f), 0xff7fu);
}

TEST(DType, F16RoundsToNearestEvenAndOverflowsToInf) {
  EXPECT_EQ(round_to(DType::f16, 1.0f + 0x1p-11f), 1.0f);             // tie -> even
  EXPECT_EQ(round_to(DType::f16, 1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // tie -> even (up)
  EXPECT_EQ(round_to(DType::f16, 65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to(DType::f16, 65520.0f)));
  EXPECT_EQ(f16_bits_to_f32(0x3c00), 1.0f);
}

namespace {
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

// core/dtype.hpp converts without Eigen (so that every header does not parse it): bit for bit what
// Eigen's half and bfloat16 give, on every f16 value and on floats across every exponent, both
// signs, subnormals and rounding ties (a NaN only has to stay a NaN: its payload may differ).
TEST(DType, HalfConversionsMatchEigenBitForBit) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float ours = f16_bits_to_f32(static_cast<std::uint16_t>(h));
    const float eigen = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<std::uint16_t>(h)));
    if (std::isnan(eigen)) ASSERT_TRUE(std::isnan(ours)) << h;
    else ASSERT_EQ(bits_of(ours), bits_of(eigen)) << "f16 bits " << h;
  }
  std::vector<std::uint32_t> samples;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 4099) samples.push_back(static_cast<std::uint32_t>(u));
  for (float f : {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 65504.0f, 65519.99f, 65520.0f, 0x1p-24f, 0x1p-25f,
                  0x1.8p-25f, 0x1p-14f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min()})
    samples.push_back(bits_of(f)), samples.push_back(bits_of(-f));
  for (std::uint32_t u : samples) {
    const float f = float_of(u);
    const auto eh = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
    const auto eb = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f))));
      EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16_bits(f), eh) << "float bits " << u;
    ASSERT_EQ(f32_to_bf16_bits(f), eb) << "float bits " << u;
  }
  // The storage types convert through the same functions, implicitly to float as Eigen's did.
  const half_t h(1.5f);
  const bfloat16_t b(-2.25f);
  const float hf = h, bf = b;
  EXPECT_EQ(hf, 1.5f);
  EXPECT_EQ(bf, -2.25f);
  EXPECT_EQ(half_t::from_bits(0x3c00).bits, 0x3c00);
}

TEST(Tensor, ConvertsBetweenTypes) {
  std::vector<float> v{1.5f, -2.25f, 3.0f};
  Tensor t = Tensor::from_values<float>({3}, v);
  Tensor b = t.to(DType::bf16).to(DType::f32);
  EXPECT_EQ(b.data<float>()[1], -2.25f);
  Tensor i = t.to(DType::i64);
  EXPECT_EQ(i.data<std::int64_t>()[0], 1);  // truncation, like torch .to(int64)
  EXPECT_EQ(i.data<std::int64_t>()[1], -2);
  EXPECT_THROW(t.data<std::int64_t>(), Error);
}

TEST(Tensor, RejectsOverflowingAndHugeShapes) {
  EXPECT_THROW(Tensor::empty(DType::f32, {std::int64_t{1} << 40, std::int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor::empty(DType::f32, {std::int64_t{1} << 50}), Error);
  try {
    checked_numel({std::int64_t{1} << 62, 4});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::resource);
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos);
  }
}

TEST(Shape, BroadcastsLikePyTorch) {
  EXPECT_EQ(broadcast_shapes({2, 3, 8}, {8}), (Shape{2, 3, 8}));
  EXPECT_EQ(broadcast_shapes({2, 1, 8}, {2, 3, 1}), (Shape{2, 3, 8}));
  EXPECT_THROW(broadcast_shapes({2, 3}, {4}), Error);
  EXPECT_EQ(broadcast_strides({3, 1}, {2, 3, 4}), (Strides{0, 1, 0}));
}
