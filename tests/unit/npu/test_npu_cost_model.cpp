// The program-level estimate on fixture models: monotone in SRAM, DMA bandwidth, clock and MAC
// array size; host placement with crossings; weight cache and activation region; the workloads
// read from real kernels; the trace and roofline writers; Pipeline::estimate.
#include <gtest/gtest.h>

#include "../../common/compile_util.hpp"
#include "npu_test_util.hpp"
#include "npusim/npu/report.hpp"
#include "npusim/npu/roofline_svg.hpp"
#include "npusim/npu/trace.hpp"
#include "npusim/pipeline.hpp"
#include "../../common/test_util.hpp"

using namespace npusim;

namespace {

// By value: GCC 13's -Wdangling-reference flags a reference returned from a call whose reference
// parameter was bound to a temporary (compiled("resnet18")).
const program::CompiledProgram& compiled(std::string_view model) {
  static std::map<std::string, program::CompiledProgram, std::less<>> cache;
  auto it = cache.find(model);
  if (it == cache.end())
    it = cache.emplace(std::string(model), test::compile_reference(ir::read_ir_file(test::data("models/" + std::string(model) + "/ir.json")))).first;
  return it->second;
}

double latency(const std::string& model, const npu::Description& d, DType dt = DType::i8) {
  npu::EstimateOptions o;
  o.dtype = dt;
  return npu::estimate(compiled(model), d, o).latency_ns;
}

const char* const models[] = {"resnet18", "qwen2_tiny_prefill", "qwen2_tiny_decode"};

TEST(NpuCostModel, MoreSramIsNeverSlower) {
  for (const char* m : models) {
    double last = std::numeric_limits<double>::infinity();
    for (std::int64_t kib = 16; kib <= 64 * 1024; kib *= 2) {
      const double t = latency(m, test::test_npu(16, 16, kib * 1024));
      EXPECT_LE(t, last * (1 + 1e-12)) << m << " at " << kib << " KiB";
      last = t;
    }
  }
}

TEST(NpuCostModel, MoreBandwidthAndClockAreNeverSlower) {
  for (const char* m : models) {
    double last = std::numeric_limits<double>::infinity();
    for (double gbs : {0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0}) {
      const double t = latency(m, test::test_npu(16, 16, 256 * 1024, gbs));
      EXPECT_LE(t, last * (1 + 1e-12)) << m << " at " << gbs << " GB/s";
      last = t;
    }
    last = std::numeric_limits<double>::infinity();
    for (double mhz : {100.0, 200.0, 400.0, 800.0, 1600.0}) {
      const double t = latency(m, test::test_npu(16, 16, 256 * 1024, 10, mhz));
      EXPECT_LE(t, last * (1 + 1e-12)) << m << " at " << mhz << " MHz";
      last = t;
    }
  }
}

TEST(NpuCostModel, BiggerMacArrayIsNeverSlowerOnLargeGemms) {
  const npu::Workload w = test::gemm_work(1024, 1024, 1024);
  double last = std::numeric_limits<double>::infinity();
  for (std::int64_t side : {8, 16, 32, 64, 128}) {
    const npu::Description d = test::test_npu(side, side, 4 << 20, 1000);
    const npu::TilePlan p = npu::plan_gemm(w, d, DType::i8, {d.sram_bytes, 1});
    ASSERT_TRUE(p.feasible);
    const double t = npu::time_plan(p, d).time_ns;
    EXPECT_LT(t, last) << side << "x" << side;
    last = t;
  }
  // And on a whole convolutional model.
  EXPECT_LE(latency("resnet18", test::test_npu(64, 64, 4 << 20, 1000)), latency("resnet18", test::test_npu(16, 16, 4 << 20, 1000)));
}

TEST(NpuCostModel, DramTrafficOfAGemmProgramIsAnalytic) {
  // ResNet-18's classifier: linear 512 -> 1000 on one row; with ample SRAM every byte once:
  // input 512, weight 512 x 1000 (+ bias 1000), output 1000, at one byte per value.
  const npu::Estimate e = npu::estimate(compiled("resnet18"), test::test_npu(16, 16, 64 << 20, 100), {DType::i8});
  const npu::KernelEstimate* lin = nullptr;
  for (const auto& k : e.kernels)
    if (k.kind == "linear") lin = &k;
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->dma.weights, 512 * 1000 + 1000);
  EXPECT_EQ(lin->dma.activations_out, 1000);
  EXPECT_EQ(lin->macs, 512 * 1000);
}

