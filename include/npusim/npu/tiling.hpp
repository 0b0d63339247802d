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
  Traffic& operator+=(const Traffic& o) {
    weights += o.weights, activations_in += o.activations_in, activations_out += o.activations_out, spills += o.spills;
    return *this;
  }
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
inline Timing time_plan(const TilePlan& p, const Description& d) {
  Timing t;
  t.load_ns = static_cast<double>(p.dma.loads()) / d.dma_gb_per_s + static_cast<double>(p.load_transfers) * d.dma_latency_ns;
  t.store_ns = static_cast<double>(p.dma.stores()) / d.dma_gb_per_s + static_cast<double>(p.store_transfers) * d.dma_latency_ns;
  t.compute_ns = std::max(static_cast<double>(p.mac_cycles), p.vector_cycles) / (d.clock_mhz * 1e-3);
  const double T = static_cast<double>(std::max<std::int64_t>(p.tiles, 1));
  t.time_ns = p.shape.double_buffered ? std::max(t.dma_ns() + t.compute_ns / T, t.compute_ns + t.dma_ns() / T) : t.dma_ns() + t.compute_ns;
  return t;
}

namespace tiling_detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

// Candidate tile sizes for a dimension: the whole of it, powers of two from `lo` below it, and
// power-of-two multiples of the MAC array's side `unit` along it (no padding loss when the array
// side is not a power of two).
inline std::vector<std::int64_t> candidates(std::int64_t dim, std::int64_t lo = 16, std::int64_t unit = 0) {
  std::vector<std::int64_t> c{std::max<std::int64_t>(dim, 1)};
  for (std::int64_t p = lo; p < dim; p *= 2) c.push_back(p);
  if (unit > 0 && (unit & (unit - 1)) != 0)
    for (std::int64_t p = unit; p < dim; p *= 2) c.push_back(p);
  return c;
}

// Sum over the tiles of a dimension split into `tile`-sized pieces of ceil(piece / unit).
inline std::int64_t sum_ceil(std::int64_t dim, std::int64_t tile, std::int64_t unit) {
  const std::int64_t full = dim / tile, rest = dim % tile;
  return full * ceil_div(tile, unit) + (rest ? ceil_div(rest, unit) : 0);
}

struct Alloc {
  std::int64_t bank = 1, banks = 0;
  void add(std::int64_t bytes, int copies = 1) {
    if (bytes > 0) banks += copies * ceil_div(bytes, bank);
  }
  std::int64_t bytes() const { return banks * bank; }
};

// How many times each element of A (index m, k) and B (index k, n) is loaded, for a loop order
// and tile counts: a tile is loaded again only when its index changes between iterations.
struct Reuse {
  std::int64_t a = 1, b = 1;
};
inline Reuse reuse(Order o, std::int64_t nm, std::int64_t nn, std::int64_t nk) {
  switch (o) {
    case Order::nmk: return {(nk == 1 && nm == 1) ? 1 : nn, nk > 1 ? nm : 1};
    case Order::mnk: return {nk > 1 ? nn : 1, (nk == 1 && nn == 1) ? 1 : nm};
    case Order::knm: return {nm == 1 ? 1 : nn, 1};
  }
  return {};
}

// The better of two feasible plans: less time, then less DRAM traffic, then fewer tiles.
inline bool better(const TilePlan& a, const TilePlan& b, const Description& d) {
  if (!b.feasible) return a.feasible;
  if (!a.feasible) return false;
  const double ta = time_plan(a, d).time_ns, tb = time_plan(b, d).time_ns;
  if (ta != tb) return ta < tb;
  if (a.dma.total() != b.dma.total()) return a.dma.total() < b.dma.total();
  return a.tiles < b.tiles;
}

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
inline std::vector<int> extra_inputs(const Workload& w, const Residency& res, const Nest& n) {
  std::vector<int> extras;
  for (int i = 0; i < static_cast<int>(w.inputs.size()); ++i)
    if (i != n.a && i != n.b && i != n.bias && w.inputs[static_cast<std::size_t>(i)].bytes > 0 && !res.input(i)) extras.push_back(i);
  return extras;
}

