// Post-training int8 (issue 36, docs/quantization.md): the integer ops' meaning on hand values,
// the CPU target's kernels (VNNI and portable) against the reference bit for bit, the
// quantize_per_channel recipe, and `quantize` end to end on ResNet-18 (calibration, the int8
// program, the accuracy report and its per-layer ranking), with its input errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "../common/int8_graphs.hpp"
#include "../common/test_util.hpp"
#include "npusim/cpu.hpp"
#include "npusim/ops/quantized.hpp"
#include "npusim/reference.hpp"
#include "npusim/runtime/int8.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/runtime/program_runner.hpp"
#include "npusim/target/cpu/compute/qconv.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/recipes.hpp"
#include "npusim/weights/safetensors.hpp"

using namespace npusim;
namespace fs = std::filesystem;

namespace {
using namespace npusim::test;
}  // namespace

TEST(Int8Ops, QConvHandValue) {
  // 1x1 conv, two input channels: acc = (10 - 2) * 3 + (-5 - 2) * -2 + bias 7 = 45; M = 0.5 *
  // 0.25 / 1 = 1/8: 45 / 8 = 5.625 -> 6, + out zero point -3 = 3.
  OneNode t;
  const auto x = t.input("x", {1, 2, 1, 1});
  Tensor w = Tensor::empty(DType::i8, {1, 2, 1, 1});
  w.data<std::int8_t>()[0] = 3, w.data<std::int8_t>()[1] = -2;
  Tensor s = Tensor::empty(DType::f32, {1}), b = Tensor::empty(DType::i32, {1});
  s.data<float>()[0] = 0.25f, b.data<std::int32_t>()[0] = 7;
  t.node("npusim.qconv2d", {x, t.weight("w", w), t.weight("s", s), t.weight("b", b)}, {1, 1, 1, 1},
         attrs({{"x_scale", ir::AttrValue(0.5)}, {"x_zero_point", ir::AttrValue(std::int64_t{2})}, {"out_scale", ir::AttrValue(1.0)},
                {"out_zero_point", ir::AttrValue(std::int64_t{-3})}}));
  Tensor in = Tensor::empty(DType::i8, {1, 2, 1, 1});
  in.data<std::int8_t>()[0] = 10, in.data<std::int8_t>()[1] = -5;
  for (const Tensor& y : {t.run<ReferenceTarget>({in}), t.run<CpuTarget>({in})}) EXPECT_EQ(y.to(DType::i32).data<std::int32_t>()[0], 3);
}

TEST(Int8Ops, QAddHandValue) {
  // TFLite's add: 0.5 * (20 - 0) + 0.25 * (8 - 4) = 11 at out scale 1, zero point 1 -> 12; then
  // 0.5 * 127 + 0.25 * (127 - 4) = 94.25 -> 94, + 1 = 95.
  OneNode t;
  const auto a = t.input("a", {2}), b = t.input("b", {2});
  t.node("npusim.qadd", {a, b}, {2},
         attrs({{"a_scale", ir::AttrValue(0.5)}, {"b_scale", ir::AttrValue(0.25)}, {"b_zero_point", ir::AttrValue(std::int64_t{4})},
                {"out_scale", ir::AttrValue(1.0)}, {"out_zero_point", ir::AttrValue(std::int64_t{1})}}));
  Tensor x = Tensor::empty(DType::i8, {2}), y = Tensor::empty(DType::i8, {2});
  x.data<std::int8_t>()[0] = 20, y.data<std::int8_t>()[0] = 8, x.data<std::int8_t>()[1] = 127, y.data<std::int8_t>()[1] = 127;
  for (const Tensor& r : {t.run<ReferenceTarget>({x, y}), t.run<CpuTarget>({x, y})}) {
    EXPECT_EQ(r.to(DType::i32).data<std::int32_t>()[0], 12);
    EXPECT_EQ(r.to(DType::i32).data<std::int32_t>()[1], 95);
  }
}

TEST(Int8Ops, CpuConvolutionsMatchTheReferenceBitForBit) {
  std::mt19937 rng(5);
  for (const QConvCase& cs : qconv_cases) expect_qconv_matches_reference<CpuTarget>(cs, rng);
}

