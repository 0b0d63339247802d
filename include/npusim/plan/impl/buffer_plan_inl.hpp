// Definitions for npusim/plan/buffer_plan.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>
#include <numeric>

#include "npusim/fusion/patterns.hpp"
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

NPUSIM_FUNC bool writes_cache_in_place(std::string_view kind) {
  return kind == "index_copy" || kind == fusion::RopeKv::name || kind == fusion::LinearGroupRopeKv::name;
}

namespace detail {

// plan_buffers' state and its steps, in the order it runs them: each tensor's size and place,
// lifetimes over the kernel schedule, KV caches written in place, view roots, pointwise kernels
// in place (groups of tensors sharing one slot, a union-find), then the groups' offsets.
class BufferPlanner {
 public:
  BufferPlanner(const ir::Graph& g, const std::vector<Kernel>& ks) : g_(g), ks_(ks), T_(g.tensors.size()), K_(static_cast<std::int32_t>(ks.size())), parent_(T_) {
    std::iota(parent_.begin(), parent_.end(), 0);
    bp_.tensors.resize(T_);
  }

  BufferPlan run(const passes::DTypePolicy& pol) {
    size_and_place(pol);
    lifetimes();
    kv_caches_in_place();
    resolve_views();
    pointwise_in_place();
    const std::vector<std::int32_t> roots = make_groups();
    place_groups(roots);
    bp_.lower_bound_bytes = live_lower_bound(roots);
    return std::move(bp_);
  }

 private:
  struct Group {  // a slot of the arena: the union of its tensors' lifetimes, their largest size
    std::int32_t first = INT32_MAX, last = -1;
    std::int64_t bytes = 0, offset = 0;
  };
  TensorPlan& tp(ir::TensorId t) { return bp_.tensors[static_cast<std::size_t>(t)]; }
  std::int32_t find(std::int32_t x) {
    while (parent_[static_cast<std::size_t>(x)] != x)
      x = parent_[static_cast<std::size_t>(x)] = parent_[static_cast<std::size_t>(parent_[static_cast<std::size_t>(x)])];
    return x;
  }

  // Storage type and bytes of every tensor; inputs and weights have their own places.
  void size_and_place(const passes::DTypePolicy& pol) {
    for (std::size_t t = 0; t < T_; ++t) {
      const ir::TensorInfo& info = g_.tensors[t];
      TensorPlan& p = bp_.tensors[t];
      p.storage = pol.storage(info.dtype);
      try {
        p.bytes = checked_nbytes(info.shape, p.storage);  // the storage type may be wider than the tensor's own
      } catch (Error& e) {
        throw e.with_tensor(info.name).with_file(g_.source);
      }
      p.root = static_cast<ir::TensorId>(t);
      if (info.kind == ir::TensorKind::input) p.place = Place::input, p.first = -1;
      if (info.kind == ir::TensorKind::weight || info.kind == ir::TensorKind::constant) p.place = Place::weight;
    }
  }

  // Kernel outputs own storage (or view their input); reads extend lifetimes; graph outputs live to the end.
  void lifetimes() {
    for (std::int32_t k = 0; k < K_; ++k) {
      const Kernel& kr = ks_[static_cast<std::size_t>(k)];
      for (ir::TensorId t : kr.inputs) tp(t).last = std::max(tp(t).last, k);
      for (ir::TensorId t : kr.outputs) {
        TensorPlan& p = tp(t);
        p.first = k, p.last = std::max(p.last, k);
        if (kr.kind == "view") {
          p.place = Place::view;
          p.root = kr.inputs.at(0);
        } else {
          p.place = Place::arena;
        }
      }
    }
    for (ir::TensorId t : g_.outputs) tp(t).last = K_;
  }

  // KV caches updated in place: index_copy over a graph input that nothing else reads (alone, or
  // inside a kind that writes caches in place: writes_cache_in_place) writes into that input's
  // buffer (only the new rows), and its output shares the input's bytes.
  void kv_caches_in_place() {
    std::vector<int> readers(T_, 0);
    for (const Kernel& kr : ks_)
      for (ir::TensorId t : kr.inputs) ++readers[static_cast<std::size_t>(t)];
    std::vector<bool> is_out(T_, false);
    for (ir::TensorId t : g_.outputs) is_out[static_cast<std::size_t>(t)] = true;
    for (const Kernel& kr : ks_) {
      if (!writes_cache_in_place(kr.kind)) continue;
      for (auto ni : kr.nodes) {
        const ir::Node& n = g_.nodes[static_cast<std::size_t>(ni)];
        if (!ops::find_op(n.op_type) || *ops::find_op(n.op_type) != ops::op_index_v<ops::IndexCopy> || n.outputs.size() != 1) continue;
        const ir::TensorId self = n.inputs.at(0), o = n.outputs[0];
        if (std::find(kr.outputs.begin(), kr.outputs.end(), o) == kr.outputs.end()) continue;
        TensorPlan &sp = tp(self), &op = tp(o);
        if (sp.place != Place::input || readers[static_cast<std::size_t>(self)] != 1 || is_out[static_cast<std::size_t>(self)] || sp.storage != op.storage)
          continue;
        op.place = Place::view;
        op.root = self;
      }
    }
  }

  // A view's root is the first non-view tensor down its chain; the view keeps it alive while read.
  void resolve_views() {
    for (std::size_t t = 0; t < T_; ++t) {
      TensorPlan& p = bp_.tensors[t];
      if (p.place != Place::view) continue;
      ir::TensorId r = p.root;
      while (tp(r).place == Place::view) r = tp(r).root;
      p.root = r;
      tp(r).last = std::max(tp(r).last, p.last);
    }
  }

