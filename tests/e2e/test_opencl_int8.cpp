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
  struct Case {
    std::int64_t c, hw, k, kh, stride, pad, dil, groups;
    double out_scale;
  };
  for (const Case& cs : {Case{3, 17, 20, 7, 2, 3, 1, 1, 2.0}, Case{64, 9, 40, 3, 1, 1, 1, 1, 4.0}, Case{16, 8, 16, 3, 2, 1, 2, 2, 3.0},
                         Case{5, 7, 33, 1, 1, 0, 1, 1, 0.002}}) {
    OneNode t;
    const auto x = t.input("x", {1, cs.c, cs.hw, cs.hw});
    Tensor s = Tensor::empty(DType::f32, {cs.k}), b = Tensor::empty(DType::i32, {cs.k});
    for (std::int64_t i = 0; i < cs.k; ++i) s.data<float>()[i] = 0.002f + 0.0007f * static_cast<float>(i % 17), b.data<std::int32_t>()[i] = static_cast<std::int32_t>(i * 211 - 3000);
    const std::int64_t o = (cs.hw + 2 * cs.pad - cs.dil * (cs.kh - 1) - 1) / cs.stride + 1;
    t.node("npusim.qconv2d", {x, t.weight("w", random_i8({cs.k, cs.c / cs.groups, cs.kh, cs.kh}, rng)), t.weight("s", s), t.weight("b", b)}, {1, cs.k, o, o},
           attrs({{"stride", ints({cs.stride, cs.stride})}, {"padding", ints({cs.pad, cs.pad})}, {"dilation", ints({cs.dil, cs.dil})},
                  {"groups", ir::AttrValue(cs.groups)}, {"x_scale", ir::AttrValue(0.05)}, {"x_zero_point", ir::AttrValue(std::int64_t{-7})},
                  {"out_scale", ir::AttrValue(cs.out_scale)}, {"out_zero_point", ir::AttrValue(std::int64_t{5})}, {"out_min", ir::AttrValue(std::int64_t{-100})}}));
    const Tensor in = random_i8({1, cs.c, cs.hw, cs.hw}, rng);
    EXPECT_TRUE(same(t.run<OpenCLTarget>({in}), t.run<ReferenceTarget>({in}))) << "conv " << cs.c << " -> " << cs.k;
  }
  {
    OneNode t;
    const auto x = t.input("x", {3, 70});
    Tensor s = Tensor::empty(DType::f32, {37}), b = Tensor::empty(DType::i32, {37});
    for (std::int64_t i = 0; i < 37; ++i) s.data<float>()[i] = 0.003f + 0.0001f * static_cast<float>(i), b.data<std::int32_t>()[i] = static_cast<std::int32_t>(i * 97 - 1800);
    t.node("npusim.qlinear", {x, t.weight("w", random_i8({37, 70}, rng)), t.weight("s", s), t.weight("b", b)}, {3, 37},
           attrs({{"x_scale", ir::AttrValue(0.1)}, {"x_zero_point", ir::AttrValue(std::int64_t{3})}, {"out_scale", ir::AttrValue(0.5)},
                  {"out_zero_point", ir::AttrValue(std::int64_t{-2})}}));
    const Tensor in = random_i8({3, 70}, rng);
    EXPECT_TRUE(same(t.run<OpenCLTarget>({in}), t.run<ReferenceTarget>({in})));
  }
  {
    OneNode t;
    const auto a = t.input("a", {1, 8, 7, 9}), b = t.input("b", {1, 8, 7, 9});
    const auto sum = t.node("npusim.qadd", {a, b}, {1, 8, 7, 9},
                            attrs({{"a_scale", ir::AttrValue(0.031)}, {"a_zero_point", ir::AttrValue(std::int64_t{-20})}, {"b_scale", ir::AttrValue(0.017)},
                                   {"b_zero_point", ir::AttrValue(std::int64_t{11})}, {"out_scale", ir::AttrValue(0.04)}, {"out_zero_point", ir::AttrValue(std::int64_t{-128})}}));
    t.node("npusim.qmax_pool2d", {sum}, {1, 8, 4, 5}, attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}));
    const Tensor x = random_i8({1, 8, 7, 9}, rng), y = random_i8({1, 8, 7, 9}, rng);
    EXPECT_TRUE(same(t.run<OpenCLTarget>({x, y}), t.run<ReferenceTarget>({x, y})));
  }
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
  const runtime::ModelDir c = runtime::ModelDir::open(test::data("models/resnet18"), "auto");
  std::vector<program::IoSpec> ins;
  for (auto t : c.graph.inputs) ins.push_back({c.graph.tensor(t).name, c.graph.tensor(t).shape, c.graph.tensor(t).dtype});
  program::CompileOptions o;
  o.evaluator = &ref::evaluate_node;
  runtime::RunnerFactory make = [&](const program::CompiledProgram& p) -> std::unique_ptr<Runner> {
    return std::make_unique<runtime::ProgramRunner>(p, c.weights.get(), runtime::factories_for<ReferenceTarget>());
  };
  const auto calib = runtime::int8_inputs("synthetic:1", ins, 0);
  o.int8.ranges = runtime::calibrate(c.graph, describe_target<ReferenceTarget>(), o, make, calib.sets, {}).ranges;
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