TEST(Int8Ops, CpuLinearAddAndPoolMatchTheReferenceBitForBit) {
  std::mt19937 rng(9);
  expect_linear_add_pool_match_reference<CpuTarget>(rng);
}

TEST(Int8Ops, CpuQuantizeMatchesTheReference) {
  // Ties (x / scale = k + 0.5 go to the even k), saturation, both sides of the zero point, and a
  // length that is not a multiple of the vector; NaN is refused by both.
  OneNode t;
  const auto x = t.input("x", {1, 3, 7, 5}, DType::f32);
  t.node("quantized_decomposed.quantize_per_tensor.default", {x}, {1, 3, 7, 5},
         attrs({{"scale", ir::AttrValue(0.5)}, {"zero_point", ir::AttrValue(std::int64_t{-3})}, {"dtype", ir::AttrValue(std::string("torch.int8"))}}));
  Tensor in = Tensor::empty(DType::f32, {1, 3, 7, 5});
  for (std::int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i - 52) * 0.25f * (i % 3 == 0 ? 5.0f : 1.0f);
  const Tensor cpu = t.run<CpuTarget>({in}), ref = t.run<ReferenceTarget>({in});
  EXPECT_TRUE(same(cpu, ref));
  EXPECT_EQ(cpu.to(DType::i32).data<std::int32_t>()[1], -3 + static_cast<int>(std::nearbyint(-51 * 0.25f / 0.5f)));  // -25.5 -> -26
  in.data<float>()[33] = std::nanf("");
  EXPECT_THROW(t.run<CpuTarget>({in}), Error);
  EXPECT_THROW(t.run<ReferenceTarget>({in}), Error);
}