inline void nest_traffic(TilePlan& c, const Workload& w, const Residency& res, const Nest& n) {
  auto operand = [&](int i) -> const Operand& { return w.inputs[static_cast<std::size_t>(i)]; };
  const bool a_moves = n.a >= 0 && !res.input(n.a), b_moves = n.b >= 0 && !res.input(n.b), bias_moves = n.bias >= 0 && !res.input(n.bias);
  const bool out_moves = !res.output(0);
  const std::vector<int> extras = extra_inputs(w, res, n);
  const Reuse ru = reuse(n.order, n.nm, n.nn, n.nk);
  c.compulsory = c.dma = Traffic{};
  c.load_transfers = c.store_transfers = 0;
  if (a_moves) add_bytes(c.compulsory, operand(n.a), n.a_once), add_bytes(c.dma, operand(n.a), n.a_sweep * ru.a), c.load_transfers += n.units * ru.a * n.nm * n.nk;
  if (b_moves) add_bytes(c.compulsory, operand(n.b), n.b_once), add_bytes(c.dma, operand(n.b), n.b_once * ru.b), c.load_transfers += n.units * ru.b * n.nn * n.nk;
  if (bias_moves) {
    add_bytes(c.compulsory, operand(n.bias), operand(n.bias).bytes), add_bytes(c.dma, operand(n.bias), operand(n.bias).bytes);
    c.load_transfers += n.units * n.nn;
  }
  for (int i : extras) {
    add_bytes(c.compulsory, operand(i), operand(i).bytes), add_bytes(c.dma, operand(i), operand(i).bytes);
    c.load_transfers += n.units * n.nm * n.nn;
  }
  if (n.order == Order::knm && n.nk > 1) {
    c.dma.spills = 2 * (n.nk - 1) * n.outputs * n.acc;
    c.load_transfers += n.units * (n.nk - 1) * n.nm * n.nn, c.store_transfers += n.units * (n.nk - 1) * n.nm * n.nn;
  }
  c.compulsory.activations_out = c.dma.activations_out = out_moves ? w.output_bytes() : 0;
  if (out_moves) c.store_transfers += n.units * n.nm * n.nn;
  c.tiles = n.units * n.nm * n.nn * n.nk;
}

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

inline std::string nest_name(const std::string& tiles, const Tiling& t) {
  return tiles + " " + order_name(t.order) + (t.double_buffered ? ", double-buffered" : ", single-buffered");
}

}  // namespace tiling_detail

// Working SRAM for one kernel: `bytes`, allocated in banks of `bank_bytes`.
struct Budget {
  std::int64_t bytes = 0, bank_bytes = 1;
};