TEST(NpuCostModel, WorkloadsReadFromRealKernels) {
  const program::CompiledProgram& p = compiled("qwen2_tiny_prefill");
  bool attention = false, linear = false;
  for (const auto& part : p.partitions)
    for (const Kernel& k : part.kernels) {
      const npu::Workload w = npu::analyze_kernel(part.graph, k, DType::i8);
      if (k.kind == "attention") {
        attention = true;
        EXPECT_EQ(w.model, npu::Model::attention);
        EXPECT_EQ(w.attention.heads % w.attention.kv_heads, 0);
        EXPECT_EQ(w.macs, 2 * w.attention.batch * w.attention.heads * w.attention.sq * w.attention.skv * w.attention.d);
        EXPECT_GT(w.vector.transcendental, 0) << "softmax exp";
      }
      if (k.kind == "linear") {
        linear = true;
        EXPECT_EQ(w.model, npu::Model::gemm);
        EXPECT_EQ(w.macs, w.gemm.m * w.gemm.k * w.gemm.n);
        EXPECT_TRUE(w.inputs.at(static_cast<std::size_t>(w.gemm.b)).weight);
      }
      if (k.kind == "embedding") {
        // A gather reads the rows it needs, not the table.
        EXPECT_EQ(w.inputs.at(0).bytes, w.outputs.at(0).bytes);
        EXPECT_GT(w.gathers, 0);
      }
    }
  EXPECT_TRUE(attention && linear);
}

TEST(NpuCostModel, UnsupportedKernelsRunOnTheHostWithCrossings) {
  npu::Description d = test::test_npu();
  std::erase(d.op_classes, ops::OpClass::indexing);
  const npu::Estimate e = npu::estimate(compiled("qwen2_tiny_decode"), d, {DType::i8});
  int host = 0;
  for (const auto& k : e.kernels)
    if (k.placement == npu::Placement::host) {
      ++host;
      EXPECT_EQ(k.host_reason, "op class 'indexing' not supported");
      EXPECT_EQ(k.bound, npu::Bound::host);
      EXPECT_GT(k.transfer_ns, 0) << k.name << ": a host kernel between NPU kernels pays for its crossings";
    }
  EXPECT_GT(host, 0);
  EXPECT_EQ(host, e.host_kernels);
  EXPECT_GT(e.transfer_bytes, 0);
  // A dtype the NPU does not compute in puts every kernel on the host.
  d.dtypes = {DType::i8};
  const npu::Estimate f = npu::estimate(compiled("resnet18"), d, {DType::f16});
  EXPECT_EQ(f.npu_kernels, 0);
  EXPECT_GT(f.host_kernels, 0);
  EXPECT_NE(f.kernels.front().host_reason.find("dtype f16 not supported"), std::string::npos) << f.kernels.front().host_reason;
}