TEST(Int8Ops, CpuChannelsLastChainMatchesTheReference) {
  // conv -> conv -> conv -> add(residual) -> max pool -> conv: the tensors between the integer kernels are held
  // channels last on the CPU target (cpu/layout.hpp); the result is still the reference's.
  std::mt19937 rng(11);
  OneNode t;
  const auto x = t.input("x", {1, 24, 10, 10});
  auto conv = [&](ir::TensorId in, std::int64_t cin, std::int64_t cout, std::int64_t k, const std::string& nm, double out_scale, std::int64_t hw = 10) {
    Tensor s = Tensor::empty(DType::f32, {cout}), b = Tensor::empty(DType::i32, {cout});
    for (std::int64_t i = 0; i < cout; ++i) s.data<float>()[i] = 0.004f + 0.0002f * static_cast<float>(i), b.data<std::int32_t>()[i] = static_cast<std::int32_t>(i * 31 - 400);
    return t.node("npusim.qconv2d", {in, t.weight(nm + "w", random_i8({cout, cin, k, k}, rng)), t.weight(nm + "s", s), t.weight(nm + "b", b)}, {1, cout, hw, hw},
                  attrs({{"padding", ints({k / 2, k / 2})}, {"x_scale", ir::AttrValue(0.05)}, {"x_zero_point", ir::AttrValue(std::int64_t{-3})},
                         {"out_scale", ir::AttrValue(out_scale)}, {"out_zero_point", ir::AttrValue(std::int64_t{-3})}}));
  };
  const auto r = conv(x, 24, 24, 1, "r", 0.05);
  const auto a = conv(r, 24, 40, 3, "a", 0.3);
  const auto b = conv(a, 40, 24, 1, "b", 0.2);
  const auto sum = t.node("npusim.qadd", {b, r}, {1, 24, 10, 10},
                          attrs({{"a_scale", ir::AttrValue(0.05)}, {"a_zero_point", ir::AttrValue(std::int64_t{-3})}, {"b_scale", ir::AttrValue(0.05)},
                                 {"b_zero_point", ir::AttrValue(std::int64_t{-3})}, {"out_scale", ir::AttrValue(0.08)}, {"out_zero_point", ir::AttrValue(std::int64_t{-3})}}));
  const auto pooled = t.node("npusim.qmax_pool2d", {sum}, {1, 24, 5, 5},
                             attrs({{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}));
  conv(pooled, 24, 20, 3, "c", 0.5, 5);
  const Tensor in = random_i8({1, 24, 10, 10}, rng);
  EXPECT_TRUE(same(t.run<CpuTarget>({in}), t.run<ReferenceTarget>({in})));
}

#if defined(NPUSIM_CPU_QCONV_VNNI)
TEST(Int8Ops, VectorRequantizationIsTheScalarOne) {
  // The vector x * M (floor form of the doubling high multiply, one-add rounding shift) against
  // quant::multiply_by_quantized_multiplier, at ties and near its bound |x| < 2^30.
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int32_t> xs(-(1 << 30) + 1, (1 << 30) - 1);
  std::uniform_real_distribution<double> ms(1e-9, 0.999);
  for (int round = 0; round < 2000; ++round) {
    alignas(64) std::int32_t x[16], m[16], e[16], out[16];
    quant::FixedPointMultiplier f[16];
    for (int i = 0; i < 16; ++i) {
      f[i] = quant::quantize_multiplier(i == 0 ? 0.5 : i == 1 ? 0.25 : ms(rng));
      m[i] = f[i].multiplier, e[i] = -f[i].shift;
      x[i] = i < 4 ? (i % 2 ? -1 : 1) * ((1 << 30) - 1 - round) : i < 8 ? (round % 64) - 32 : xs(rng);
    }
    const cpu::qconv::detail::Multipliers16 mm(m, e);
    _mm512_store_si512(out, cpu::qconv::detail::multiply16(_mm512_load_si512(x), mm));
    for (int i = 0; i < 16; ++i) ASSERT_EQ(out[i], quant::multiply_by_quantized_multiplier(x[i], f[i])) << "x " << x[i] << " lane " << i;
  }
}
#endif

TEST(Int8Ops, PortableAndVnniGemmAgree) {
  if (!cpu::qconv::vnni_available()) GTEST_SKIP() << "this build has no AVX-512 VNNI";
  std::mt19937 rng(3);
  const std::int64_t K = 50, C = 13, H = 6, W = 5;
  const Tensor w = random_i8({K, C, 3, 3}, rng);
  std::vector<float> scale(static_cast<std::size_t>(K), 0.01f);
  std::vector<std::int32_t> bias(static_cast<std::size_t>(K), 100);
  ops::QConv2d::Attrs a;
  a.padding = {1, 1}, a.x_scale = 0.1, a.x_zero_point = 9, a.out_scale = 0.3, a.out_zero_point = -4;
  const cpu::qconv::ConvLayout l = cpu::qconv::conv_layout(C, H, W, 3, 3, a);
  auto w_at = [&](std::int64_t k, std::int64_t t, std::int64_t b) { return w.data<std::int8_t>()[((k * C + b % C) * 3 + t) * 3 + b / C]; };
  const cpu::qconv::Packed p = cpu::qconv::pack(K, l.T, l.Cb, w_at, scale.data(), bias.data(), a);
  const auto vp = cpu::qconv::vector_params(p);
  const auto idx = cpu::qconv::conv_index(l, 3, 3, H, W, a);
  const Tensor x = random_i8({1, C, H, W}, rng);
  std::vector<std::uint8_t> rows(static_cast<std::size_t>(l.image_bytes()));
  cpu::qconv::to_image(x.data<std::int8_t>(), false, l, 9, rows.data());
  std::vector<std::int8_t> y0(static_cast<std::size_t>(K * H * W)), y1(y0.size());
  const cpu::qconv::Problem pr{H * W, idx.data(), H * W, 1};
  cpu::qconv::run(p, vp, rows.data(), pr, y0.data(), false);
  cpu::qconv::run(p, vp, rows.data(), pr, y1.data(), true);
  EXPECT_EQ(y0, y1);
}

// PyTorch's own quantized kernels (tools/int8_fixtures.py: Debian's torch 1.13, onednn engine) on
// the same codes and parameters (tests/common/int8_graphs.hpp says what is allowed).
TEST(Int8Ops, MatchPyTorchQuantizedKernelsWithinOneStep) {
  EXPECT_EQ(expect_pytorch_int8_cases<ReferenceTarget>(), 7);
  EXPECT_EQ(expect_pytorch_int8_cases<CpuTarget>(), 7);
}

TEST(Int8Recipe, QuantizePerChannelHandValues) {
  // Channel 0: max |w| = 2.55 -> scale 0.02, codes 2.55 / 0.02 = 127.5 -> 128 -> clamped 127,
  // -1 / 0.02 = -50; bias 0.3 / (0.5 * 0.02) = 30. Channel 1 all zeros: scale epsilon, codes 0.
  MapSource src;
  Tensor w = Tensor::empty(DType::f32, {2, 2}), b = Tensor::empty(DType::f32, {2});
  w.data<float>()[0] = 2.55f, w.data<float>()[1] = -1.0f, w.data<float>()[2] = 0, w.data<float>()[3] = 0;
  b.data<float>()[0] = 0.3f, b.data<float>()[1] = 0;
  src.t["w"] = w, src.t["b"] = b;
  weights::Recipe r{"quantize_per_channel", {"w", "b"}, {"wq", "s", "bq"}, {}};
  r.params.set("input_scale", ir::AttrValue(0.5));
  r.params.set("bits", ir::AttrValue(std::int64_t{8}));
  const auto out = weights::apply_recipe(r, [&](const std::string& k) { return src.load(k); });
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data<std::int8_t>()[0], 127);
  EXPECT_EQ(out[0].data<std::int8_t>()[1], -50);
  EXPECT_EQ(out[0].data<std::int8_t>()[2], 0);
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 0.02f);
  EXPECT_EQ(out[2].data<std::int32_t>()[0], 30);
  r.params.set("bits", ir::AttrValue(std::int64_t{9}));
  EXPECT_THROW(weights::apply_recipe(r, [&](const std::string& k) { return src.load(k); }), Error);
}

