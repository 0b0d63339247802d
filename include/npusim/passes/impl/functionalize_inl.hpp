// Definitions for npusim/passes/functionalize.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <unordered_map>

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/functionalize.hpp"
#include "npusim/passes/graph_edit.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

namespace detail {
inline bool is_write(std::size_t idx) {
  return idx == ops::op_index_v<ops::Copy> || idx == ops::op_index_v<ops::Zero> || idx == ops::op_index_v<ops::Fill>;
}
// Views whose inverse is a view back to the input's shape (the tensors are contiguous).
inline bool is_reshaping_view(std::size_t idx) {
  return idx == ops::op_index_v<ops::View> || idx == ops::op_index_v<ops::Reshape> || idx == ops::op_index_v<ops::Flatten> ||
         idx == ops::op_index_v<ops::Unflatten> || idx == ops::op_index_v<ops::Unsqueeze> || idx == ops::op_index_v<ops::Squeeze> ||
         idx == ops::op_index_v<ops::Alias>;
}
inline ir::AttrValue shape_attr(const Shape& s) {
  ir::AttrList l;
  for (auto d : s) l.emplace_back(d);
  return l;
}
inline ir::AttrValue dtype_attr(DType t) { return std::string(dtype_name(t)); }
// A new intermediate tensor like `like` (shape, dtype) under a fresh name.
inline TensorId new_tensor(ir::Graph& g, const std::string& base, const Shape& shape, DType dtype) {
  ir::TensorInfo t;
  t.name = fresh_name(g, base);
  t.shape = shape;
  t.dtype = dtype;
  t.kind = ir::TensorKind::intermediate;
  return g.add_tensor(std::move(t));
}
}  // namespace detail

NPUSIM_FUNC bool has_writes(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    if (auto i = ops::find_op(n.op_type); i && detail::is_write(*i)) return true;
  return false;
}

NPUSIM_FUNC int functionalize_writes(ir::Graph& g) {
  if (!has_writes(g)) return 0;
  std::unordered_map<TensorId, TensorId> latest;  // tensor -> the tensor holding its current value
  auto current = [&](TensorId t) {
    for (auto it = latest.find(t); it != latest.end(); it = latest.find(t)) t = it->second;
    return t;
  };
  std::unordered_map<TensorId, std::size_t> producer;  // in the rebuilt node list
  std::vector<ir::Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  auto push = [&](ir::Node n) {
    for (TensorId t : n.outputs) producer[t] = g.nodes.size();
    g.nodes.push_back(std::move(n));
  };
  int rewritten = 0;
  for (ir::Node& n : nodes) {
    for (TensorId& t : n.inputs) t = current(t);
    const auto idx = ops::find_op(n.op_type);
    const bool write = idx && detail::is_write(*idx) && !n.inputs.empty() && n.outputs.size() == 1;
    const std::string name = n.name;
    const TensorId self = write ? n.inputs[0] : ir::no_tensor;
    TensorId value = write ? n.outputs[0] : ir::no_tensor;
    push(std::move(n));
    if (!write) continue;
    // Up the chain of views from the written tensor to its base, one new value per level.
    std::vector<std::pair<TensorId, TensorId>> updates{{self, value}};
    for (TensorId t = self;;) {
      auto p = producer.find(t);
      if (p == producer.end()) break;
      const ir::Node pn = g.nodes[p->second];
      const auto pi = ops::find_op(pn.op_type);
      if (!pi || pn.inputs.empty()) break;
      const TensorId parent = pn.inputs[0];
      const ir::TensorInfo pinfo = g.tensor(parent);  // a copy: new tensors grow g.tensors
      ir::Node up;
      if (*pi == ops::op_index_v<ops::Slice>) {
        up.op_type = "aten.slice_scatter.default";
        up.inputs = {parent, value};
        up.attrs = pn.attrs;
      } else if (*pi == ops::op_index_v<ops::Select>) {
        // select_scatter as unsqueeze + slice_scatter of one index.
        const auto sa = ops::read_attrs<ops::Select::Attrs>(pn.attrs, pn.op_type);
        const std::int64_t dim = normalize_dim(sa.dim, static_cast<std::int64_t>(pinfo.shape.size()));
        const std::int64_t at = ops::Select::resolved_index(sa, pinfo.shape[static_cast<std::size_t>(dim)]);
        Shape us = pinfo.shape;
        us[static_cast<std::size_t>(dim)] = 1;
        const DType ud = pinfo.dtype;
        const TensorId u = detail::new_tensor(g, g.tensor(value).name + "_unsqueezed", us, ud);
        ir::Node un{g.tensor(u).name, "aten.unsqueeze.default", {value}, {u}, {}};
        un.attrs.set("dim", ir::AttrValue(dim));
        push(std::move(un));
        up.op_type = "aten.slice_scatter.default";
        up.inputs = {parent, u};
        up.attrs.set("dim", ir::AttrValue(dim)), up.attrs.set("start", ir::AttrValue(at)), up.attrs.set("end", ir::AttrValue(at + 1));
      } else if (*pi == ops::op_index_v<ops::Transpose> || *pi == ops::op_index_v<ops::TransposeT> || *pi == ops::op_index_v<ops::Permute> ||
                 *pi == ops::op_index_v<ops::Expand> || *pi == ops::op_index_v<ops::Swapaxes> || *pi == ops::op_index_v<ops::Unbind> ||
                 *pi == ops::op_index_v<ops::Split> || *pi == ops::op_index_v<ops::Chunk>) {
        throw Error(ErrorCode::unsupported, "an in-place write through a " + std::string(ops::op_info(*pi).id) + " view",
                    {.node = name, .expected = "writes through slice, select and reshaping views"});
      } else if (detail::is_reshaping_view(*pi)) {
        up.op_type = "aten.view.default";
        up.inputs = {value};
        up.attrs.set("size", detail::shape_attr(pinfo.shape));
      } else {
        break;  // a copy (clone, a computed tensor): the base
      }
      const Shape ps = pinfo.shape;
      const DType pd = pinfo.dtype;
      const TensorId nv = detail::new_tensor(g, pinfo.name + "_written", ps, pd);
      up.name = g.tensor(nv).name;
      up.outputs = {nv};
      push(std::move(up));
      value = nv;
      t = parent;
      updates.emplace_back(parent, nv);
    }
    for (const auto& [t, v] : updates)
      if (t != v) latest[t] = v;
    ++rewritten;
  }
  renumber_producers(g);
  return rewritten;
}