// ---- GEMM ---------------------------------------------------------------------------------------
// One tiling of a GEMM; infeasible when its buffers do not fit the budget.
inline TilePlan gemm_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
  using namespace tiling_detail;
  const GemmWork& g = w.gemm;
  const MacArray* arr = d.mac_array(dt);
  TilePlan c;
  if (!arr || g.m <= 0 || g.k <= 0 || g.n <= 0 || t.a <= 0 || t.b <= 0 || t.c <= 0) return c;
  const std::int64_t acc = accumulator_bytes(dt), R = arr->rows, C = arr->columns, tm = t.a, tk = t.b, tn = t.c;
  Nest n{g.batch, ceil_div(g.m, tm), ceil_div(g.n, tn), ceil_div(g.k, tk), t.order, g.a, g.b, g.bias};
  n.a_once = n.a_sweep = g.batch * g.m * g.k * g.a_elem, n.b_once = g.batch * g.k * g.n * g.b_elem, n.outputs = g.batch * g.m * g.n, n.acc = acc;
  const int copies = t.double_buffered ? 2 : 1;
  Alloc al{budget.bank_bytes};
  if (!res.input(g.a)) al.add(tm * tk * g.a_elem, copies);
  if (!res.input(g.b)) al.add(tk * tn * g.b_elem, copies);
  if (g.bias >= 0 && !res.input(g.bias)) al.add(tn * g.c_elem, copies);
  for (std::size_t e = 0; e < extra_inputs(w, res, n).size(); ++e) al.add(tm * tn * g.c_elem, copies);
  al.add(tm * tn * acc, copies);
  if (al.bytes() > budget.bytes) return c;
  c.feasible = true, c.shape = t, c.sram_bytes = al.bytes();
  nest_traffic(c, w, res, n);
  c.mac_cycles = g.batch * (g.m * sum_ceil(g.k, tk, R) * sum_ceil(g.n, tn, C) + n.nm * n.nn * n.nk * (R + C));
  c.vector_cycles = w.vector.total(d.transcendental_ops) / d.vector_elements_per_cycle(g.c_elem);
  c.tiling = nest_name("tm=" + std::to_string(tm) + " tk=" + std::to_string(tk) + " tn=" + std::to_string(tn), t);
  return c;
}

inline TilePlan plan_gemm(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {}) {
  using namespace tiling_detail;
  const GemmWork& g = w.gemm;
  const MacArray* arr = d.mac_array(dt);
  if (!arr) return {};
  return search_nest(d, candidates(g.m), candidates(g.k, 16, arr->rows), g.k, candidates(g.n, 16, arr->columns),
                     [&](Tiling t) { return gemm_tiling(w, d, dt, budget, res, t); });
}

// ---- convolution --------------------------------------------------------------------------------
// Input rows an output-row block [r0, r1) reads: its receptive field, clipped to the image.
inline std::int64_t conv_rows_in(const ConvWork& cv, std::int64_t r0, std::int64_t r1) {
  const std::int64_t lo = r0 * cv.sh - cv.ph, hi = (r1 - 1) * cv.sh - cv.ph + (cv.kh - 1) * cv.dh + 1;
  return std::max<std::int64_t>(0, std::min(cv.h, hi) - std::max<std::int64_t>(0, lo));
}

inline TilePlan conv_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
  using namespace tiling_detail;
  const ConvWork& cv = w.conv;
  const MacArray* arr = d.mac_array(dt);
  TilePlan c;
  if (!arr || cv.groups <= 0 || cv.oh <= 0 || cv.ow <= 0 || t.a <= 0 || t.b <= 0 || t.c <= 0) return c;
  const std::int64_t acc = accumulator_bytes(dt), R = arr->rows, C = arr->columns;
  const std::int64_t cin = cv.cin / cv.groups, cout = cv.cout / cv.groups, G = cv.groups, toh = t.a, tc = t.b, tn = t.c;
  const std::int64_t out_elem = w.outputs.empty() || w.outputs[0].elements == 0 ? cv.x_elem : w.outputs[0].bytes / w.outputs[0].elements;
  Nest n{G, ceil_div(cv.oh, toh), ceil_div(cout, tn), ceil_div(cin, tc), t.order, cv.x, cv.weight, cv.bias};
  std::int64_t rows_sum = 0, rows_max = 0;  // input rows the output-row blocks read (halo included)
  for (std::int64_t r = 0; r < cv.oh; r += toh) {
    const std::int64_t ri = conv_rows_in(cv, r, std::min(cv.oh, r + toh));
    rows_sum += ri, rows_max = std::max(rows_max, ri);
  }
  n.a_once = cv.batch * cv.h * cv.w * cv.cin * cv.x_elem, n.a_sweep = G * cv.batch * rows_sum * cv.w * cin * cv.x_elem;
  n.b_once = cv.cout * cin * cv.kh * cv.kw * cv.w_elem, n.outputs = cv.batch * cv.oh * cv.ow * cv.cout, n.acc = acc;
  const int copies = t.double_buffered ? 2 : 1;
  Alloc al{budget.bank_bytes};
  if (!res.input(cv.x)) al.add(cv.batch * rows_max * cv.w * tc * cv.x_elem, copies);
  if (!res.input(cv.weight)) al.add(tc * cv.kh * cv.kw * tn * cv.w_elem, copies);
  if (cv.bias >= 0 && !res.input(cv.bias)) al.add(tn * out_elem, copies);
  for (std::size_t e = 0; e < extra_inputs(w, res, n).size(); ++e) al.add(cv.batch * toh * cv.ow * tn * out_elem, copies);
  al.add(cv.batch * toh * cv.ow * tn * acc, copies);
  if (al.bytes() > budget.bytes) return c;
  c.feasible = true, c.shape = t, c.sram_bytes = al.bytes();
  nest_traffic(c, w, res, n);
  std::int64_t ksum = 0;  // over input-channel blocks: ceil(block * kh * kw / R)
  for (std::int64_t ch = 0; ch < cin; ch += tc) ksum += ceil_div(std::min(tc, cin - ch) * cv.kh * cv.kw, R);
  c.mac_cycles = G * (cv.batch * cv.oh * cv.ow * ksum * sum_ceil(cout, tn, C) + n.nm * n.nn * n.nk * (R + C));
  c.vector_cycles = w.vector.total(d.transcendental_ops) / d.vector_elements_per_cycle(out_elem);
  c.tiling = nest_name("toh=" + std::to_string(toh) + " tcin=" + std::to_string(tc) + " tcout=" + std::to_string(tn), t);
  return c;
}

