// The tiler: for one kernel's workload and the SRAM it may use, choose tiles and a loop order,
// then count DMA bytes and transfers, MAC-array and vector cycles, and the time of the tile
// pipeline. Every formula here is written out in docs/npu-simulation.md (tests/unit/npu check
// them against hand counts).
//
//   GEMM      tiles tm x tk x tn from a small candidate set (powers of two >= 16 and the full
//             dimension), loop orders n-m-k and m-n-k (the C tile stays in SRAM across k) and
//             k-n-m (partial sums spilled to DRAM and read back); a tile of A or B is loaded
//             again only when its index changes between consecutive iterations
//   conv      the same over output rows, input channels and output channels, the input tile
//             carrying its halo rows
//   attention per KV head, query-row tiles (the group's heads stacked) against K/V tiles,
//             flash-style: scores stay on chip, K/V re-read per query tile unless one K/V tile
//             holds the whole sequence
//   vector    streamed in chunks (whole rows when the kernel reduces over the last dim);
//             broadcast operands loaded once
// Buffers are allocated in whole SRAM banks; double buffering (two copies of each streamed
// buffer) overlaps DMA with compute and is chosen only when it fits and is faster.
#pragma once

#include <cmath>
#include <limits>

#include "npusim/npu/description.hpp"
#include "npusim/npu/workload.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

// DRAM traffic of a kernel, by what moves.
struct Traffic {
  std::int64_t weights = 0, activations_in = 0, activations_out = 0, spills = 0;  // spills: written and read back
  std::int64_t total() const { return weights + activations_in + activations_out + spills; }
  std::int64_t loads() const { return weights + activations_in + spills / 2; }
  std::int64_t stores() const { return activations_out + spills - spills / 2; }
  Traffic& operator+=(const Traffic& o);
  friend bool operator==(const Traffic&, const Traffic&) = default;
};

// What is already on chip for this kernel: inputs forwarded from the previous kernel or held in
// the weight cache (no DMA, no tile buffer), outputs kept for the next kernel (no DMA out).
struct Residency {
  std::vector<bool> inputs, outputs;
  bool input(int i) const { return i >= 0 && static_cast<std::size_t>(i) < inputs.size() && inputs[static_cast<std::size_t>(i)]; }
  bool output(int i) const { return i >= 0 && static_cast<std::size_t>(i) < outputs.size() && outputs[static_cast<std::size_t>(i)]; }
};

// Loop orders, outermost first: n-m-k and m-n-k keep the C tile in SRAM across k; k-n-m
// keeps each B tile for a whole sweep over m and spills partial sums of C to DRAM.
enum class Order : std::uint8_t { nmk, mnk, knm };
inline const char* order_name(Order o) { return o == Order::nmk ? "n-m-k" : o == Order::mnk ? "m-n-k" : "k-n-m"; }

// One tiling. GEMM: a = tm, b = tk, c = tn. Convolution: a = output rows, b = input channels,
// c = output channels (per group). Attention: a = query rows (of a KV head's stacked heads),
// b = key/value rows. Vector: a = elements per tile, b = passes over the input (1 or 2).
struct Tiling {
  std::int64_t a = 0, b = 0, c = 0;
  Order order = Order::nmk;
  bool double_buffered = true;
};

struct TilePlan {
  bool feasible = false;
  Tiling shape;
  std::string tiling;  // e.g. "tm=128 tk=1536 tn=256 n-m-k, double-buffered"
  std::int64_t tiles = 0;
  Traffic dma, compulsory;  // compulsory: each operand once (what an unbounded SRAM would move)
  std::int64_t load_transfers = 0, store_transfers = 0;
  std::int64_t mac_cycles = 0;
  double vector_cycles = 0;
  std::int64_t sram_bytes = 0;  // bank-rounded footprint of the buffers
};

struct Timing {
  double load_ns = 0, store_ns = 0, compute_ns = 0, time_ns = 0;
  double dma_ns() const { return load_ns + store_ns; }
};

// Tile pipeline time. DMA moves loads and stores on one engine at `dma_gb_per_s` (1 GB/s = 1
// byte/ns) plus `dma_latency_ns` per transfer; compute is the longer of the MAC array and the
// vector unit (separate units, pipelined). Double-buffered, T tiles with averages per tile:
//   time = max(dma + compute / T, compute + dma / T)     (fill and drain of a 2-stage pipeline)
// single-buffered: time = dma + compute.
Timing time_plan(const TilePlan& p, const Description& d);

namespace tiling_detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