NPUSIM_FUNC int canonicalize_aliases(ir::Graph& g) {
  std::vector<ir::Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  int changed = 0;
  for (ir::Node& n : nodes) {
    const auto idx = ops::find_op(n.op_type);
    if (!idx || n.outputs.size() != 1 || n.inputs.empty()) {  // every op rewritten here has one output and an input
      g.nodes.push_back(std::move(n));
      continue;
    }
    const std::size_t i = *idx;
    auto in_spec = [&](std::size_t k) -> const ir::TensorInfo& { return g.tensor(n.inputs.at(k)); };
    const ir::TensorInfo& out = g.tensor(n.outputs.at(0));
    const Shape out_shape = out.shape;
    const DType out_dtype = out.dtype;
    ir::AttrMap a;
    bool rewrite = true;
    if (i == ops::op_index_v<ops::Swapaxes>) {
      const auto sa = ops::read_attrs<ops::Swapaxes::Attrs>(n.attrs, n.op_type);
      const ops::Transpose::Attrs t = ops::Swapaxes::transpose(sa);
      a.set("dim0", ir::AttrValue(t.dim0)), a.set("dim1", ir::AttrValue(t.dim1));
      n.op_type = "aten.transpose.int";
    } else if (i == ops::op_index_v<ops::ReflectionPad> || i == ops::op_index_v<ops::ReplicationPad> || i == ops::op_index_v<ops::CircularPad>) {
      const ops::Pad::Attrs p = ops::dispatch_op<ops::Pad::Attrs>(i, [&]<class Op>() -> ops::Pad::Attrs {
        if constexpr (requires { Op::pad(ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type)); })
          return Op::pad(ops::read_attrs<typename Op::Attrs>(n.attrs, n.op_type));
        else return {};
      });
      a.set("pad", detail::shape_attr(p.pad)), a.set("mode", ir::AttrValue(p.mode));
      n.op_type = "aten.pad.default";
    } else if (i == ops::op_index_v<ops::ExpandAs>) {
      a.set("size", detail::shape_attr(out_shape));
      n.op_type = "aten.expand.default", n.inputs.resize(1);
    } else if (i == ops::op_index_v<ops::RepeatInterleave>) {
      // [.., n, ..] -> unsqueeze -> [.., n, 1, ..] -> expand -> [.., n, r, ..] -> reshape [.., n*r, ..]
      const auto ra = ops::read_attrs<ops::RepeatInterleave::Attrs>(n.attrs, n.op_type);
      TensorId src = n.inputs.at(0);
      const DType dt = in_spec(0).dtype;
      Shape base = in_spec(0).shape;
      if (!ra.dim || base.empty()) {
        base = {numel(base)};
        const TensorId f = detail::new_tensor(g, n.name + "_flat", base, dt);
        ir::Node fl{g.tensor(f).name, "aten.reshape.default", {src}, {f}, {}};
        fl.attrs.set("shape", detail::shape_attr(base));
        g.nodes.push_back(std::move(fl));
        src = f;
      }
      const std::size_t d = ops::RepeatInterleave::axis(ra, base.size());
      Shape unsq = base, wide = base;
      unsq.insert(unsq.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
      wide.insert(wide.begin() + static_cast<std::ptrdiff_t>(d) + 1, ra.repeats);
      const TensorId u = detail::new_tensor(g, n.name + "_unsqueezed", unsq, dt), e = detail::new_tensor(g, n.name + "_expanded", wide, dt);
      ir::Node un{g.tensor(u).name, "aten.unsqueeze.default", {src}, {u}, {}};
      un.attrs.set("dim", ir::AttrValue(static_cast<std::int64_t>(d) + 1));
      g.nodes.push_back(std::move(un));
      ir::Node ex{g.tensor(e).name, "aten.expand.default", {u}, {e}, {}};
      ex.attrs.set("size", detail::shape_attr(wide));
      g.nodes.push_back(std::move(ex));
      a.set("shape", detail::shape_attr(out_shape));
      n.op_type = "aten.reshape.default", n.inputs = {e};
    } else if (i == ops::op_index_v<ops::TypeAs>) {
      a.set("dtype", detail::dtype_attr(out_dtype));
      n.op_type = "aten._to_copy.default", n.inputs.resize(1);
    } else if (i == ops::op_index_v<ops::NewZeros> || i == ops::op_index_v<ops::Zero> || i == ops::op_index_v<ops::Fill>) {
      a.set("size", detail::shape_attr(out_shape)), a.set("dtype", detail::dtype_attr(out_dtype));
      if (i == ops::op_index_v<ops::Fill>) {
        const auto fa = ops::read_attrs<ops::Fill::Attrs>(n.attrs, n.op_type);
        a.set("fill_value", fa.value.is_integral ? ir::AttrValue(static_cast<std::int64_t>(fa.value.value)) : ir::AttrValue(fa.value.value));
        n.op_type = "aten.full.default";
      } else {
        n.op_type = "aten.zeros.default";
      }
      n.inputs.clear();
    } else if (i == ops::op_index_v<ops::Copy>) {
      TensorId src = n.inputs.at(1);
      const ir::TensorInfo& s = in_spec(1);
      if (s.shape != out_shape && s.dtype != out_dtype) {
        // expand first (in the source's type), then the cast below.
        const TensorId e = detail::new_tensor(g, n.name + "_expanded", out_shape, s.dtype);
        ir::Node ex{g.tensor(e).name, "aten.expand.default", {src}, {e}, {}};
        ex.attrs.set("size", detail::shape_attr(out_shape));
        g.nodes.push_back(std::move(ex));
        src = e;
      }
      const ir::TensorInfo& s2 = g.tensor(src);
      if (s2.shape != out_shape) {
        a.set("size", detail::shape_attr(out_shape));
        n.op_type = "aten.expand.default";
      } else if (s2.dtype != out_dtype) {
        a.set("dtype", detail::dtype_attr(out_dtype));
        n.op_type = "aten._to_copy.default";
      } else {
        n.op_type = "aten.alias.default";
      }
      n.inputs = {src};
    } else {
      rewrite = false;
    }
    if (rewrite) n.attrs = std::move(a), ++changed;
    g.nodes.push_back(std::move(n));
  }
  renumber_producers(g);
  return changed;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
