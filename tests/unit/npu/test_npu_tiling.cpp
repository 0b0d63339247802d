// The tiler against hand counts (docs/npu-simulation.md, "Formulas"): DMA bytes and transfers
// for GEMM, convolution and attention tilings, MAC-array cycles, the pipeline time, and the
// search's choice when SRAM is ample or scarce.
#include <gtest/gtest.h>

#include "npu_test_util.hpp"

using namespace npusim;
using npu::Order;
using npu::Tiling;

namespace {

npu::Budget ample() { return {std::int64_t{1} << 40, 1}; }

TEST(NpuTiling, GemmBytesByLoopOrder) {
  const npu::Description d = test::test_npu();
  const npu::Workload w = test::gemm_work(256, 512, 1024);
  // n-m-k, K in one tile: each weight tile stays for the whole m loop (read once); A is read
  // again for each of the 4 column blocks.
  npu::TilePlan p = npu::gemm_tiling(w, d, DType::i8, ample(), {}, Tiling{64, 512, 256, Order::nmk, true});
  ASSERT_TRUE(p.feasible);
  EXPECT_EQ(p.dma.activations_in, 256 * 512 * 4);
  EXPECT_EQ(p.dma.weights, 512 * 1024);
  EXPECT_EQ(p.dma.activations_out, 256 * 1024);
  EXPECT_EQ(p.dma.spills, 0);
  EXPECT_EQ(p.load_transfers, 4 * 4 /* A: nm x nn */ + 4 /* B: nn */);
  EXPECT_EQ(p.store_transfers, 16);
  EXPECT_EQ(p.tiles, 16);
  // m-n-k: the other way round.
  p = npu::gemm_tiling(w, d, DType::i8, ample(), {}, Tiling{64, 512, 256, Order::mnk, true});
  EXPECT_EQ(p.dma.activations_in, 256 * 512);
  EXPECT_EQ(p.dma.weights, 512 * 1024 * 4);
  // K split in two: both operands change every iteration (A once per column block, B once per row block).
  p = npu::gemm_tiling(w, d, DType::i8, ample(), {}, Tiling{64, 256, 256, Order::nmk, true});
  EXPECT_EQ(p.dma.activations_in, 256 * 512 * 4);
  EXPECT_EQ(p.dma.weights, 512 * 1024 * 4);
  EXPECT_EQ(p.tiles, 32);
  // k-n-m: every weight tile read once, partial sums (int32) written and read back once per extra K block.
  p = npu::gemm_tiling(w, d, DType::i8, ample(), {}, Tiling{64, 256, 256, Order::knm, true});
  EXPECT_EQ(p.dma.weights, 512 * 1024);
  EXPECT_EQ(p.dma.activations_in, 256 * 512 * 4);
  EXPECT_EQ(p.dma.spills, 2 * (2 - 1) * 256 * 1024 * 4);
  // One tile for everything: each operand once.
  p = npu::gemm_tiling(w, d, DType::i8, ample(), {}, Tiling{256, 512, 1024, Order::nmk, false});
  EXPECT_EQ(p.dma.total(), 256 * 512 + 512 * 1024 + 256 * 1024);
  EXPECT_EQ(p.dma, p.compulsory);
}

TEST(NpuTiling, GemmSramFootprintAndFit) {
  const npu::Description d = test::test_npu();
  const npu::Workload w = test::gemm_work(256, 512, 1024);
  const Tiling t{64, 512, 256, Order::nmk, true};
  // 2 x (A 64x512 + B 512x256 + C 64x256 x 4-byte accumulators).
  const std::int64_t need = 2 * (64 * 512 + 512 * 256 + 64 * 256 * 4);
  EXPECT_EQ(npu::gemm_tiling(w, d, DType::i8, {need, 1}, {}, t).sram_bytes, need);
  EXPECT_FALSE(npu::gemm_tiling(w, d, DType::i8, {need - 1, 1}, {}, t).feasible);
  // Banks: every buffer takes whole banks (4 KiB here): A 32 KiB = 8, B 128 KiB = 32, C 64 KiB = 16, twice.
  EXPECT_EQ(npu::gemm_tiling(w, d, DType::i8, {std::int64_t{1} << 30, 4096}, {}, t).sram_bytes, 2 * (8 + 32 + 16) * 4096);
  EXPECT_EQ(npu::gemm_tiling(w, d, DType::i8, {std::int64_t{1} << 30, 5000}, {}, t).sram_bytes, 2 * (7 + 27 + 14) * 5000);
}

TEST(NpuTiling, GemmMacCyclesPadToTheArray) {
  const npu::Description d = test::test_npu(16, 16);
  // One tile: M * ceil(K/16) * ceil(N/16) + (16 + 16) fill and drain.
  npu::TilePlan p = npu::gemm_tiling(test::gemm_work(64, 64, 64), d, DType::i8, ample(), {}, Tiling{64, 64, 64, Order::nmk, true});
  EXPECT_EQ(p.mac_cycles, 64 * 4 * 4 + 32);
  // K = 40 pads to 48, N = 20 pads to 32.
  p = npu::gemm_tiling(test::gemm_work(64, 40, 20), d, DType::i8, ample(), {}, Tiling{64, 40, 20, Order::nmk, true});
  EXPECT_EQ(p.mac_cycles, 64 * 3 * 2 + 32);
  // Two K tiles of 32 and 8: ceil(32/16) + ceil(8/16) = 3 row passes per column block, 2 tiles.
  p = npu::gemm_tiling(test::gemm_work(64, 40, 16), d, DType::i8, ample(), {}, Tiling{64, 32, 16, Order::nmk, true});
  EXPECT_EQ(p.mac_cycles, 64 * 3 * 1 + 2 * 32);
}

TEST(NpuTiling, SearchMovesEachOperandOnceWhenSramAllows) {
  const npu::Description d = test::test_npu();
  const npu::Workload w = test::gemm_work(256, 512, 1024);
  const npu::TilePlan p = npu::plan_gemm(w, d, DType::i8, ample());
  ASSERT_TRUE(p.feasible);
  EXPECT_EQ(p.dma, p.compulsory);
  EXPECT_EQ(p.dma.total(), 256 * 512 + 512 * 1024 + 256 * 1024);
}

// With little SRAM the chosen tiling re-reads operands; whatever it chose, its bytes are the
// formula's for that tiling (computed here independently).
TEST(NpuTiling, SearchUnderScarceSramMatchesTheFormula) {
  const npu::Description d = test::test_npu();
  const std::int64_t M = 512, K = 1024, N = 2048;
  const npu::Workload w = test::gemm_work(M, K, N);
  const npu::TilePlan p = npu::plan_gemm(w, d, DType::i8, {64 * 1024, 1});
  ASSERT_TRUE(p.feasible);
  const std::int64_t tm = p.shape.a, tk = p.shape.b, tn = p.shape.c;
  const std::int64_t nm = (M + tm - 1) / tm, nn = (N + tn - 1) / tn, nk = (K + tk - 1) / tk;
  std::int64_t fa = 1, fb = 1;
  if (p.shape.order == Order::nmk) fa = (nk == 1 && nm == 1) ? 1 : nn, fb = nk > 1 ? nm : 1;
  if (p.shape.order == Order::mnk) fa = nk > 1 ? nn : 1, fb = (nk == 1 && nn == 1) ? 1 : nm;
  if (p.shape.order == Order::knm) fa = nm == 1 ? 1 : nn, fb = 1;
  EXPECT_EQ(p.dma.activations_in, M * K * fa);
  EXPECT_EQ(p.dma.weights, K * N * fb);
  EXPECT_EQ(p.dma.spills, p.shape.order == Order::knm ? 2 * (nk - 1) * M * N * 4 : 0);
  EXPECT_GT(p.dma.total(), p.compulsory.total());
  EXPECT_LE(p.sram_bytes, 64 * 1024);
}

TEST(NpuTiling, ConvInputRowsCarryTheirHalo) {
  const npu::Description d = test::test_npu();
  // 3x3, stride 1, pad 1 on 8x8: output rows [0, 4) read input rows [0, 5), rows [4, 8) read [3, 8).
  npu::Workload w = test::conv_work(16, 8, 8, 32, 3, 1, 1);
  npu::TilePlan p = npu::conv_tiling(w, d, DType::i8, ample(), {}, Tiling{4, 16, 32, Order::nmk, true});
  ASSERT_TRUE(p.feasible);
  EXPECT_EQ(p.dma.activations_in, (5 + 5) * 8 * 16);
  EXPECT_EQ(p.dma.weights, 32 * 16 * 9);
  EXPECT_EQ(p.dma.activations_out, 32 * 8 * 8);
  // 3x3, stride 2, pad 1 on 8x8 (4x4 output), two rows per tile: [0, 4) and [3, 8): 4 + 5 rows.
  w = test::conv_work(16, 8, 8, 32, 3, 2, 1);
  p = npu::conv_tiling(w, d, DType::i8, ample(), {}, Tiling{2, 16, 32, Order::nmk, true});
  EXPECT_EQ(p.dma.activations_in, (4 + 5) * 8 * 16);
  // Output channels in two blocks with n-m-k: the input is read once per block.
  w = test::conv_work(16, 8, 8, 32, 3, 1, 1);
  p = npu::conv_tiling(w, d, DType::i8, ample(), {}, Tiling{4, 16, 16, Order::nmk, true});
  EXPECT_EQ(p.dma.activations_in, 2 * (5 + 5) * 8 * 16);
  EXPECT_EQ(p.dma.weights, 32 * 16 * 9);
  // MAC cycles: 64 output pixels x ceil(16 * 9 / 16) row passes x ceil(16 / 16) per block, 2 blocks x 2 row tiles.
  EXPECT_EQ(p.mac_cycles, 64 * 9 * 2 + 4 * 32);
}

TEST(NpuTiling, PointwiseConvIsAGemm) {
  const npu::Description d = test::test_npu();
  const npu::Workload c = test::conv_work(64, 16, 16, 128, 1, 1, 0);
  const npu::Workload g = test::gemm_work(16 * 16, 64, 128);
  for (Order o : {Order::nmk, Order::mnk, Order::knm}) {
    const npu::TilePlan pc = npu::conv_tiling(c, d, DType::i8, ample(), {}, Tiling{4, 32, 64, o, true});
    const npu::TilePlan pg = npu::gemm_tiling(g, d, DType::i8, ample(), {}, Tiling{4 * 16, 32, 64, o, true});
    EXPECT_EQ(pc.dma, pg.dma) << npu::order_name(o);
    EXPECT_EQ(pc.mac_cycles, pg.mac_cycles) << npu::order_name(o);
    EXPECT_EQ(pc.load_transfers, pg.load_transfers) << npu::order_name(o);
  }
}

TEST(NpuTiling, AttentionReadsKvOncePerQueryTile) {
  const npu::Description d = test::test_npu();
  // 8 query heads on 2 KV heads: per KV head 4 x 128 = 512 stacked query rows.
  const npu::Workload w = test::attention_work(8, 2, 128, 512, 64, false);
  npu::TilePlan p = npu::attention_tiling(w, d, DType::i8, ample(), {}, Tiling{128, 128, 0, Order::nmk, true});
  ASSERT_TRUE(p.feasible);
  EXPECT_EQ(p.dma.activations_in, 8 * 128 * 64 /* Q once */ + 2 * (2 * 512 * 64) * 4 /* K and V per query tile */);
  EXPECT_EQ(p.dma.activations_out, 8 * 128 * 64);
  EXPECT_EQ(p.tiles, 2 * 4 * 4);
  // One K/V tile holds the sequence: K and V stay for every query tile.
  p = npu::attention_tiling(w, d, DType::i8, ample(), {}, Tiling{128, 512, 0, Order::nmk, true});
  EXPECT_EQ(p.dma.activations_in, 8 * 128 * 64 + 2 * (2 * 512 * 64));
  EXPECT_EQ(p.dma, p.compulsory);
  // MACs on the array: per KV head, rows x (ceil(d/R) * ceil(tkv/C) + ceil(d/C) * ceil(tkv/R)) per kv tile.
  EXPECT_EQ(p.mac_cycles, 2 * (512 * (4 * 32 + 4 * 32) + 4 * 2 * 32));
}

TEST(NpuTiling, AttentionMaskRowsPerQueryTile) {
  const npu::Description d = test::test_npu();
  const npu::Workload w = test::attention_work(8, 2, 128, 512, 64, true);
  // A query tile of 128 stacked rows touches 128 positions; four tiles per KV head re-read them.
  npu::TilePlan p = npu::attention_tiling(w, d, DType::i8, ample(), {}, Tiling{128, 512, 0, Order::nmk, true});
  const std::int64_t qkv = 8 * 128 * 64 + 2 * (2 * 512 * 64);
  EXPECT_EQ(p.dma.activations_in, qkv + 2 * (4 * 128) * 512);
  // One tile of all 512 rows reads each position's mask row once per KV head.
  p = npu::attention_tiling(w, d, DType::i8, ample(), {}, Tiling{512, 512, 0, Order::nmk, true});
  EXPECT_EQ(p.dma.activations_in, qkv + 2 * 128 * 512);
}

TEST(NpuTiling, PipelineTime) {
  npu::Description d = test::test_npu(16, 16, 1 << 20, /*GB/s*/ 1, /*MHz*/ 1000);
  d.dma_latency_ns = 100;
  npu::TilePlan p;
  p.feasible = true;
  p.dma.activations_in = 4000, p.dma.activations_out = 1000;  // 5000 ns of DMA at 1 byte/ns
  p.load_transfers = 3, p.store_transfers = 2;                // + 500 ns of latency
  p.mac_cycles = 8000;                                        // 8000 ns at 1 GHz
  p.tiles = 1;
  p.shape.double_buffered = true;
  EXPECT_DOUBLE_EQ(npu::time_plan(p, d).time_ns, 5500 + 8000);  // one tile: nothing overlaps
  p.tiles = 4;
  EXPECT_DOUBLE_EQ(npu::time_plan(p, d).time_ns, std::max(5500 + 8000 / 4.0, 8000 + 5500 / 4.0));
  p.shape.double_buffered = false;
  EXPECT_DOUBLE_EQ(npu::time_plan(p, d).time_ns, 5500 + 8000);
  p.vector_cycles = 9000;  // the vector unit is the longer compute stage
  EXPECT_DOUBLE_EQ(npu::time_plan(p, d).compute_ns, 9000);
}

TEST(NpuTiling, ResidentOperandsMoveNothing) {
  const npu::Description d = test::test_npu();
  const npu::Workload w = test::gemm_work(256, 512, 1024);
  npu::Residency r;
  r.inputs = {false, true};  // the weight is in the weight cache
  const npu::TilePlan p = npu::gemm_tiling(w, d, DType::i8, ample(), r, Tiling{64, 512, 256, Order::mnk, true});
  EXPECT_EQ(p.dma.weights, 0);
  EXPECT_EQ(p.sram_bytes, 2 * (64 * 512 + 64 * 256 * 4));  // no weight buffer either
  r.outputs = {true};
  EXPECT_EQ(npu::gemm_tiling(w, d, DType::i8, ample(), r, Tiling{64, 512, 256, Order::mnk, true}).dma.activations_out, 0);
}

}  // namespace
