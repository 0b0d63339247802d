// Per-op micro-benchmarks of the CPU target's own kernels, at Qwen2.5-1.5B and ResNet shapes.
// Every kernel runs on the shared thread pool with all its threads (cpu::max_threads()); packing,
// binding and allocation happen before the timed loop, which calls only the kernel.
//
//   GEMV decode    cpu::gemm, M = 1, K = 1536, N = 8960 (the MLP up/gate projection): B/s of
//                  weights read. "hot": one weight copy, re-read every iteration (it fits in a
//                  large L3); "cold": iterations rotate over enough copies (>= 384 MiB in all) that
//                  the weights come from DRAM, as they do in a 28-layer decode step.
//   GEMV decode Q  the same product with q8_0 / q4_0 weights (cpu::qgemv: the activation quantized
//                  per block of 32, int8 dot products): B/s of packed weights read (8.5 and 4.5
//                  bits per weight), hot and cold as above.
//   GEMM prefill   cpu::gemm, M = 128, same weights: FLOP/s (2 M N K). bf16 weights with bf16
//                  activations take the AMX path where the CPU and OS allow it, else AVX-512 BF16
//                  dot products where the CPU has them (label says which).
//   Conv           the conv2d kernel as the target binds it (cpu::bind_conv, bias + relu as a fused
//                  conv-bn-relu), batch 1, ResNet shapes: f32 (pixel blocks) and bf16 (AMX tiles
//                  where the CPU has them, else AVX-512 BF16 dot products where it has those, 3x3
//                  stride-1 layers by Winograd F(2x2, 3x3) on them unless NPUSIM_NO_WINOGRAD=1; the
//                  label says which): FLOP/s (2 Cout Cin kh kw OH OW, the direct convolution's
//                  count also for Winograd, which multiplies 2.25x less).
//                  "_blocked": f32 with channel-blocked input and output (cpu::blocked_conv).
//                  ConvGemmOnly: cpu::conv_gemm alone on prebuilt tiles.
//   Attention      the decode attention kernel (cpu::bind_attention, as the fused attention
//                  pattern binds it): GQA 12 query / 2 KV heads, head_dim 128, bf16 KV cache of
//                  2048 slots with the mask marking `filled` of them: B/s of K/V rows read.
//
// Conv and attention are bound through a hand-built cpu::Ctx (a two- or five-tensor graph, its
// buffer plan and caller-owned storage), exactly as the CPU executor binds a kernel.
#include <benchmark/benchmark.h>

#include <cstring>
#include <functional>
#include <random>

#include "npusim/npusim.hpp"
#include "bound_kernel.hpp"
#include "npusim/cpu.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/target/cpu/compute/gemm_q.hpp"
#include "npusim/target/cpu/compute/gemv_q.hpp"

using namespace npusim;