TEST(NpuCostModel, WeightCacheAndActivationRegionCutDramTraffic) {
  npu::Description d = test::test_npu(16, 16, 64 << 20, 10);
  const npu::Estimate base = npu::estimate(compiled("resnet18"), d, {DType::i8});
  d.weight_cache_bytes = 32 << 20;  // every ResNet-18 int8 weight fits
  const npu::Estimate cached = npu::estimate(compiled("resnet18"), d, {DType::i8});
  EXPECT_GT(base.dram.weights, 11'000'000);
  EXPECT_EQ(cached.dram.weights, 0);
  EXPECT_LT(cached.latency_ns, base.latency_ns);
  d.activation_bytes = 8 << 20;
  const npu::Estimate on_chip = npu::estimate(compiled("resnet18"), d, {DType::i8});
  EXPECT_LT(on_chip.dram.activations_in, cached.dram.activations_in);
  // What is left: the image in (with the stem's halo rows where it is tiled), the logits out.
  EXPECT_GE(on_chip.dram.activations_in, 3 * 224 * 224);
  EXPECT_LT(on_chip.dram.activations_in, 2 * 3 * 224 * 224);
  EXPECT_EQ(on_chip.dram.activations_out, 1000);
}

TEST(NpuCostModel, TotalsAddUp) {
  const npu::Estimate e = npu::estimate(compiled("qwen2_tiny_prefill"), npu::find_description("rk3588").description, {DType::i8});
  double sum = 0;
  npu::Traffic t;
  double prev_end = 0;
  for (const auto& k : e.kernels) {
    EXPECT_DOUBLE_EQ(k.start_ns, prev_end) << "kernels run one after another";
    prev_end = k.end_ns();
    sum += k.time_ns;
    if (k.placement == npu::Placement::npu) t += k.dma;
  }
  EXPECT_NEAR(sum, e.latency_ns, 1e-6 * e.latency_ns);
  EXPECT_EQ(t, e.dram);
  EXPECT_GT(e.mac_utilisation, 0);
  EXPECT_LE(e.mac_utilisation, 1);
  EXPECT_NE(npu::totals_text(e).find("MAC utilisation"), std::string::npos);
}

TEST(NpuCostModel, TraceHasDmaAndComputeLanes) {
  const npu::Estimate e = npu::estimate(compiled("resnet18"), npu::find_description("rk3588").description, {DType::i8});
  const ir::json j = ir::json::parse(npu::trace_json(e, "test"));
  std::map<int, std::string> lanes;
  std::map<int, int> events;
  for (const auto& ev : j.at("traceEvents")) {
    if (ev.at("ph") == "M" && ev.at("name") == "thread_name") lanes[ev.at("tid").get<int>()] = ev.at("args").at("name").get<std::string>();
    if (ev.at("ph") == "X") {
      ++events[ev.at("tid").get<int>()];
      EXPECT_GE(ev.at("dur").get<double>(), 0);
    }
  }
  EXPECT_EQ(lanes[1], "NPU DMA");
  EXPECT_EQ(lanes[2], "NPU compute");
  EXPECT_GT(events[1], 10);
  EXPECT_GT(events[2], 10);
}

TEST(NpuCostModel, RooflineSvg) {
  const npu::Estimate e = npu::estimate(compiled("resnet18"), npu::find_description("rk3588").description, {DType::i8});
  const std::string svg = npu::roofline_svg(e, "resnet18 <rk3588>");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"roof\""), std::string::npos);
  EXPECT_NE(svg.find("resnet18 &lt;rk3588&gt;"), std::string::npos);
  std::size_t circles = 0;
  for (std::size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_GE(circles, static_cast<std::size_t>(e.npu_kernels));
}

TEST(NpuCostModel, PipelineEstimate) {
  Pipeline<ReferenceTarget, F32> p(test::data("models/resnet18/ir.json"));
  const npu::Description d = npu::find_description("ideal").description;
  const npu::Estimate e = p.estimate(d, {DType::i8});
  EXPECT_EQ(e.npu, "ideal");
  EXPECT_GT(e.latency_ns, 0);
  EXPECT_EQ(e.host_kernels, 0);
  p.attach_npu(d, DType::i8);
  test::TempDir dir;
  p.save(dir.file("r18.npubin"));
  const program::CompiledProgram back = program::load(dir.file("r18.npubin"));
  ASSERT_TRUE(back.npu);
  EXPECT_EQ(npu::estimate(back, npu::stored(back)->description, {npu::stored(back)->dtype}).latency_ns, e.latency_ns);
}

}  // namespace
