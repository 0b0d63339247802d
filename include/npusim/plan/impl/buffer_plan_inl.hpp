// Definitions for npusim/plan/buffer_plan.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <numeric>

#include "npusim/ops/registry.hpp"
#include "npusim/plan/buffer_plan.hpp"

namespace npusim::inline NPUSIM_ABI::plan {

NPUSIM_FUNC const char* place_name(Place p) {
  switch (p) {
    case Place::none: return "none";
    case Place::input: return "input";
    case Place::weight: return "weight";
    case Place::arena: return "arena";
    case Place::view: return "view";
  }
  return "?";
}

NPUSIM_FUNC bool pointwise_kind(std::string_view kind) {
  static constexpr std::string_view kinds[] = {"eltwise_chain", "add_relu", "silu_gate"};
  return std::find(std::begin(kinds), std::end(kinds), kind) != std::end(kinds);
}

NPUSIM_FUNC bool writes_cache_in_place(std::string_view kind) { return kind == "index_copy" || kind == "rope_kv"; }

NPUSIM_FUNC BufferPlan plan_buffers(const ir::Graph& g, const std::vector<Kernel>& ks, const passes::DTypePolicy& pol) {
  const std::size_t T = g.tensors.size();
  BufferPlan bp;
  bp.tensors.resize(T);
  std::vector<std::int32_t> parent(T);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::int32_t x) {
    while (parent[static_cast<std::size_t>(x)] != x) x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  };
  for (std::size_t t = 0; t < T; ++t) {
    const ir::TensorInfo& info = g.tensors[t];
    TensorPlan& p = bp.tensors[t];
    p.storage = pol.storage(info.dtype);
    try {
      p.bytes = checked_nbytes(info.shape, p.storage);  // the storage type may be wider than the tensor's own
    } catch (Error& e) {
      throw e.with_tensor(info.name).with_file(g.source);
    }
    p.root = static_cast<ir::TensorId>(t);
    if (info.kind == ir::TensorKind::input) p.place = Place::input, p.first = -1;
    if (info.kind == ir::TensorKind::weight || info.kind == ir::TensorKind::constant) p.place = Place::weight;
  }
  const auto K = static_cast<std::int32_t>(ks.size());
  // Kernel outputs own storage (or view their input); reads extend lifetimes.
  for (std::int32_t k = 0; k < K; ++k) {
    const Kernel& kr = ks[static_cast<std::size_t>(k)];
    for (ir::TensorId t : kr.inputs) {
      TensorPlan& p = bp.tensors[static_cast<std::size_t>(t)];
      p.last = std::max(p.last, k);
    }
    for (ir::TensorId t : kr.outputs) {
      TensorPlan& p = bp.tensors[static_cast<std::size_t>(t)];
      p.first = k, p.last = std::max(p.last, k);
      if (kr.kind == "view") {
        p.place = Place::view;
        p.root = kr.inputs.at(0);
      } else {
        p.place = Place::arena;
      }
    }
  }
  for (ir::TensorId t : g.outputs) bp.tensors[static_cast<std::size_t>(t)].last = K;
  // KV caches updated in place: index_copy over a graph input that nothing else reads writes into
  // that input's buffer (only the new rows), and its output shares the input's bytes.
  {
    std::vector<int> readers(T, 0);
    for (const Kernel& kr : ks)
      for (ir::TensorId t : kr.inputs) ++readers[static_cast<std::size_t>(t)];
    std::vector<bool> is_out(T, false);
    for (ir::TensorId t : g.outputs) is_out[static_cast<std::size_t>(t)] = true;
    for (const Kernel& kr : ks) {
      if (!writes_cache_in_place(kr.kind)) continue;
      for (auto ni : kr.nodes) {
        const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
        if (!ops::find_op(n.op_type) || *ops::find_op(n.op_type) != ops::op_index_v<ops::IndexCopy> || n.outputs.size() != 1) continue;
        const ir::TensorId self = n.inputs.at(0), o = n.outputs[0];
        if (std::find(kr.outputs.begin(), kr.outputs.end(), o) == kr.outputs.end()) continue;
        TensorPlan &sp = bp.tensors[static_cast<std::size_t>(self)], &op = bp.tensors[static_cast<std::size_t>(o)];
        if (sp.place != Place::input || readers[static_cast<std::size_t>(self)] != 1 || is_out[static_cast<std::size_t>(self)] || sp.storage != op.storage)
          continue;
        op.place = Place::view;
        op.root = self;
      }
    }
  }
  // Resolve view roots; a view keeps its root alive as long as the view is read.
  for (std::size_t t = 0; t < T; ++t) {
    TensorPlan& p = bp.tensors[t];
    if (p.place != Place::view) continue;
    ir::TensorId r = p.root;
    while (bp.tensors[static_cast<std::size_t>(r)].place == Place::view) r = bp.tensors[static_cast<std::size_t>(r)].root;
    p.root = r;
    TensorPlan& rp = bp.tensors[static_cast<std::size_t>(r)];
    rp.last = std::max(rp.last, p.last);
  }
  // In place: a pointwise kernel's output may take the slot of a same-size arena input that dies here.
  for (std::int32_t k = 0; k < K; ++k) {
    const Kernel& kr = ks[static_cast<std::size_t>(k)];
    bool pw = pointwise_kind(kr.kind) || (kr.nodes.size() == 1 && kr.kind != "view" && kr.outputs.size() == 1 &&
                                          ops::op_info(*ops::find_op(g.nodes[static_cast<std::size_t>(kr.nodes[0])].op_type)).op_class ==
                                              ops::OpClass::elementwise);
    // linear_add: its residual only (the product reads all of x for every output), and only
    // where no other operand shares the residual's bytes.
    const bool residual = kr.kind == "linear_add";
    if ((!pw && !residual) || kr.outputs.size() != 1) continue;
    ir::TensorId o = kr.outputs[0];
    TensorPlan& op = bp.tensors[static_cast<std::size_t>(o)];
    if (op.place != Place::arena) continue;
    for (ir::TensorId in : kr.inputs) {
      if (residual && in != kr.inputs.back()) continue;
      if (residual && std::any_of(kr.inputs.begin(), kr.inputs.end() - 1, [&](ir::TensorId t) {
            return t == in || bp.tensors[static_cast<std::size_t>(t)].root == in;
          }))
        break;
      TensorPlan& ip = bp.tensors[static_cast<std::size_t>(in)];
      if (ip.place != Place::arena || ip.last != k || ip.bytes != op.bytes || g.tensor(in).shape != g.tensor(o).shape) continue;
      // Every view of `in` must also be dead by now (their reads extended ip.last already).
      std::int32_t a = find(in), b = find(o);
      if (a == b) continue;
      parent[static_cast<std::size_t>(b)] = a;
      ++bp.in_place;
      break;
    }
  }
  // Groups: union of lifetimes, max size.
  struct Group {
    std::int32_t first = INT32_MAX, last = -1;
    std::int64_t bytes = 0, offset = 0;
  };
  std::vector<Group> groups(T);
  std::vector<std::int32_t> roots;
  for (std::size_t t = 0; t < T; ++t) {
    const TensorPlan& p = bp.tensors[t];
    if (p.place != Place::arena) continue;
    bp.naive_bytes = sat_add(bp.naive_bytes, align_up(p.bytes));
    Group& gr = groups[static_cast<std::size_t>(find(static_cast<std::int32_t>(t)))];
    if (gr.last < 0) roots.push_back(find(static_cast<std::int32_t>(t)));
    gr.first = std::min(gr.first, p.first);
    gr.last = std::max(gr.last, p.last);
    gr.bytes = std::max(gr.bytes, align_up(p.bytes));
  }
  // Greedy by size: biggest first, lowest offset that fits beside every overlapping placed group.
  std::sort(roots.begin(), roots.end(), [&](std::int32_t a, std::int32_t b) {
    const Group &x = groups[static_cast<std::size_t>(a)], &y = groups[static_cast<std::size_t>(b)];
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.first < y.first;
  });
  std::vector<std::int32_t> placed;
  for (std::int32_t r : roots) {
    Group& gr = groups[static_cast<std::size_t>(r)];
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (std::int32_t q : placed) {
      const Group& o = groups[static_cast<std::size_t>(q)];
      if (o.first <= gr.last && gr.first <= o.last) busy.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(busy.begin(), busy.end());
    std::int64_t at = 0;
    for (auto [b, e] : busy) {
      if (at + gr.bytes <= b) break;
      at = std::max(at, e);
    }
    gr.offset = at;
    if (at > max_tensor_bytes - gr.bytes)  // what a .npubin may hold (program/validate.hpp); never an int64 overflow
      throw Error(ErrorCode::resource, "the program's arena would exceed the 64 TiB a .npubin may hold", {.file = g.source,
                  .tensor = g.tensor(r).name, .expected = "<= " + std::to_string(max_tensor_bytes) + " bytes",
                  .found = "offset " + std::to_string(at) + " + " + std::to_string(gr.bytes) + " bytes"});
    bp.arena_bytes = std::max(bp.arena_bytes, at + gr.bytes);
    placed.push_back(r);
  }
  for (std::size_t t = 0; t < T; ++t) {
    TensorPlan& p = bp.tensors[t];
    if (p.place == Place::arena) p.offset = groups[static_cast<std::size_t>(find(static_cast<std::int32_t>(t)))].offset;
  }
  for (std::size_t t = 0; t < T; ++t) {
    TensorPlan& p = bp.tensors[t];
    if (p.place == Place::view) p.offset = bp.tensors[static_cast<std::size_t>(p.root)].offset;
  }
  // Liveness lower bound over the kernel schedule (groups counted once).
  std::vector<std::int64_t> live(static_cast<std::size_t>(K) + 2, 0);
  for (std::int32_t r : roots) {
    const Group& gr = groups[static_cast<std::size_t>(r)];
    for (std::int32_t k = std::max(gr.first, 0); k <= std::min(gr.last, K); ++k) live[static_cast<std::size_t>(k)] = sat_add(live[static_cast<std::size_t>(k)], gr.bytes);
  }
  bp.lower_bound_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  return bp;
}

}  // namespace npusim::inline NPUSIM_ABI::plan