  // In place: a pointwise kernel's output may take the slot of a same-size arena input that dies here.
  void pointwise_in_place() {
    for (std::int32_t k = 0; k < K_; ++k) {
      const Kernel& kr = ks_[static_cast<std::size_t>(k)];
      bool pw = pointwise_kind(kr.kind) || (kr.nodes.size() == 1 && kr.kind != "view" && kr.outputs.size() == 1 &&
                                            ops::op_info(*ops::find_op(g_.nodes[static_cast<std::size_t>(kr.nodes[0])].op_type)).op_class ==
                                                ops::OpClass::elementwise);
      // linear_add: its residual only (the product reads all of x for every output), and only
      // where no other operand shares the residual's bytes.
      const bool residual = kr.kind == "linear_add";
      if ((!pw && !residual) || kr.outputs.size() != 1) continue;
      ir::TensorId o = kr.outputs[0];
      if (tp(o).place != Place::arena) continue;
      for (ir::TensorId in : kr.inputs) {
        if (residual && in != kr.inputs.back()) continue;
        if (residual && std::any_of(kr.inputs.begin(), kr.inputs.end() - 1, [&](ir::TensorId t) { return t == in || tp(t).root == in; })) break;
        const TensorPlan& ip = tp(in);
        if (ip.place != Place::arena || ip.last != k || ip.bytes != tp(o).bytes || g_.tensor(in).shape != g_.tensor(o).shape) continue;
        // Every view of `in` must also be dead by now (their reads extended ip.last already).
        std::int32_t a = find(in), b = find(o);
        if (a == b) continue;
        parent_[static_cast<std::size_t>(b)] = a;
        ++bp_.in_place;
        break;
      }
    }
  }

  // One group per slot: the union of its tensors' lifetimes, their largest (aligned) size. Returns the groups' roots.
  std::vector<std::int32_t> make_groups() {
    groups_.assign(T_, Group{});
    std::vector<std::int32_t> roots;
    for (std::size_t t = 0; t < T_; ++t) {
      const TensorPlan& p = bp_.tensors[t];
      if (p.place != Place::arena) continue;
      bp_.naive_bytes = sat_add(bp_.naive_bytes, align_up(p.bytes));
      const std::int32_t r = find(static_cast<std::int32_t>(t));
      Group& gr = groups_[static_cast<std::size_t>(r)];
      if (gr.last < 0) roots.push_back(r);
      gr.first = std::min(gr.first, p.first);
      gr.last = std::max(gr.last, p.last);
      gr.bytes = std::max(gr.bytes, align_up(p.bytes));
    }
    return roots;
  }

  // Greedy by size: biggest first, at the lowest offset that fits beside every overlapping placed
  // group; then every arena tensor and view takes its slot's offset.
  void place_groups(std::vector<std::int32_t> roots) {
    std::sort(roots.begin(), roots.end(), [&](std::int32_t a, std::int32_t b) {
      const Group &x = groups_[static_cast<std::size_t>(a)], &y = groups_[static_cast<std::size_t>(b)];
      return x.bytes != y.bytes ? x.bytes > y.bytes : x.first < y.first;
    });
    std::vector<std::int32_t> placed;
    for (std::int32_t r : roots) {
      Group& gr = groups_[static_cast<std::size_t>(r)];
      std::vector<std::pair<std::int64_t, std::int64_t>> busy;
      for (std::int32_t q : placed) {
        const Group& o = groups_[static_cast<std::size_t>(q)];
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
        throw Error(ErrorCode::resource, "the program's arena would exceed the 64 TiB a .npubin may hold", {.file = g_.source,
                    .tensor = g_.tensor(r).name, .expected = "<= " + std::to_string(max_tensor_bytes) + " bytes",
                    .found = "offset " + std::to_string(at) + " + " + std::to_string(gr.bytes) + " bytes"});
      bp_.arena_bytes = std::max(bp_.arena_bytes, at + gr.bytes);
      placed.push_back(r);
    }
    for (std::size_t t = 0; t < T_; ++t) {
      TensorPlan& p = bp_.tensors[t];
      if (p.place == Place::arena) p.offset = groups_[static_cast<std::size_t>(find(static_cast<std::int32_t>(t)))].offset;
    }
    for (std::size_t t = 0; t < T_; ++t) {
      TensorPlan& p = bp_.tensors[t];
      if (p.place == Place::view) p.offset = tp(p.root).offset;
    }
  }

  // Liveness lower bound over the kernel schedule (groups counted once).
  std::int64_t live_lower_bound(const std::vector<std::int32_t>& roots) const {
    std::vector<std::int64_t> live(static_cast<std::size_t>(K_) + 2, 0);
    for (std::int32_t r : roots) {
      const Group& gr = groups_[static_cast<std::size_t>(r)];
      for (std::int32_t k = std::max(gr.first, 0); k <= std::min(gr.last, K_); ++k)
        live[static_cast<std::size_t>(k)] = sat_add(live[static_cast<std::size_t>(k)], gr.bytes);
    }
    return *std::max_element(live.begin(), live.end());
  }

  const ir::Graph& g_;
  const std::vector<Kernel>& ks_;
  std::size_t T_;
  std::int32_t K_;
  std::vector<std::int32_t> parent_;
  std::vector<Group> groups_;
  BufferPlan bp_;
};

}  // namespace detail

NPUSIM_FUNC BufferPlan plan_buffers(const ir::Graph& g, const std::vector<Kernel>& ks, const passes::DTypePolicy& pol) {
  return detail::BufferPlanner(g, ks).run(pol);
}

}  // namespace npusim::inline NPUSIM_ABI::plan