namespace {

constexpr std::int64_t kHidden = 1536, kInter = 8960;  // Qwen2.5-1.5B

void fill_random(float* p, std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  for (std::size_t i = 0; i < n; ++i) p[i] = d(rng);
}

// f32 values stored as `dt` (f32 or bf16). Plain loops: GCC 12 warns (false positive) when
// cpu::store_row is inlined here with constant sizes.
void store_as(DType dt, const float* src, void* dst, std::int64_t n) {
  if (dt == DType::bf16) {
    auto* d = static_cast<std::uint16_t*>(dst);
    for (std::int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16_bits(src[i]);
  } else {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  }
}

// n random values stored as `dt` (f32 or bf16).
cpu::AlignedBuf random_buf(DType dt, std::int64_t n, float scale, unsigned seed) {
  std::vector<float> f(static_cast<std::size_t>(n));
  fill_random(f.data(), f.size(), scale, seed);
  cpu::AlignedBuf b = cpu::AlignedBuf::make(static_cast<std::size_t>(n) * dtype_size(dt));
  store_as(dt, f.data(), b.p.get(), n);
  return b;
}

// The GEMM candidate bind_linear's gemm() runs (candidates.hpp).
std::string gemm_path(std::int64_t M, DType w, DType a) {
  const cpu::GemmProblem p{M, a, w, w == DType::bf16, false};
  return std::string(cpu::candidate_infos<cpu::gemm_candidates>()[cpu::choose<cpu::gemm_candidates>(p)].name);
}

// y[M, N] = x[M, K] W[N, K]^T, as bind_linear sets it up. `copies` > 1: rotate over that many
// packed copies of the weights (cold weights).
void run_gemm(benchmark::State& st, std::int64_t M, std::int64_t K, std::int64_t N, DType dt, int copies) {
  const int threads = cpu::max_threads();
  cpu::AlignedBuf w = random_buf(dt, N * K, 0.05f, 1);
  std::vector<cpu::PackedB> packed;
  packed.push_back(cpu::pack_b(w.p.get(), dt, K, N, true));
  w = {};
  for (int i = 1; i < copies; ++i) {
    cpu::PackedB c = packed[0];
    c.data = cpu::AlignedBuf::make(packed[0].data.bytes);
    std::memcpy(c.data.p.get(), packed[0].data.p.get(), c.data.bytes);
    packed.push_back(std::move(c));
  }
  cpu::AlignedBuf x = random_buf(dt, M * K, 1.0f, 2), y = cpu::AlignedBuf::make(static_cast<std::size_t>(M * N) * dtype_size(dt));
  const cpu::GemmScratch lay = cpu::GemmScratch::layout(M, K, N);
  cpu::AlignedBuf scratch = cpu::AlignedBuf::make(lay.bytes());
  const cpu::AView a{x.p.get(), dt, K, false};
  const cpu::CView cv{y.p.get(), dt, N, false};
  const cpu::Epilogue ep{};
  cpu::gemm(a, M, packed[0], cv, ep, lay, scratch.p.get());  // warm-up (pool threads, AMX permission)
  std::size_t i = 0;
  for (auto _ : st) {
    cpu::gemm(a, M, packed[i], cv, ep, lay, scratch.p.get());
    benchmark::ClobberMemory();
    if (++i == packed.size()) i = 0;
  }
  const double wbytes = static_cast<double>(packed[0].data.bytes);
  if (M <= 4) st.counters["B/s"] = benchmark::Counter(wbytes, benchmark::Counter::kIsIterationInvariantRate);  // weights read
  else st.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
  st.counters["weight_MiB"] = wbytes / (1 << 20);
  st.SetLabel(gemm_path(M, dt, dt) + (copies > 1 ? ", " + std::to_string(copies) + " weight copies (cold)" : ", hot"));
}

void BM_GemvDecode(benchmark::State& st, DType dt, bool cold) {
  const std::size_t bytes = static_cast<std::size_t>(kHidden * kInter) * dtype_size(dt);
  const int copies = cold ? static_cast<int>((std::size_t{384} << 20) / bytes + 1) : 1;
  run_gemm(st, 1, kHidden, kInter, dt, copies);
}

void BM_GemmPrefill(benchmark::State& st, DType dt) { run_gemm(st, 128, kHidden, kInter, dt, 1); }

// N rows of K random weights packed as f's blocks (row n from seed n: the same bytes every run).
cpu::AlignedBuf packed_random_rows(quant::BlockFormat f, std::int64_t K, std::int64_t N) {
  const std::size_t rb = quant::row_bytes(f, K);
  cpu::AlignedBuf w = cpu::AlignedBuf::make(rb * static_cast<std::size_t>(N));
  std::vector<float> wf(static_cast<std::size_t>(K));
  for (std::int64_t n = 0; n < N; ++n) {
    fill_random(wf.data(), wf.size(), 0.05f, static_cast<unsigned>(n));
    quant::quantize_row(f, wf, w.p.get() + static_cast<std::size_t>(n) * rb);
  }
  return w;
}

// The same decode GEMV with q8_0 / q4_0 weights (cpu::qgemv, docs/quantization.md): the activation
// quantized per block, then the rows split over the pool's threads. B/s of packed weights read, to
// set beside the bf16 GEMV's.
void BM_GemvDecodeQ(benchmark::State& st, quant::BlockFormat f, bool cold, bool bf16_unpack = false) {
  const std::int64_t K = kHidden, N = kInter;
  const std::size_t rb = quant::row_bytes(f, K), bytes = rb * static_cast<std::size_t>(N);
  std::vector<cpu::AlignedBuf> copies(cold ? (std::size_t{384} << 20) / bytes + 1 : 1);
  copies[0] = packed_random_rows(f, K, N);
  for (std::size_t i = 1; i < copies.size(); ++i) {
    copies[i] = cpu::AlignedBuf::make(bytes);
    std::memcpy(copies[i].p.get(), copies[0].p.get(), bytes);
  }
  std::vector<float> x(static_cast<std::size_t>(K)), y(static_cast<std::size_t>(N));
  fill_random(x.data(), x.size(), 1.0f, 2);
  cpu::qgemv::QActivation a;
  const int threads = cpu::max_threads();
  std::function<void(const std::byte*)> step = [&](const std::byte* w) {
    cpu::qgemv::quantize_activation(f, x.data(), K, a);
    cpu::parallel_for(N, 64, [&](std::int64_t b, std::int64_t e) { cpu::qgemv::gemv(f, w, a, b, e, y.data()); });
  };
#if defined(NPUSIM_CPU_QGEMV_BF16)
  cpu::qgemv::BActivation ab;
  if (bf16_unpack)
    step = [&](const std::byte* w) {
      cpu::qgemv::bf16_activation(x.data(), K, ab);
      cpu::parallel_for(N, 64, [&](std::int64_t b, std::int64_t e) { cpu::qgemv::gemv_bf16_unpack(f, w, ab, b, e, y.data()); });
    };
#else
  if (bf16_unpack) {
    st.SkipWithError("no AVX-512 BF16 in this build");
    return;
  }
#endif
  step(copies[0].p.get());
  std::size_t i = 0;
  for (auto _ : st) {
    step(copies[i].p.get());
    benchmark::ClobberMemory();
    if (++i == copies.size()) i = 0;
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(bytes));
  st.counters["threads"] = threads;
  st.counters["weight_MiB"] = static_cast<double>(bytes) / (1 << 20);
  st.SetLabel(std::string(quant::to_string(f)) + (bf16_unpack ? ", bf16 unpack + vdpbf16ps" : cpu::qgemv::vnni_available() ? ", AVX-512 VNNI" : ", portable") +
              (cold ? ", cold" : ", hot"));
}

// The prefill GEMM with q8_0 / q4_0 weights (cpu::qgemm, docs/quantization.md) at
// BM_GemmPrefill's shape: the 128 activation rows quantized per block, then the panels of 16 weight
// rows split over the pool's threads. FLOP/s to set beside the bf16 GEMM's.
void BM_GemmPrefillQ(benchmark::State& st, quant::BlockFormat f) {
  const std::int64_t M = 128, K = kHidden, N = kInter;
  const cpu::AlignedBuf w = packed_random_rows(f, K, N);
  std::vector<float> x(static_cast<std::size_t>(M * K)), y(static_cast<std::size_t>(M * N));
  fill_random(x.data(), x.size(), 1.0f, 3);
  cpu::AlignedBuf mem = cpu::AlignedBuf::make(cpu::qgemm::QRows::bytes(M, K));
  const auto rows = cpu::qgemm::QRows::in(f, M, K, mem.p.get());
  auto step = [&] {
    cpu::parallel_for(M, 4, [&](std::int64_t lo, std::int64_t hi) {
      cpu::qgemm::quantize_rows(rows, lo, hi, [&](std::int64_t m, float* dst) { std::memcpy(dst, x.data() + m * K, static_cast<std::size_t>(K) * 4); });
    });
    cpu::parallel_for(cpu::qgemm::panels(N), 4, [&](std::int64_t g0, std::int64_t g1) {
      cpu::qgemm::gemm(w.p.get(), N, rows, g0, g1, [&](std::int64_t m0, int r, std::int64_t n0, std::int64_t cols, const float* out, std::int64_t ld) {
        for (int i = 0; i < r; ++i) std::memcpy(y.data() + (m0 + i) * N + n0, out + i * ld, static_cast<std::size_t>(cols) * 4);
      });
    });
  };
  step();
  for (auto _ : st) {
    step();
    benchmark::ClobberMemory();
  }
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = cpu::max_threads();
  st.SetLabel(std::string(quant::to_string(f)) + (cpu::qgemv::vnni_available() ? ", AVX-512 VNNI" : ", portable"));
}

// A kernel bound the way CpuExecutor binds one (tests/common/bound_kernel.hpp), with random inputs.
struct Bound : test::BoundKernel {
  void fill(ir::TensorId t, float scale, unsigned seed) {
    const std::int64_t n = numel(g.tensor(t).shape);
    std::vector<float> f(static_cast<std::size_t>(n));
    fill_random(f.data(), f.size(), scale, seed);
    store_as(storage(t), f.data(), ptr(t), n);
  }
  template <class B>
  void bind(B&& b) {
    BoundKernel::bind("bench", std::forward<B>(b));
  }
};

// conv2d k x k (pad k / 2), stride s, Cin -> Cout, H x W input, + bias + relu, activations and
// weights in `dt`: f32 takes pixel blocks (AVX-512), bf16 AMX tiles or else the dot products where
// available, f16 the f32 pixel blocks on a widened input (k > 1) or im2col + conv_gemm.
void BM_Conv(benchmark::State& st, std::int64_t Cin, std::int64_t Cout, std::int64_t H, std::int64_t k, std::int64_t s, DType dt, bool blocked = false) {
  Bound b;
  const std::int64_t OH = (H + 2 * (k / 2) - k) / s + 1;
  const ir::TensorId x = b.add("x", {1, Cin, H, H}, dt), y = b.add("y", {1, Cout, OH, OH}, dt);
  if (blocked) b.blocked = {cpu::blockable({1, Cin, H, H}), cpu::blockable({1, Cout, OH, OH})};
  b.fill(x, 1.0f, 3);
  Tensor wf = Tensor::empty(DType::f32, {Cout, Cin, k, k});
  fill_random(wf.data<float>(), static_cast<std::size_t>(wf.numel()), 0.05f, 4);
  Tensor wt = wf.to(dt);
  auto bias = std::make_shared<std::vector<float>>(static_cast<std::size_t>(Cout), 0.01f);
  ops::Conv2d::Attrs at;
  at.padding = {k / 2, k / 2};
  at.stride = {s, s};
  b.bind([&](cpu::Ctx& c) { return cpu::bind_conv(c, x, wt, bias, y, at, true); });
  b.fn();
  for (auto _ : st) {
    b.fn();
    benchmark::ClobberMemory();
  }
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(Cout * Cin * k * k * OH * OH), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = cpu::max_threads();
  // The candidate bind_conv runs (kernels/conv.hpp).
  const cpu::ConvGeom g{1, Cin, H, H, Cout, k, k, OH, OH, 1, s, s, k / 2, k / 2, 1, 1};
  const bool bin = blocked && b.blocked.at(x), bout = blocked && b.blocked.at(y);
  const auto cand = cpu::candidate_infos<cpu::conv_candidates>()[cpu::choose_conv(cpu::ConvProblem{g, dt, dt, bin, bout})];
  st.SetLabel(std::string(cand.name) + ": " + std::string(cand.what) + ", " + std::string(dtype_name(dt)));
}

// Kept out of line with unknown arguments: GCC 12 reports a false
// -Waggressive-loop-optimizations when pack_strips is specialised for constant sizes. (Clang has
// no noipa and no such warning: noinline there.)
#if defined(__clang__)
#define NPUSIM_BENCH_OPAQUE [[gnu::noinline]]
#else
#define NPUSIM_BENCH_OPAQUE [[gnu::noipa]]
#endif
NPUSIM_BENCH_OPAQUE cpu::PackedStrips pack_conv_weights(const void* w, std::int64_t rows, std::int64_t K) { return cpu::pack_strips(w, DType::f32, rows, K); }

// The conv GEMM alone: C[Cout][P] = W[Cout][Cin*9] . tiles[Cin*9][P], tiles already built.
void BM_ConvGemmOnly(benchmark::State& st, std::int64_t C, std::int64_t H) {
  const std::int64_t K = C * 9, P = H * H;
  cpu::AlignedBuf w = random_buf(DType::f32, C * K, 0.05f, 5);
  const cpu::PackedStrips strips = pack_conv_weights(w.p.get(), C, K);
  cpu::AlignedBuf tiles = cpu::AlignedBuf::make(cpu::conv_tiles_bytes(K, P));
  fill_random(tiles.as<float>(), tiles.bytes / 4, 1.0f, 6);
  cpu::AlignedBuf out = cpu::AlignedBuf::make(static_cast<std::size_t>(C * P) * 4), scratch = cpu::AlignedBuf::make(cpu::conv_gemm_scratch_bytes());
  std::vector<float> bias(static_cast<std::size_t>(C), 0.01f);
  auto call = [&] { cpu::conv_gemm(strips, tiles.as<float>(), P, out.p.get(), DType::f32, P, bias.data(), true, scratch.p.get()); };
  call();
  for (auto _ : st) {
    call();
    benchmark::ClobberMemory();
  }
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(C * K * P), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = cpu::max_threads();
  st.SetLabel("conv_gemm only, f32");
}

// Decode attention: q [1, 12, 1, 128], K/V cache [1, 2, 2048, 128] bf16, mask [1, 1, 1, 2048]
// bf16 with `filled` slots 0 and the rest the dtype's lowest value (HF's "not filled").
void BM_AttentionDecode(benchmark::State& st, std::int64_t filled) {
  constexpr std::int64_t H = 12, Hk = 2, D = 128, S = 2048;
  const DType dt = DType::bf16;
  Bound b;
  const ir::TensorId q = b.add("q", {1, H, 1, D}, dt), k = b.add("k", {1, Hk, S, D}, dt), v = b.add("v", {1, Hk, S, D}, dt),
                     m = b.add("mask", {1, 1, 1, S}, dt), y = b.add("y", {1, H, 1, D}, dt);
  b.fill(q, 1.0f, 7), b.fill(k, 1.0f, 8), b.fill(v, 1.0f, 9);
  std::vector<float> mask(static_cast<std::size_t>(S), std::numeric_limits<float>::lowest());
  std::fill(mask.begin(), mask.begin() + filled, 0.0f);
  store_as(dt, mask.data(), b.ptr(m), S);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  b.bind([&](cpu::Ctx& c) { return cpu::bind_attention(c, {q, k, v, m, scale, false, y}); });
  b.fn();
  for (auto _ : st) {
    b.fn();
    benchmark::ClobberMemory();
  }
  const double kv_bytes = 2.0 * static_cast<double>(Hk * filled * D * static_cast<std::int64_t>(dtype_size(dt)));
  st.counters["B/s"] = benchmark::Counter(kv_bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["kv_KiB"] = kv_bytes / 1024;
  st.counters["threads"] = cpu::max_threads();
  st.SetLabel("bf16 KV, cache 2048 slots, hot");
}

}  // namespace

BENCHMARK_CAPTURE(BM_GemvDecode, bf16_hot, DType::bf16, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecode, bf16_cold, DType::bf16, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecode, f32_hot, DType::f32, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecode, f32_cold, DType::f32, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q8_0_hot, quant::BlockFormat::q8_0, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q8_0_cold, quant::BlockFormat::q8_0, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q4_0_hot, quant::BlockFormat::q4_0, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q4_0_cold, quant::BlockFormat::q4_0, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q8_0_cold_bf16_unpack, quant::BlockFormat::q8_0, true, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q4_0_hot_bf16_unpack, quant::BlockFormat::q4_0, false, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q4_0_cold_bf16_unpack, quant::BlockFormat::q4_0, true, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemvDecodeQ, q8_0_hot_bf16_unpack, quant::BlockFormat::q8_0, false, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemmPrefill, bf16, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemmPrefill, f32, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemmPrefillQ, q8_0, quant::BlockFormat::q8_0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemmPrefillQ, q4_0, quant::BlockFormat::q4_0)->UseRealTime()->Unit(benchmark::kMillisecond);
// ResNet shapes: the 3x3 layers of ResNet-18 stages 1 and 4, a ResNet-50 bottleneck 1x1, the stem.
BENCHMARK_CAPTURE(BM_Conv, 3x3_c64_56x56_f32, 64, 64, 56, 3, 1, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c64_56x56_bf16, 64, 64, 56, 3, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c512_7x7_f32, 512, 512, 7, 3, 1, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c512_7x7_bf16, 512, 512, 7, 3, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c256to64_56x56_f32, 256, 64, 56, 1, 1, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c256to64_56x56_bf16, 256, 64, 56, 1, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 7x7s2_c3to64_224_f32, 3, 64, 224, 7, 2, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 7x7s2_c3to64_224_bf16, 3, 64, 224, 7, 2, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c256_14x14_f32, 256, 256, 14, 3, 1, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c1024to256_14x14_f32, 1024, 256, 14, 1, 1, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c256_14x14_bf16, 256, 256, 14, 3, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c128_28x28_bf16, 128, 128, 28, 3, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c1024to256_14x14_bf16, 1024, 256, 14, 1, 1, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
// The same f32 shapes with channel-blocked activations (input and output; the stem's 3-channel
// input stays NCHW), as the CPU target keeps them between its f32 convolutions.
BENCHMARK_CAPTURE(BM_Conv, 3x3_c64_56x56_f32_blocked, 64, 64, 56, 3, 1, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c256_14x14_f32_blocked, 256, 256, 14, 3, 1, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 3x3_c512_7x7_f32_blocked, 512, 512, 7, 3, 1, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c256to64_56x56_f32_blocked, 256, 64, 56, 1, 1, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 1x1_c1024to256_14x14_f32_blocked, 1024, 256, 14, 1, 1, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Conv, 7x7s2_c3to64_224_f32_blocked, 3, 64, 224, 7, 2, DType::f32, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ConvGemmOnly, c64_56x56, 64, 56)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ConvGemmOnly, c512_7x7, 512, 7)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionDecode, pos128, 128)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionDecode, pos2048, 2048)->UseRealTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