inline TilePlan plan_conv(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {}) {
  using namespace tiling_detail;
  const ConvWork& cv = w.conv;
  const MacArray* arr = d.mac_array(dt);
  if (cv.groups <= 0 || !arr) return {};
  return search_nest(d, candidates(cv.oh, 1), candidates(cv.cin / cv.groups, 8), cv.cin / cv.groups, candidates(cv.cout / cv.groups, 8, arr->columns),
                     [&](Tiling t) { return conv_tiling(w, d, dt, budget, res, t); });
}

// ---- attention ----------------------------------------------------------------------------------
inline TilePlan attention_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
  using namespace tiling_detail;
  const AttentionWork& a = w.attention;
  const MacArray* arr = d.mac_array(dt);
  TilePlan c;
  if (!arr || a.sq <= 0 || a.skv <= 0 || a.d <= 0 || t.a <= 0 || t.b <= 0) return c;
  const std::int64_t acc = accumulator_bytes(dt), R = arr->rows, C = arr->columns, tq = t.a, tkv = t.b;
  const std::int64_t G = a.heads / a.kv_heads, rows = G * a.sq, units = a.batch * a.kv_heads;
  const bool q_res = res.input(a.q), k_res = res.input(a.k), v_res = res.input(a.v), m_res = a.mask < 0 || res.input(a.mask), out_res = res.output(0);
  const std::int64_t qo_bytes = rows * a.d * a.elem, kv_bytes = a.skv * a.d * a.elem;
  auto operand = [&](int i) -> const Operand& { return w.inputs[static_cast<std::size_t>(i)]; };
  // Mask rows a query tile reads: one per query position (a mask shared by the heads), or one per row.
  auto mask_rows = [&](std::int64_t rows_in_tile) { return a.mask_heads > 1 ? rows_in_tile : std::min(rows_in_tile, a.sq); };

  if (!q_res) add_bytes(c.compulsory, operand(a.q), units * qo_bytes);
  if (!k_res) add_bytes(c.compulsory, operand(a.k), units * kv_bytes);
  if (!v_res) add_bytes(c.compulsory, operand(a.v), units * kv_bytes);
  if (!m_res) add_bytes(c.compulsory, operand(a.mask), units * mask_rows(rows) * a.skv * a.mask_elem);
  c.compulsory.activations_out = out_res ? 0 : w.output_bytes();

  const std::int64_t nq = ceil_div(rows, tq), nkv = ceil_div(a.skv, tkv);
  const int copies = t.double_buffered ? 2 : 1;
  Alloc al{budget.bank_bytes};
  if (!q_res) al.add(tq * a.d * a.elem, copies);
  if (!k_res) al.add(tkv * a.d * a.elem, copies);
  if (!v_res) al.add(tkv * a.d * a.elem, copies);
  if (!m_res) al.add(mask_rows(tq) * tkv * a.mask_elem, copies);
  al.add(tq * a.d * acc, copies);  // the output accumulator
  al.add(tq * tkv * acc);          // the tile's scores
  al.add(tq * 2 * acc);            // running max and sum per row
  if (al.bytes() > budget.bytes) return c;
  // K and V stay on chip across query tiles only when one tile holds the whole sequence.
  const std::int64_t kv_loads = nkv == 1 ? 1 : nq;
  c.feasible = true, c.shape = t, c.sram_bytes = al.bytes();
  if (!q_res) add_bytes(c.dma, operand(a.q), units * qo_bytes), c.load_transfers += units * nq;
  if (!k_res) add_bytes(c.dma, operand(a.k), units * kv_bytes * kv_loads), c.load_transfers += units * kv_loads * nkv;
  if (!v_res) add_bytes(c.dma, operand(a.v), units * kv_bytes * kv_loads), c.load_transfers += units * kv_loads * nkv;
  if (!m_res) {
    std::int64_t mrows = 0;
    for (std::int64_t r = 0; r < rows; r += tq) mrows += mask_rows(std::min(tq, rows - r));
    add_bytes(c.dma, operand(a.mask), units * mrows * a.skv * a.mask_elem), c.load_transfers += units * nq * nkv;
  }
  c.dma.activations_out = out_res ? 0 : w.output_bytes();
  if (!out_res) c.store_transfers += units * nq;
  c.tiles = units * nq * nkv;
  c.mac_cycles = units * (rows * (ceil_div(a.d, R) * sum_ceil(a.skv, tkv, C) + ceil_div(a.d, C) * sum_ceil(a.skv, tkv, R)) + nq * nkv * 2 * (R + C));
  c.vector_cycles = w.vector.total(d.transcendental_ops) / d.vector_elements_per_cycle(acc);
  c.tiling = "tq=" + std::to_string(tq) + " tkv=" + std::to_string(tkv) + " (" + std::to_string(G) + " heads per KV head)" +
             (t.double_buffered ? ", double-buffered" : ", single-buffered");
  return c;
}

