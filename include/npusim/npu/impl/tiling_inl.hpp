// Definitions for npusim/npu/tiling.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/npu/tiling.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC Traffic& Traffic::operator+=(const Traffic& o) {
  weights += o.weights, activations_in += o.activations_in, activations_out += o.activations_out, spills += o.spills;
  return *this;
}

NPUSIM_FUNC Timing time_plan(const TilePlan& p, const Description& d) {
  Timing t;
  t.load_ns = static_cast<double>(p.dma.loads()) / d.dma_gb_per_s + static_cast<double>(p.load_transfers) * d.dma_latency_ns;
  t.store_ns = static_cast<double>(p.dma.stores()) / d.dma_gb_per_s + static_cast<double>(p.store_transfers) * d.dma_latency_ns;
  t.compute_ns = std::max(static_cast<double>(p.mac_cycles), p.vector_cycles) / (d.clock_mhz * 1e-3);
  const double T = static_cast<double>(std::max<std::int64_t>(p.tiles, 1));
  t.time_ns = p.shape.double_buffered ? std::max(t.dma_ns() + t.compute_ns / T, t.compute_ns + t.dma_ns() / T) : t.dma_ns() + t.compute_ns;
  return t;
}

}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {
namespace tiling_detail {

NPUSIM_FUNC std::vector<std::int64_t> candidates(std::int64_t dim, std::int64_t lo, std::int64_t unit) {
  std::vector<std::int64_t> c{std::max<std::int64_t>(dim, 1)};
  for (std::int64_t p = lo; p < dim; p *= 2) c.push_back(p);
  if (unit > 0 && (unit & (unit - 1)) != 0)
    for (std::int64_t p = unit; p < dim; p *= 2) c.push_back(p);
  return c;
}

NPUSIM_FUNC std::int64_t sum_ceil(std::int64_t dim, std::int64_t tile, std::int64_t unit) {
  const std::int64_t full = dim / tile, rest = dim % tile;
  return full * ceil_div(tile, unit) + (rest ? ceil_div(rest, unit) : 0);
}

NPUSIM_FUNC void Alloc::add(std::int64_t bytes, int copies) {
  if (bytes > 0) banks += copies * ceil_div(bytes, bank);
}

NPUSIM_FUNC Reuse reuse(Order o, std::int64_t nm, std::int64_t nn, std::int64_t nk) {
  switch (o) {
    case Order::nmk: return {(nk == 1 && nm == 1) ? 1 : nn, nk > 1 ? nm : 1};
    case Order::mnk: return {nk > 1 ? nn : 1, (nk == 1 && nn == 1) ? 1 : nm};
    case Order::knm: return {nm == 1 ? 1 : nn, 1};
  }
  return {};
}

NPUSIM_FUNC bool better(const TilePlan& a, const TilePlan& b, const Description& d) {
  if (!b.feasible) return a.feasible;
  if (!a.feasible) return false;
  const double ta = time_plan(a, d).time_ns, tb = time_plan(b, d).time_ns;
  if (ta != tb) return ta < tb;
  if (a.dma.total() != b.dma.total()) return a.dma.total() < b.dma.total();
  return a.tiles < b.tiles;
}

NPUSIM_FUNC std::vector<int> extra_inputs(const Workload& w, const Residency& res, const Nest& n) {
  std::vector<int> extras;
  for (int i = 0; i < static_cast<int>(w.inputs.size()); ++i)
    if (i != n.a && i != n.b && i != n.bias && w.inputs[static_cast<std::size_t>(i)].bytes > 0 && !res.input(i)) extras.push_back(i);
  return extras;
}

NPUSIM_FUNC void nest_traffic(TilePlan& c, const Workload& w, const Residency& res, const Nest& n) {
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

NPUSIM_FUNC std::string nest_name(const std::string& tiles, const Tiling& t) {
  return tiles + " " + order_name(t.order) + (t.double_buffered ? ", double-buffered" : ", single-buffered");
}

}  // namespace tiling_detail
}  // namespace npusim::inline NPUSIM_ABI::npu

namespace npusim::inline NPUSIM_ABI::npu {

NPUSIM_FUNC TilePlan gemm_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
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

NPUSIM_FUNC TilePlan plan_gemm(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res) {
  using namespace tiling_detail;
  const GemmWork& g = w.gemm;
  const MacArray* arr = d.mac_array(dt);
  if (!arr) return {};
  return search_nest(d, candidates(g.m), candidates(g.k, 16, arr->rows), g.k, candidates(g.n, 16, arr->columns),
                     [&](Tiling t) { return gemm_tiling(w, d, dt, budget, res, t); });
}

NPUSIM_FUNC std::int64_t conv_rows_in(const ConvWork& cv, std::int64_t r0, std::int64_t r1) {
  const std::int64_t lo = r0 * cv.sh - cv.ph, hi = (r1 - 1) * cv.sh - cv.ph + (cv.kh - 1) * cv.dh + 1;
  return std::max<std::int64_t>(0, std::min(cv.h, hi) - std::max<std::int64_t>(0, lo));
}

NPUSIM_FUNC TilePlan conv_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
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

NPUSIM_FUNC TilePlan plan_conv(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res) {
  using namespace tiling_detail;
  const ConvWork& cv = w.conv;
  const MacArray* arr = d.mac_array(dt);
  if (cv.groups <= 0 || !arr) return {};
  return search_nest(d, candidates(cv.oh, 1), candidates(cv.cin / cv.groups, 8), cv.cin / cv.groups, candidates(cv.cout / cv.groups, 8, arr->columns),
                     [&](Tiling t) { return conv_tiling(w, d, dt, budget, res, t); });
}

NPUSIM_FUNC TilePlan attention_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
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

NPUSIM_FUNC TilePlan plan_attention(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res) {
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

NPUSIM_FUNC TilePlan vector_tiling(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res, Tiling t) {
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

NPUSIM_FUNC TilePlan plan_vector(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res) {
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

NPUSIM_FUNC TilePlan plan_kernel(const Workload& w, const Description& d, DType dt, Budget budget, const Residency& res) {
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