namespace {
struct Resnet : Int8Model<CpuTarget> {
  Resnet() : Int8Model("models/resnet18") {}
};
}  // namespace

TEST(Int8Quantize, Resnet18CalibrateReportAndRank) {
  Resnet m;
  const runtime::Int8Inputs calib = runtime::int8_inputs("synthetic:4", m.ins, 0, 0, 0);
  const runtime::Int8Inputs eval = runtime::int8_inputs("synthetic:4", m.ins, 0, 0, 1);
  ASSERT_EQ(calib.sets.size(), 4u);
  EXPECT_NE(calib.sets[0][0].data<float>()[0], eval.sets[0][0].data<float>()[0]);  // other draws
  const runtime::Calibration cal = runtime::calibrate(m.c.graph, m.target, m.opt, m.make, calib.sets, {});
  EXPECT_GT(cal.ranges.size(), 20u);
  program::CompileOptions q = m.opt;
  q.int8.ranges = cal.ranges;
  const program::CompiledProgram p = program::compile(m.c.graph, m.target, q);
  EXPECT_EQ(p.stats.pass_counts.find("quantize_int8")->as_int(), 29);  // 20 convolutions, 8 adds, the fc
  {
    // The same int8 program on the reference: the integer ops agree bit for bit, the float
    // islands (max pool, average pool) to float rounding, which may move a code by one step.
    const program::CompiledProgram pr = program::compile(m.c.graph, describe_target<ReferenceTarget>(), q);
    runtime::ProgramRunner rc(p, m.c.weights.get(), runtime::factories_for<CpuTarget>());
    runtime::ProgramRunner rr(pr, m.c.weights.get(), runtime::factories_for<ReferenceTarget>());
    const Tensor a = rc.run(eval.sets[0]).at(0).to(DType::f32), b = rr.run(eval.sets[0]).at(0).to(DType::f32);
    double most = 0, amax = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i)
      most = std::max<double>(most, std::fabs(a.data<float>()[i] - b.data<float>()[i])), amax = std::max<double>(amax, std::fabs(b.data<float>()[i]));
    EXPECT_LE(most, 0.02 * amax) << "CPU and reference int8 logits differ by more than a few output steps";
  }
  const runtime::Int8Report r = runtime::accuracy_report(m.c.graph, m.target, m.opt, q, m.make, eval);
  ASSERT_EQ(r.outputs.size(), 1u);
  // The synthetic weights' logits are nearly flat (top-5 probabilities ~0.01 each), so top-1 flips
  // easily; the logits themselves stay close.
  EXPECT_GT(r.outputs[0].err.cosine(), 0.99);
  EXPECT_EQ(r.outputs[0].rows, 4);
  EXPECT_GE(r.outputs[0].top5_overlap / 4, 0.6);
  ASSERT_EQ(r.layers.size(), 29u);
  for (const auto& l : r.layers) EXPECT_GT(l.own.cosine(), 0.99) << l.node;
  // A layer whose weights have 4 bits ranks first by its own error.
  const std::string victim = r.layers.back().node;
  q.int8.weight_bits[victim] = 4;
  const runtime::Int8Report r3 = runtime::accuracy_report(m.c.graph, m.target, m.opt, q, m.make, eval);
  EXPECT_EQ(r3.layers.front().node, victim);
  // Kept in float: one integer op fewer.
  q.int8.weight_bits.clear();
  q.int8.keep_float = {victim};
  EXPECT_EQ(program::compile(m.c.graph, m.target, q).stats.pass_counts.find("quantize_int8")->as_int(), 28);
  q.int8.keep_float = {"no_such_layer"};
  EXPECT_THROW(program::compile(m.c.graph, m.target, q), Error);
}