inline TilePlan plan_attention(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {}) {
  using namespace tiling_detail;
  TilePlan best;
  const AttentionWork& a = w.attention;
  const MacArray* arr = d.mac_array(dt);
  if (a.kv_heads <= 0 || !arr) return best;
  for (std::int64_t tq : candidates(a.heads / a.kv_heads * a.sq))
    for (std::int64_t tkv : candidates(a.skv, 16, arr->columns))
      for (bool db : {true, false})
        if (TilePlan c = attention_tiling(w, d, dt, budget, res, {tq, tkv, 0, Order::nmk, db}); better(c, best, d)) best = std::move(c);
  return best;
}

// ---- vector -------------------------------------------------------------------------------------
inline TilePlan vector_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
  using namespace tiling_detail;
  TilePlan c;
  const std::int64_t E = std::max<std::int64_t>(w.elements, 1), passes = t.b, te = t.a;
  if (!d.supports(dt) || te <= 0 || passes < 1 || passes > 2) return c;
  // Streamed operands spread their bytes over the elements; smaller (broadcast) ones are loaded once.
  double in_per_elem = 0, out_per_elem = 0;
  std::int64_t broadcast = 0, streamed_in = 0, streamed_out = 0, streamed_bytes = 0;
  for (int i = 0; i < static_cast<int>(w.inputs.size()); ++i) {
    const Operand& o = w.inputs[static_cast<std::size_t>(i)];
    if (o.bytes == 0 || res.input(i)) continue;
    add_bytes(c.compulsory, o, o.bytes);
    if (o.elements < E && w.gathers == 0) broadcast += o.bytes;
    else in_per_elem += static_cast<double>(o.bytes) / static_cast<double>(E), ++streamed_in, streamed_bytes += o.bytes;
  }
  for (int i = 0; i < static_cast<int>(w.outputs.size()); ++i) {
    const Operand& o = w.outputs[static_cast<std::size_t>(i)];
    if (o.bytes == 0 || res.output(i)) continue;
    c.compulsory.activations_out += o.bytes;
    out_per_elem += static_cast<double>(o.bytes) / static_cast<double>(E), ++streamed_out;
  }
  // A kernel that reduces over rows needs whole rows per tile, or a second pass (statistics,
  // then the normalised values) that streams the input again.
  const std::int64_t row = w.row_elements > 1 ? std::min(w.row_elements, E) : 1;
  if ((passes == 1 && te % row != 0 && te != E) || (passes == 2 && (row == 1 || te >= row))) return c;
  const int copies = t.double_buffered ? 2 : 1;
  Alloc al{budget.bank_bytes};
  al.add(broadcast);
  al.add(static_cast<std::int64_t>(std::ceil(static_cast<double>(te) * in_per_elem)), copies);
  al.add(static_cast<std::int64_t>(std::ceil(static_cast<double>(te) * out_per_elem)), copies);
  if (al.bytes() > budget.bytes) return c;
  const std::int64_t T = ceil_div(E, te);
  c.feasible = true, c.shape = t, c.sram_bytes = al.bytes();
  c.dma = c.compulsory;
  if (passes == 2) c.dma.activations_in += streamed_bytes;
  // One transfer per tile and operand; a gathered (scattered) row is a transfer of its own.
  c.load_transfers = passes * T * streamed_in + (broadcast ? 1 : 0) + std::max<std::int64_t>(w.gathers - T, 0);
  c.store_transfers = T * streamed_out + std::max<std::int64_t>(w.scatters - T, 0);
  c.tiles = passes * T;
  c.vector_cycles = w.vector.total(d.transcendental_ops) / d.vector_elements_per_cycle(static_cast<std::int64_t>(dtype_size(dt)));
  c.tiling = std::to_string(te) + " elements per tile" + (passes == 2 ? ", two passes (a row does not fit)" : "") +
             (t.double_buffered ? ", double-buffered" : ", single-buffered");
  return c;
}

