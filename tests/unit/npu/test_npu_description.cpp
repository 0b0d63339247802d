// NPU descriptions: the bundled ones read, carry their sources and round-trip through the
// canonical JSON; schema violations are typed errors naming the file, the field, what was
// expected and what was found; lookup by name lists the bundled ones when it fails.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "../../common/compile_util.hpp"
#include "npu_test_util.hpp"
#include "../../common/test_util.hpp"

using namespace npusim;

namespace {

const std::vector<std::string> bundled = {"edgetpu", "hailo8", "ideal", "rk3588"};

TEST(NpuDescription, BundledDescriptionsReadAndRoundTrip) {
  EXPECT_EQ(npu::bundled_names(), bundled);
  for (const auto& name : bundled) {
    SCOPED_TRACE(name);
    const npu::FoundDescription f = npu::find_description(name);
    EXPECT_EQ(f.description.name, name);
    EXPECT_FALSE(f.description.sources.empty()) << "every bundled figure needs a source";
    EXPECT_GT(f.description.peak_macs_per_s(f.description.dtypes.front()), 0) << "the first dtype is the native one: the MAC array computes in it";
    EXPECT_EQ(npu::parse_description(npu::to_json(f.description), "canonical"), f.description);
    EXPECT_EQ(npu::find_description(f.path).description, f.description);  // by path too
  }
}

TEST(NpuDescription, PublishedPeakRates) {
  // The peak rates the bundled descriptions reproduce (TOPS = 2 x MACs x clock).
  auto tops = [](const char* n) { return 2 * npu::find_description(n).description.peak_macs_per_s(DType::i8) * 1e-12; };
  EXPECT_NEAR(tops("edgetpu"), 4.0, 0.15);
  EXPECT_NEAR(tops("rk3588"), 6.0, 0.2);
  EXPECT_NEAR(tops("hailo8"), 26.0, 1.0);
}

TEST(NpuDescription, UnknownNameListsTheBundledOnes) {
  NPUSIM_EXPECT_ERROR(npu::find_description("tpu9"), "unknown NPU description 'tpu9'", "edgetpu", "hailo8", "ideal", "rk3588");
  NPUSIM_EXPECT_ERROR(npu::find_description("/nonexistent/npu.json"), "/nonexistent/npu.json", "cannot open");
}

// The ideal description's text with one edit applied.
std::string edited(const std::string& from, const std::string& to) {
  std::string s = test::read_text(npu::find_description("ideal").path);
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

void expect_field_error(const std::string& text, const std::string& field, std::initializer_list<const char*> fragments) {
  try {
    npu::parse_description(text, "bad.json");
    ADD_FAILURE() << "expected a DescriptionError for " << field;
  } catch (const npu::DescriptionError& e) {
    EXPECT_EQ(e.field(), field);
    EXPECT_EQ(e.code(), ErrorCode::attr);
    EXPECT_EQ(e.context().file, "bad.json");
    const std::string msg = e.what();
    EXPECT_NE(msg.find("field '" + field + "'"), std::string::npos) << msg;
    for (const char* f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "lacks '" << f << "': " << msg;
  }
}

TEST(NpuDescription, SchemaErrorsNameFieldExpectedAndFound) {
  expect_field_error(edited("\"bandwidth_gb_per_s\": 256, ", ""), "dma.bandwidth_gb_per_s", {"missing"});
  expect_field_error(edited("\"bandwidth_gb_per_s\": 256", "\"bandwidth_gb_per_s\": -3"), "dma.bandwidth_gb_per_s",
                     {"must be positive", "expected a number in [0.001, 100000] GB/s", "found -3"});
  expect_field_error(edited("\"dtypes\": [\"i8\"", "\"dtypes\": [\"i3\""), "dtypes[0]", {"unknown dtype", "f32, f16, bf16, i16, i8", "found \"i3\""});
  expect_field_error(edited("\"movement\"", "\"teleport\""), "op_classes[1]", {"unknown op class", "found \"teleport\""});
  expect_field_error(edited("\"clock_mhz\"", "\"clock_mhzz\""), "clock_mhzz", {"unknown field"});
  expect_field_error(edited("\"clock_mhz\": 1000", "\"clock_mhz\": \"fast\""), "clock_mhz", {"must be a number", "found \"fast\""});
  expect_field_error(edited("\"i8\": {\"rows\": 64, \"columns\": 64}", "\"i8\": {\"rows\": 64, \"columns\": 0}"), "mac_array.i8.columns", {"must be positive"});
  expect_field_error(edited("\"i8\": {\"rows\": 64,", "\"i8\": {\"rows\": 1000000000,"), "mac_array.i8.rows", {"too large", "[1, 65536]"});
  expect_field_error(edited("\"dtypes\": [\"i8\", ", "\"dtypes\": ["), "mac_array.i8", {"does not list"});
  expect_field_error(edited("\"weight_cache_bytes\": 0", "\"weight_cache_bytes\": 67108864"), "sram.weight_cache_bytes", {"leaves no working memory"});
  expect_field_error(edited("\"schema\": \"npusim-npu-1\"", "\"schema\": \"npusim-npu-9\""), "schema", {"unknown schema"});
  NPUSIM_EXPECT_ERROR(npu::parse_description("{\"schema\": ", "bad.json"), "bad.json", "invalid JSON");
}

TEST(NpuDescription, FiguresBeyondWhatAChipCanHaveAreRefused) {
  // Finite but absurd figures printed "inf ms" or 60-digit latencies (issue 39): each field is
  // bounded by npu::ranges, and named with its range and unit.
  const std::tuple<const char*, const char*, const char*, std::vector<const char*>> cases[] = {
      {"\"clock_mhz\": 1000", "\"clock_mhz\": 1e30", "clock_mhz", {"is too large", "[1, 10000] MHz", "found 1e+30"}},
      {"\"clock_mhz\": 1000", "\"clock_mhz\": 0.5", "clock_mhz", {"is too small"}},
      {"\"bandwidth_gb_per_s\": 256", "\"bandwidth_gb_per_s\": 1e-300", "dma.bandwidth_gb_per_s", {"is too small", "GB/s"}},
      {"\"bandwidth_gb_per_s\": 256", "\"bandwidth_gb_per_s\": 1e9", "dma.bandwidth_gb_per_s", {"is too large", "100000] GB/s"}},
      {"\"latency_ns\": 0", "\"latency_ns\": 1e300", "dma.latency_ns", {"is too large", "[0, 1000000] ns"}},
      {"\"latency_ns\": 0", "\"latency_ns\": -1", "dma.latency_ns", {"must not be negative"}},
      {"\"gflops\": 100", "\"gflops\": 1e-200", "host.gflops", {"is too small", "GFLOP/s"}},
      {"\"transfer_latency_us\": 0", "\"transfer_latency_us\": 1e12", "host.transfer_latency_us", {"is too large", " us"}},
      {"\"transcendental_ops\": 1", "\"transcendental_ops\": 1e9", "vector.transcendental_ops", {"is too large"}},
      {"\"bytes\": 67108864", "\"bytes\": 1125899906842624", "sram.bytes", {"is too large", "bytes"}},
  };
  for (const auto& [from, to, field, fragments] : cases) {
    SCOPED_TRACE(to);
    try {
      npu::parse_description(edited(from, to), "bad.json");
      ADD_FAILURE() << "accepted " << to;
    } catch (const npu::DescriptionError& e) {
      EXPECT_EQ(e.field(), field);
      for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "lacks '" << f << "': " << e.what();
    }
  }
}

TEST(NpuDescription, ProgramRecordSurvivesTheNpubin) {
  // A small program with a description attached: saved, loaded, equal; the payload is the same
  // bytes again; a program without one has none after loading.
  const npu::Description d = npu::find_description("rk3588").description;
  program::CompiledProgram p = test::compile_reference(ir::read_ir_file(test::data("ops/relu/ir.json")));
  const std::string plain = program::serialize(p);
  EXPECT_FALSE(program::deserialize(plain).npu);
  npu::attach(p, d, DType::i8);
  const std::string with = program::serialize(p);
  const program::CompiledProgram back = program::deserialize(with);
  ASSERT_TRUE(back.npu);
  EXPECT_EQ(*back.npu, *p.npu);
  EXPECT_EQ(program::serialize(back), with);
  const auto st = npu::stored(back, "m.npubin");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->description, d);
  EXPECT_EQ(st->dtype, DType::i8);
  // A damaged stored description is an error naming the program.
  program::CompiledProgram broken = back;
  broken.npu->description = "{\"schema\": \"npusim-npu-1\"}";
  NPUSIM_EXPECT_ERROR(npu::stored(broken, "m.npubin"), "m.npubin (stored NPU description)", "field 'name'", "missing");
}

}  // namespace