// Candidate tile sizes for a dimension: the whole of it, powers of two from `lo` below it, and
// power-of-two multiples of the MAC array's side `unit` along it (no padding loss when the array
// side is not a power of two).
std::vector<std::int64_t> candidates(std::int64_t dim, std::int64_t lo = 16, std::int64_t unit = 0);

// Sum over the tiles of a dimension split into `tile`-sized pieces of ceil(piece / unit).
std::int64_t sum_ceil(std::int64_t dim, std::int64_t tile, std::int64_t unit);

struct Alloc {
  std::int64_t bank = 1, banks = 0;
  void add(std::int64_t bytes, int copies = 1);
  std::int64_t bytes() const { return banks * bank; }
};

// How many times each element of A (index m, k) and B (index k, n) is loaded, for a loop order
// and tile counts: a tile is loaded again only when its index changes between iterations.
struct Reuse {
  std::int64_t a = 1, b = 1;
};
Reuse reuse(Order o, std::int64_t nm, std::int64_t nn, std::int64_t nk);

// The better of two feasible plans: less time, then less DRAM traffic, then fewer tiles.
bool better(const TilePlan& a, const TilePlan& b, const Description& d);

inline void add_bytes(Traffic& t, const Operand& o, std::int64_t bytes) { (o.weight ? t.weights : t.activations_in) += bytes; }

// A GEMM-shaped loop nest over output rows (m), output columns (n) and the reduction (k),
// repeated `units` times (batches, groups), and what it moves: A (index m, k) and B (index k, n)
// as often as the loop order reloads them, the bias and any other input (a residual) once, the
// partial sums k-n-m spills, and the output once. The GEMM and the convolution differ only in
// what one sweep over A costs (the convolution's input tiles carry halo rows).
struct Nest {
  std::int64_t units = 1, nm = 1, nn = 1, nk = 1;
  Order order = Order::nmk;
  int a = -1, b = -1, bias = -1;           // operand indices
  std::int64_t a_once = 0, a_sweep = 0;    // bytes of A read once / in one sweep of the nest, all units
  std::int64_t b_once = 0;                 // bytes of B, all units
  std::int64_t outputs = 0, acc = 4;       // output elements (all units) and accumulator bytes
};

// The inputs a nest reads besides A, B and the bias, and does not find on chip.
std::vector<int> extra_inputs(const Workload& w, const Residency& res, const Nest& n);

void nest_traffic(TilePlan& c, const Workload& w, const Residency& res, const Nest& n);

// The best tiling of a nest over candidate sizes for m (a), k (b) and n (c), every loop order and
// both bufferings; `tiling(t)` evaluates one (k-n-m with one k tile is n-m-k, so it is skipped).
template <class F>
TilePlan search_nest(const Description& d, const std::vector<std::int64_t>& as, const std::vector<std::int64_t>& bs, std::int64_t b_full,
                     const std::vector<std::int64_t>& cs, F&& tiling) {
  TilePlan best;
  for (Order o : {Order::nmk, Order::mnk, Order::knm})
    for (std::int64_t a : as)
      for (std::int64_t c : cs)
        for (std::int64_t b : bs) {
          if (o == Order::knm && b >= b_full) continue;
          for (bool db : {true, false})
            if (TilePlan p = tiling(Tiling{a, b, c, o, db}); better(p, best, d)) best = std::move(p);
        }
  return best;
}

std::string nest_name(const std::string& tiles, const Tiling& t);

}  // namespace tiling_detail

// Working SRAM for one kernel: `bytes`, allocated in banks of `bank_bytes`.
struct Budget {
  std::int64_t bytes = 0, bank_bytes = 1;
};

// ---- GEMM ---------------------------------------------------------------------------------------
// One tiling of a GEMM; infeasible when its buffers do not fit the budget.
TilePlan gemm_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t);

TilePlan plan_gemm(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {});

// ---- convolution --------------------------------------------------------------------------------
// Input rows an output-row block [r0, r1) reads: its receptive field, clipped to the image.
std::int64_t conv_rows_in(const ConvWork& cv, std::int64_t r0, std::int64_t r1);

TilePlan conv_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t);

TilePlan plan_conv(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {});

// ---- attention ----------------------------------------------------------------------------------
TilePlan attention_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t);

TilePlan plan_attention(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {});

// ---- vector -------------------------------------------------------------------------------------
TilePlan vector_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t);

TilePlan plan_vector(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {});

TilePlan plan_kernel(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {});

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/tiling_inl.hpp"
#endif