inline TilePlan plan_vector(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {}) {
  TilePlan best;
  const std::int64_t E = std::max<std::int64_t>(w.elements, 1), row = w.row_elements > 1 ? std::min(w.row_elements, E) : 1;
  std::vector<std::int64_t> sizes{E};
  for (std::int64_t p = row; p < E; p *= 2) sizes.push_back(p);             // whole rows
  for (std::int64_t p = 256; p < std::max(row, E); p *= 2) sizes.push_back(p);  // chunks (rows of a second pass)
  for (std::int64_t passes : {1, 2})
    for (std::int64_t te : sizes)
      for (bool db : {true, false})
        if (TilePlan c = vector_tiling(w, d, dt, budget, res, {te, passes, 0, Order::nmk, db}); tiling_detail::better(c, best, d)) best = std::move(c);
  return best;
}

inline TilePlan plan_kernel(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res = {}) {
  switch (w.model) {
    case Model::gemm: return plan_gemm(w, d, dt, budget, res);
    case Model::conv: return plan_conv(w, d, dt, budget, res);
    case Model::attention: return plan_attention(w, d, dt, budget, res);
    case Model::vector: return plan_vector(w, d, dt, budget, res);
    case Model::view: {
      TilePlan p;
      p.feasible = true, p.tiling = "zero-copy";
      return p;
    }
  }
  return {};
}

}  // namespace npusim::inline NPUSIM_ABI::npu