TEST(Int8Quantize, ConcatenationBecomesQcat) {
  // The cat_slice fixture: cat(slice(x0), x1). Both operands quantized with their own ranges,
  // rescaled to the output's by qcat; the report compares it with the float cat.
  const Int8Model<CpuTarget> m("ops/cat_slice");
  const program::CompileOptions q = m.int8_options("synthetic:4");
  const auto eval = runtime::int8_inputs("synthetic:4", m.ins, 0, 0, 1);
  const auto& c = m.c;
  const auto& target = m.target;
  const program::CompiledProgram p = program::compile(c.graph, target, q);
  int qcat = 0;
  for (const auto& part : p.partitions)
    for (const auto& n : part.graph.nodes) qcat += n.op_type == "npusim.qcat";
  EXPECT_EQ(qcat, 1);
  const runtime::Int8Report r = runtime::accuracy_report(c.graph, target, m.opt, q, m.make, eval);
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(r.layers[0].op, "qcat");
  EXPECT_GT(r.outputs.at(0).err.cosine(), 0.999);
  EXPECT_LT(r.outputs.at(0).err.rel_l2(), 0.02);
}

TEST(Int8Quantize, BadCalibrationInputsAreRefused) {
  Resnet m;
  const fs::path dir = fs::temp_directory_path() / "npusim_int8_inputs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto refused = [&](const std::string& spec, const std::string& what) {
    try {
      runtime::int8_inputs(spec, m.ins, 0);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(dir.string(), "no input files");
  refused((dir / "missing").string(), "must be a folder");
  refused("synthetic:0", "synthetic:N");
  test::write_text((dir / "notes.txt").string(), "hello");
  refused(dir.string(), "neither an image");
  fs::remove(dir / "notes.txt");
  // A tensor of the wrong shape, and one holding NaN.
  auto npy = [&](const std::string& name, Shape s, float v) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (auto d : s) header += std::to_string(d) + ", ";
    header += "), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::ofstream f(dir / name, std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const auto len = static_cast<std::uint16_t>(header.size());
    f.put(static_cast<char>(len & 0xff)), f.put(static_cast<char>(len >> 8));
    f << header;
    for (std::int64_t i = 0; i < numel(s); ++i) f.write(reinterpret_cast<const char*>(&v), 4);
  };
  npy("a.npy", {1, 3, 8, 8}, 0.5f);
  refused(dir.string(), "shape");
  fs::remove(dir / "a.npy");
  npy("b.npy", {1, 3, 224, 224}, std::nanf(""));
  refused(dir.string(), "NaN");
  fs::remove_all(dir);
}
