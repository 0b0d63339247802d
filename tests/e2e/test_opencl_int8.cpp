// The OpenCL target's affine int8 kernels (cl/quant.cl) against the reference target, bit for bit:
// every convolution geometry of the CPU tests, the linear, the add, the max pool, quantize with
// ties and NaN, a chain of them, PyTorch's quantized-kernel fixtures, and an int8 ResNet-18.
#include <gtest/gtest.h>

#include "../common/int8_graphs.hpp"
#include "npusim/opencl.hpp"
#include "npusim/reference.hpp"
#include "npusim/runtime/int8.hpp"
#include "npusim/runtime/model_dir.hpp"

using namespace npusim;
using namespace npusim::test;

TEST(OpenCLInt8, ConvolutionsLinearAddAndPoolMatchTheReference) {
  std::mt19937 rng(5);
  for (const QConvCase& cs : qconv_cases) expect_qconv_matches_reference<OpenCLTarget>(cs, rng);
  expect_linear_add_pool_match_reference<OpenCLTarget>(rng);
}

TEST(OpenCLInt8, QuantizeAndDequantizeMatchTheReference) {
  OneNode t;
  const auto x = t.input("x", {1, 3, 7, 5}, DType::f32);
  const auto q = t.node("quantized_decomposed.quantize_per_tensor.default", {x}, {1, 3, 7, 5},
                        attrs({{"scale", ir::AttrValue(0.5)}, {"zero_point", ir::AttrValue(std::int64_t{-3})}, {"dtype", ir::AttrValue(std::string("torch.int8"))}}));
  t.node("quantized_decomposed.dequantize_per_tensor.default", {q}, {1, 3, 7, 5},
         attrs({{"scale", ir::AttrValue(0.5)}, {"zero_point", ir::AttrValue(std::int64_t{-3})}, {"dtype", ir::AttrValue(std::string("torch.int8"))}}), DType::f32);
  Tensor in = Tensor::empty(DType::f32, {1, 3, 7, 5});
  for (std::int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i - 52) * 0.25f * (i % 3 == 0 ? 5.0f : 1.0f);
  const Tensor a = t.run<OpenCLTarget>({in}), b = t.run<ReferenceTarget>({in});
  for (std::int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.to(DType::f32).data<float>()[i], b.to(DType::f32).data<float>()[i]) << i;
  in.data<float>()[33] = std::nanf("");
  try {
    t.run<OpenCLTarget>({in});
    ADD_FAILURE() << "NaN quantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot quantize NaN"), std::string::npos) << e.what();
  }
}

TEST(OpenCLInt8, MatchesPyTorchQuantizedKernels) { EXPECT_EQ(expect_pytorch_int8_cases<OpenCLTarget>(), 7); }

TEST(OpenCLInt8, Resnet18Int8MatchesTheReference) {
  // The int8 program of the CPU calibration, compiled for OpenCL and for the reference: the
  // integer ops agree, the float average pool to float rounding.
  const Int8Model<ReferenceTarget> m("models/resnet18");
  const program::CompileOptions o = m.int8_options("synthetic:1");
  const auto calib = runtime::int8_inputs("synthetic:1", m.ins, 0);
  const auto& c = m.c;
  const program::CompiledProgram pr = program::compile(c.graph, describe_target<ReferenceTarget>(), o);
  const program::CompiledProgram po = program::compile(c.graph, describe_target<OpenCLTarget>(), o);
  std::size_t fallback = 0;
  for (const auto& part : po.partitions) fallback += part.fallback;
  EXPECT_EQ(fallback, 0u) << "an int8 op fell back from the OpenCL target";
  runtime::ProgramRunner rr(pr, c.weights.get(), runtime::factories_for<ReferenceTarget>());
  runtime::ProgramRunner ro(po, c.weights.get(), runtime::factories_for<OpenCLTarget>());
  const Tensor a = ro.run(calib.sets[0]).at(0).to(DType::f32), b = rr.run(calib.sets[0]).at(0).to(DType::f32);
  double most = 0, amax = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    most = std::max<double>(most, std::fabs(a.data<float>()[i] - b.data<float>()[i])), amax = std::max<double>(amax, std::fabs(b.data<float>()[i]));
  EXPECT_LE(most, 0.02 * amax);
}
