// Structural checks of a CompiledProgram read from bytes. The reader has already checked that
// every index lies in range; this checks what the runtime relies on beyond that, so a damaged or
// hostile .npubin is an error here rather than a crash (or a silent wrong answer) later:
//   graph     unique tensor names, tensor kinds agreeing with the input/weight lists, every
//             intermediate produced by exactly the node its producer link names, every node input
//             produced earlier (so no cycles), graph outputs produced;
//   kernels   member nodes cover every node exactly once, in an order that respects dependencies
//             (the reference runs nodes in kernel order);
//   plan      stored sizes agree with shape and storage dtype, arena placements are aligned and lie inside an
//             arena no larger than the tensor cap, views rooted at a real buffer;
//   program   each partition's inputs come from the caller or an earlier partition, and every
//             program output is produced;
//   recipes   known kinds with the inputs, outputs and params they need; each derived weight
//             produced once and read only by later recipes (no cycles);
//   semantics every node is a known op whose stored output shapes and dtypes are what the op
//             infers from its inputs and attributes; every kernel's kind is "view" (a node that
//             moves no data), its node's op id, or a fusion pattern; a kernel's inputs are read by
//             its nodes and produced outside it, its outputs are produced by its nodes, stored
//             (arena or view: never a weight or an input) and include every member result read
//             elsewhere; everything a kernel reads has storage.
// Checksums only prove the bytes are the ones written: a file forged with a recomputed checksum
// meets these checks like any other.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "npusim/fusion/fuse.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

namespace validate_detail {

[[noreturn]] inline void fail(const std::string& what, ErrorContext ctx = {}) {
  throw Error(ErrorCode::parse, what, std::move(ctx));
}

inline void check_graph_structure(const ir::Graph& g) {
  const std::size_t T = g.tensors.size();
  std::unordered_set<std::string> names;
  for (const auto& t : g.tensors)
    if (!names.insert(t.name).second) fail("duplicate tensor name", {.tensor = t.name});
  auto expect_kind = [&](ir::TensorId id, bool ok, const char* list) {
    if (!ok) fail(std::string("tensor listed in ") + list + " has kind '" + ir::tensor_kind_name(g.tensor(id).kind) + "'",
                  {.tensor = g.tensor(id).name});
  };
  for (auto id : g.inputs) expect_kind(id, g.tensor(id).kind == ir::TensorKind::input, "inputs");
  for (auto id : g.weights)
    expect_kind(id, g.tensor(id).kind == ir::TensorKind::weight || g.tensor(id).kind == ir::TensorKind::constant, "weights");
  std::vector<bool> defined(T, false);
  for (std::size_t i = 0; i < T; ++i) {
    const auto& t = g.tensors[i];
    if (t.kind != ir::TensorKind::intermediate) {
      if (t.producer != -1) fail("a non-intermediate tensor names a producer node", {.tensor = t.name});
      defined[i] = true;
    }
  }
  std::vector<bool> produced(T, false);
  for (std::size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ir::Node& n = g.nodes[ni];
    for (auto t : n.inputs)
      if (!defined[static_cast<std::size_t>(t)])
        fail("node reads a tensor before it is produced (a cycle, or nodes out of topological order)",
             {.node = n.name, .tensor = g.tensor(t).name});
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const auto o = static_cast<std::size_t>(n.outputs[k]);
      const auto& t = g.tensors[o];
      if (t.kind != ir::TensorKind::intermediate || produced[o] || t.producer != static_cast<std::int32_t>(ni) ||
          t.producer_output != static_cast<std::int32_t>(k))
        fail("node output disagrees with the tensor's producer link (or is produced twice)", {.node = n.name, .tensor = t.name,
             .expected = "producer " + std::to_string(ni) + " output " + std::to_string(k),
             .found = "producer " + std::to_string(t.producer) + " output " + std::to_string(t.producer_output)});
      produced[o] = defined[o] = true;
    }
  }
  // An intermediate no node produces may stay in the table (passes leave them) if nothing reads it.
  for (std::size_t i = 0; i < T; ++i)
    if (g.tensors[i].kind == ir::TensorKind::intermediate && !produced[i] && g.tensors[i].producer != -1)
      fail("intermediate tensor is not an output of its producer node", {.tensor = g.tensors[i].name});
  for (auto t : g.outputs)
    if (!defined[static_cast<std::size_t>(t)]) fail("graph output is produced by no node", {.tensor = g.tensor(t).name});
}

inline void check_schedule(const Partition& p) {
  const ir::Graph& g = p.graph;
  std::vector<bool> scheduled(g.nodes.size(), false), ready(g.tensors.size(), false);
  for (std::size_t i = 0; i < g.tensors.size(); ++i) ready[i] = g.tensors[i].kind != ir::TensorKind::intermediate;
  std::size_t count = 0;
  for (const Kernel& k : p.kernels)
    for (auto ni : k.nodes) {
      const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
      if (scheduled[static_cast<std::size_t>(ni)]) fail("a node belongs to two kernels", {.node = n.name});
      scheduled[static_cast<std::size_t>(ni)] = true, ++count;
      for (auto t : n.inputs)
        if (!ready[static_cast<std::size_t>(t)])
          fail("kernel schedule runs a node before one of its inputs is produced", {.node = n.name, .tensor = g.tensor(t).name});
      for (auto t : n.outputs) ready[static_cast<std::size_t>(t)] = true;
    }
  if (count != g.nodes.size())
    fail("kernels do not cover every node", {.expected = std::to_string(g.nodes.size()) + " nodes", .found = std::to_string(count)});
}

inline void check_plan(const Partition& p) {
  const ir::Graph& g = p.graph;
  const plan::BufferPlan& b = p.plan;
  constexpr std::int64_t max_arena = std::int64_t{1} << 46;  // the tensor cap (64 TiB)
  if (b.arena_bytes < 0 || b.arena_bytes > max_arena)
    throw Error(ErrorCode::resource, "the program's arena size is implausible",
                {.expected = "0.." + std::to_string(max_arena) + " bytes", .found = std::to_string(b.arena_bytes) + " bytes"});
  for (std::size_t i = 0; i < b.tensors.size(); ++i) {
    const plan::TensorPlan& t = b.tensors[i];
    const ir::TensorInfo& info = g.tensors[i];
    if (t.place == plan::Place::none) continue;  // inputs and weights too: a view may be rooted at them
    std::int64_t want = 0;
    try {
      want = checked_nbytes(info.shape, t.storage);  // the storage type may be wider than the tensor's own
    } catch (const Error& e) {
      fail("buffer plan: " + e.message(), {.tensor = info.name});
    }
    if (t.bytes != want)
      fail("buffer plan size disagrees with the tensor's shape and storage type",
           {.tensor = info.name, .expected = std::to_string(want) + " bytes", .found = std::to_string(t.bytes) + " bytes"});
    if (t.place == plan::Place::arena && (t.offset > b.arena_bytes || t.bytes > b.arena_bytes - t.offset))
      fail("tensor placed outside the arena", {.tensor = info.name, .expected = "end <= " + std::to_string(b.arena_bytes),
                                                .found = "offset " + std::to_string(t.offset) + " + " + std::to_string(t.bytes) + " bytes"});
    // Kernels store whole elements (and vectors) at these addresses: the planner aligns every
    // placement to plan::arena_alignment, a program that does not is forged.
    if (t.place == plan::Place::arena && t.offset % plan::arena_alignment != 0)
      fail("tensor placed at an arena offset that is not " + std::to_string(plan::arena_alignment) + "-byte aligned",
           {.tensor = info.name, .expected = "a multiple of " + std::to_string(plan::arena_alignment), .found = "offset " + std::to_string(t.offset)});
    if (t.place == plan::Place::view) {
      if (t.root < 0 || b.tensors[static_cast<std::size_t>(t.root)].place == plan::Place::view ||
          b.tensors[static_cast<std::size_t>(t.root)].bytes < t.bytes)
        fail("view is not rooted at a buffer at least as large as itself", {.tensor = info.name});
      // The root must be stored: a tensor of place none lives inside a fused kernel, or nowhere.
      if (b.tensors[static_cast<std::size_t>(t.root)].place == plan::Place::none)
        fail("view is rooted at a tensor that has no storage", {.tensor = info.name, .found = "root '" + g.tensors[static_cast<std::size_t>(t.root)].name + "'"});
    }
  }
}

template <class... Ps>
bool is_pattern_name(std::string_view kind, meta::list<Ps...>) {
  return ((kind == Ps::name) || ...);
}

// A view kernel's node moves no data: a view op, a cast that leaves the stored type unchanged, a
// transpose/permute of size-1 dims, an expand to its own shape.
inline bool moves_no_data(const fusion::GraphView& v, const plan::BufferPlan& b, std::int32_t ni) {
  const ir::Node& n = v.node(ni);
  if (v.is<ops::ToDtype>(ni))
    return b.tensors[static_cast<std::size_t>(n.inputs.at(0))].storage == b.tensors[static_cast<std::size_t>(n.outputs.at(0))].storage;
  return fusion::is_view_node(v, ni, passes::DTypePolicy{});
}

// A pattern kernel's nodes form its pattern: the pattern's own matcher, anchored at one of them with
// every other kernel's nodes taken, gives back the same kernel (nodes, inputs, outputs, params).
// Targets' fused kernels rely on the structure the matcher checked (a forged "attention" over
// a relu would have them read operands that are not there).
// Attribute values as the .npubin keeps them: a whole double may come back as an integer.
inline bool same_value(const ir::AttrValue& a, const ir::AttrValue& b) {
  if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
  if (a.is_list() && b.is_list())
    return a.as_list().size() == b.as_list().size() && std::equal(a.as_list().begin(), a.as_list().end(), b.as_list().begin(), same_value);
  return a == b;
}
inline bool same_kernel(const Kernel& a, const Kernel& b) {
  if (a.kind != b.kind || a.nodes != b.nodes || a.inputs != b.inputs || a.outputs != b.outputs || a.params.items.size() != b.params.items.size()) return false;
  for (const auto& [k, v] : a.params.items)
    if (const ir::AttrValue* w = b.params.find(k); !w || !same_value(v, *w)) return false;
  return true;
}

template <class... Ps>
bool forms_pattern(const ir::Graph& g, const std::vector<Kernel>& kernels, std::size_t k, meta::list<Ps...>) {
  const Kernel& kr = kernels[k];
  fusion::GraphView v(g);
  for (std::size_t j = 0; j < kernels.size(); ++j)
    if (j != k) v.take(kernels[j].nodes);
  auto same = [&](auto pattern) {
    using P = decltype(pattern);
    for (auto anchor : kr.nodes) {
      auto m = P::match(v, anchor);
      if (!m) continue;
      auto again = fusion::finalize(v, std::move(*m), P::name, fusion::may_run_early<P>);
      if (again && same_kernel(*again, kr)) return true;
    }
    return false;
  };
  bool ok = false;
  ((kr.kind == Ps::name && (ok = same(Ps{}))) || ...);
  return ok;
}

// check_semantics' steps, in the order it runs them.
inline void check_storage_types(const ir::Graph& g, const plan::BufferPlan& b, DType compute) {
  // Storage types are the compiler's: an integer or bool tensor in its own type, a float tensor
  // in float32 or the compute type (targets' kernels take no others).
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const DType ir = g.tensors[t].dtype, st = b.tensors[t].storage;
    if (is_floating(ir) ? (st != DType::f32 && st != compute) : st != ir)
      fail("buffer plan stores a tensor in a type the compiler does not use", {.tensor = g.tensors[t].name,
           .expected = is_floating(ir) ? "float32 or " + std::string(dtype_name(compute)) : std::string(dtype_name(ir)), .found = std::string(dtype_name(st))});
  }
}

inline void check_places(const ir::Graph& g, const plan::BufferPlan& b) {
  // Places agree with kinds: an input is bound by the caller, a weight or constant at load, an
  // intermediate lives in the arena, as a view, or nowhere (inside a fused kernel, or unused).
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const ir::TensorKind kind = g.tensors[t].kind;
    const plan::Place place = b.tensors[t].place;
    const bool ok = kind == ir::TensorKind::input      ? place == plan::Place::input
                    : kind == ir::TensorKind::intermediate ? place == plan::Place::arena || place == plan::Place::view || place == plan::Place::none
                                                           : place == plan::Place::weight;
    if (!ok)
      fail("buffer plan places a tensor where its kind cannot be", {.tensor = g.tensors[t].name,
           .expected = std::string("a place for a tensor of kind '") + ir::tensor_kind_name(kind) + "'", .found = plan::place_name(place)});
  }
}

inline void check_outputs_stored(const ir::Graph& g, const plan::BufferPlan& b) {
  // A result the caller reads back is stored somewhere (the executors copy it out of that place).
  for (ir::TensorId t : g.outputs)
    if (b.tensors.at(static_cast<std::size_t>(t)).place == plan::Place::none)
      fail("buffer plan stores no partition output", {.tensor = g.tensor(t).name, .expected = "arena, view, input or weight", .found = "none"});
}

inline void check_float_operands(const ir::Graph& g) {
  // Float math takes float operands (the IR's own inference checks shapes and output dtypes, not
  // every operand's): convolutions, matrix products, normalisations, pooling, the softmaxes, and
  // attention's query, key and value.
  for (const ir::Node& n : g.nodes) {
    const ops::OpInfo& info = ops::op_info(ops::require_op(n));
    std::size_t count = 0;
    switch (info.op_class) {
      case ops::OpClass::conv:
      case ops::OpClass::matmul:
        count = info.id == ops::QConv2d::id || info.id == ops::QLinear::id ? 0 : n.inputs.size();  // int8 ops: their own checks
        break;
      case ops::OpClass::normalization: count = n.inputs.size(); break;
      case ops::OpClass::pool: count = info.id == ops::QMaxPool2d::id ? 0 : n.inputs.size(); break;
      case ops::OpClass::attention: count = std::min<std::size_t>(3, n.inputs.size()); break;
      case ops::OpClass::reduction: count = info.id == "softmax" || info.id == "log_softmax" ? std::min<std::size_t>(1, n.inputs.size()) : 0; break;
      default: break;
    }
    for (std::size_t i = 0; i < count; ++i)
      if (!is_floating(g.tensor(n.inputs[i]).dtype))
        fail(std::string(info.id) + " takes floating-point operands", {.node = n.name, .tensor = g.tensor(n.inputs[i]).name,
             .expected = "float32, float16, bfloat16 or float64", .found = std::string(dtype_name(g.tensor(n.inputs[i]).dtype))});
  }
}

inline void check_constant_shapes(const ir::Graph& g) {
  // Constants the program carries have their tensors' shapes.
  for (const auto& t : g.tensors)
    if (t.kind == ir::TensorKind::constant || t.kind == ir::TensorKind::weight)
      if (auto c = g.constants.find(t.weight_key); c != g.constants.end() && c->second.shape() != t.shape)
        fail("embedded constant's shape differs from its tensor's", {.tensor = t.name, .expected = to_string(t.shape), .found = to_string(c->second.shape())});
}

inline void check_inputs_provided(const ir::Graph& g) {
  // Every input or weight a node reads, or the partition returns, is one the caller or the binding
  // provides.
  const auto provided = [&](ir::TensorId t, const std::string& who, const std::string& node) {
    const ir::TensorInfo& info = g.tensor(t);
    const bool listed = info.kind == ir::TensorKind::input        ? std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()
                        : info.kind == ir::TensorKind::intermediate ? true
                                                                     : std::find(g.weights.begin(), g.weights.end(), t) != g.weights.end();
    if (!listed)
      fail(who + " a tensor of kind '" + ir::tensor_kind_name(info.kind) + "' that is not in the graph's " +
           (info.kind == ir::TensorKind::input ? "inputs" : "weights"), {.node = node, .tensor = info.name});
    if ((info.kind == ir::TensorKind::weight || info.kind == ir::TensorKind::constant) && info.weight_key.empty())
      fail(who + " a weight that names no key to load it by", {.node = node, .tensor = info.name});
  };
  for (const ir::Node& n : g.nodes)
    for (auto t : n.inputs) provided(t, "node reads", n.name);
  for (auto t : g.outputs) provided(t, "partition returns", "");
}

// The kernel producing each tensor (-1: none, an input or weight).
inline std::vector<std::int32_t> producing_kernels(const Partition& p) {
  const ir::Graph& g = p.graph;
  std::vector<std::int32_t> kernel_of(g.tensors.size(), -1);  // the kernel producing each tensor
  for (std::size_t k = 0; k < p.kernels.size(); ++k)
    for (auto ni : p.kernels[k].nodes)
      for (auto t : g.nodes[static_cast<std::size_t>(ni)].outputs) kernel_of[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(k);
  return kernel_of;
}

inline void check_views(const Partition& p, const std::vector<std::int32_t>& kernel_of) {
  const ir::Graph& g = p.graph;
  const plan::BufferPlan& b = p.plan;
  // Views are the planner's only: a zero-copy kernel's output shares its input's storage, and an
  // index_copy may write into its `self` (a KV cache input read by nothing else) in place. A view
  // rooted anywhere else would let a kernel write into bytes of another size or purpose.
  auto resolved = [&](ir::TensorId t) {  // check_plan has made every view's root a stored tensor
    const plan::TensorPlan& tp = b.tensors[static_cast<std::size_t>(t)];
    return tp.place == plan::Place::view ? tp.root : t;
  };
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const plan::TensorPlan& tp = b.tensors[t];
    if (tp.place != plan::Place::view) continue;
    const std::int32_t k = kernel_of[t];
    const Kernel* kr = k < 0 ? nullptr : &p.kernels[static_cast<std::size_t>(k)];
    // The index_copy node of an in-place kind (plan::writes_cache_in_place) producing t.
    const ir::Node* writer = nullptr;
    if (kr && plan::writes_cache_in_place(kr->kind))
      for (auto ni : kr->nodes)
        if (const ir::Node& n = g.nodes[static_cast<std::size_t>(ni)];
            n.outputs.size() == 1 && n.outputs[0] == static_cast<ir::TensorId>(t) && ops::find_op(n.op_type) == ops::op_index_v<ops::IndexCopy>)
          writer = &n;
    const bool in_place = writer != nullptr;
    ir::TensorId src = ir::no_tensor;
    if (kr && kr->kind == "view" && !kr->inputs.empty()) src = kr->inputs[0];
    if (in_place) src = writer->inputs.at(0);
    const bool ok = src != ir::no_tensor && resolved(src) == resolved(static_cast<ir::TensorId>(t)) &&
                    b.tensors[static_cast<std::size_t>(resolved(src))].storage == tp.storage &&
                    (!in_place || b.tensors[static_cast<std::size_t>(src)].place == plan::Place::input);
    if (!ok)
      fail("a view must share the storage of its zero-copy kernel's input, or be an index_copy written into its own input",
           {.tensor = g.tensors[t].name, .found = "root '" + g.tensors[static_cast<std::size_t>(tp.root)].name + "'" +
                                                  (kr ? " of a '" + kr->kind + "' kernel" : std::string(" of no kernel"))});
  }
}

// Each kernel: its operands are its nodes' own and stored where it can read and write them, and
// its kind is a view, its node's op or a fusion pattern its nodes form.
inline void check_kernels(const Partition& p, const std::vector<std::int32_t>& kernel_of) {
  const ir::Graph& g = p.graph;
  const plan::BufferPlan& b = p.plan;
  const fusion::GraphView v(g);
  std::vector<bool> read_outside(g.tensors.size(), false);  // read by another kernel, or a graph output
  for (auto t : g.outputs) read_outside[static_cast<std::size_t>(t)] = true;
  for (std::size_t k = 0; k < p.kernels.size(); ++k)
    for (auto ni : p.kernels[k].nodes)
      for (auto t : g.nodes[static_cast<std::size_t>(ni)].inputs)
        if (kernel_of[static_cast<std::size_t>(t)] != static_cast<std::int32_t>(k)) read_outside[static_cast<std::size_t>(t)] = true;
  for (std::size_t k = 0; k < p.kernels.size(); ++k) {
    const Kernel& kr = p.kernels[k];
    const std::string what = "kernel " + std::to_string(k) + " ('" + kr.kind + "')";
    if (kr.nodes.empty()) fail(what + " has no nodes");
    const ir::Node& first = g.nodes[static_cast<std::size_t>(kr.nodes[0])];
    const std::string_view op_id = ops::op_info(ops::require_op(first)).id;
    auto member = [&](ir::TensorId t, bool as_output) {
      for (auto ni : kr.nodes) {
        const auto& io = as_output ? g.nodes[static_cast<std::size_t>(ni)].outputs : g.nodes[static_cast<std::size_t>(ni)].inputs;
        if (std::find(io.begin(), io.end(), t) != io.end()) return true;
      }
      return false;
    };
    for (auto t : kr.inputs) {
      const auto ti = static_cast<std::size_t>(t);
      if (!member(t, false) || kernel_of[ti] == static_cast<std::int32_t>(k))
        fail(what + ": kernel input is not read by its nodes, or is produced inside the kernel", {.node = first.name, .tensor = g.tensors[ti].name});
      if (b.tensors[ti].place == plan::Place::none)
        fail(what + ": kernel reads a tensor that has no storage", {.node = first.name, .tensor = g.tensors[ti].name});
    }
    for (auto t : kr.outputs) {
      const auto ti = static_cast<std::size_t>(t);
      if (!member(t, true))
        fail(what + ": kernel output is not produced by its nodes (a kernel may write only its own results)", {.node = first.name,
             .tensor = g.tensors[ti].name, .found = std::string("a tensor of kind '") + ir::tensor_kind_name(g.tensors[ti].kind) + "'"});
      if (b.tensors[ti].place != plan::Place::arena && b.tensors[ti].place != plan::Place::view)
        fail(what + ": kernel output is not stored in the arena", {.node = first.name, .tensor = g.tensors[ti].name,
             .expected = "arena or view", .found = plan::place_name(b.tensors[ti].place)});
    }
    for (auto ni : kr.nodes)
      for (auto t : g.nodes[static_cast<std::size_t>(ni)].inputs)
        if (kernel_of[static_cast<std::size_t>(t)] != static_cast<std::int32_t>(k) && b.tensors[static_cast<std::size_t>(t)].place == plan::Place::none)
          fail(what + ": a node reads a tensor from outside the kernel that has no storage", {.node = g.nodes[static_cast<std::size_t>(ni)].name,
               .tensor = g.tensors[static_cast<std::size_t>(t)].name});
    for (auto ni : kr.nodes)
      for (auto t : g.nodes[static_cast<std::size_t>(ni)].outputs)
        if (read_outside[static_cast<std::size_t>(t)] && std::find(kr.outputs.begin(), kr.outputs.end(), t) == kr.outputs.end())
          fail(what + ": a result read outside the kernel is not among its outputs", {.node = g.nodes[static_cast<std::size_t>(ni)].name,
               .tensor = g.tensors[static_cast<std::size_t>(t)].name});
    // Kinds, once the operands are known to be the kernel's own.
    if (kr.kind == "view") {
      if (kr.nodes.size() != 1 || !moves_no_data(v, b, kr.nodes[0]))
        fail(what + ": a zero-copy kernel must be one node that moves no data", {.node = first.name, .found = std::string(op_id)});
    } else if (kr.nodes.size() == 1 && kr.kind == op_id && moves_no_data(v, b, kr.nodes[0])) {
      // The compiler makes every node that moves no data a view (targets have no kernel for some).
      fail(what + ": a node that moves no data is a zero-copy kernel", {.node = first.name, .expected = "view", .found = kr.kind});
    } else if (is_pattern_name(kr.kind, fusion::all_patterns{})) {
      if (!forms_pattern(g, p.kernels, k, fusion::all_patterns{}))
        fail(what + ": the kernel's nodes do not form the pattern it names", {.node = first.name, .found = std::to_string(kr.nodes.size()) + " node(s)"});
      // Float-only fused kernels (the others may take masks, positions or integers).
      static constexpr std::string_view float_only[] = {"rmsnorm", "silu_gate", "conv_bn_relu", "conv_max_pool", "conv_add_relu", "matmul_transb", "gqa_matmul",
                                                         "masked_softmax", "rotary"};
      if (std::find(std::begin(float_only), std::end(float_only), kr.kind) != std::end(float_only))
        for (auto t : kr.inputs)
          if (!is_floating(g.tensor(t).dtype))
            fail(what + " takes floating-point operands", {.node = first.name, .tensor = g.tensor(t).name,
                 .expected = "float32, float16, bfloat16 or float64", .found = std::string(dtype_name(g.tensor(t).dtype))});
    } else if (kr.nodes.size() != 1 || kr.kind != op_id) {
      fail(what + ": kernel kind is neither a fusion pattern nor its node's op", {.node = first.name,
           .expected = kr.nodes.size() == 1 ? "'" + std::string(op_id) + "', 'view' or a fusion pattern" : "a fusion pattern", .found = kr.kind});
    }
    if (!is_pattern_name(kr.kind, fusion::all_patterns{})) {
      // One node's kernel (fusion::fuse): its node's distinct inputs and all its outputs, in order,
      // no parameters. Kernels bind their operands by position.
      Kernel want;
      for (auto t : first.inputs)
        if (std::find(want.inputs.begin(), want.inputs.end(), t) == want.inputs.end()) want.inputs.push_back(t);
      want.outputs = first.outputs;
      if (kr.inputs != want.inputs || kr.outputs != want.outputs || !kr.params.empty())
        fail(what + ": kernel operands differ from its node's (inputs, outputs, in order; no parameters)", {.node = first.name});
    }
  }
}

inline void check_semantics(const Partition& p, DType compute) {
  const ir::Graph& g = p.graph;
  check_storage_types(g, p.plan, compute);
  check_places(g, p.plan);
  check_outputs_stored(g, p.plan);
  check_float_operands(g);
  check_constant_shapes(g);
  check_inputs_provided(g);
  // Ops and shapes: the op's own inference (unknown op, bad attributes, wrong operand count or
  // output metadata are its errors, naming the node).
  for (const ir::Node& n : g.nodes) ops::check_node(g, n);
  const std::vector<std::int32_t> kernel_of = producing_kernels(p);
  check_views(p, kernel_of);
  check_kernels(p, kernel_of);
}

}  // namespace validate_detail

inline void validate(const CompiledProgram& p) {
  using namespace validate_detail;
  std::set<std::string, std::less<>> available;  // tensors the caller or earlier partitions provide
  std::string fallback;                          // the fallback partitions' target
  for (const auto& io : p.inputs) available.insert(io.name);
  for (std::size_t k = 0; k < p.partitions.size(); ++k) {
    const Partition& part = p.partitions[k];
    try {
      check_graph_structure(part.graph);
      check_schedule(part);
      check_plan(part);
      // A target part names the program's target; the fallback parts name one target, whichever
      // the target's policy gave (describe_target): the compiler names no target itself.
      if (!part.fallback && part.target != p.target)
        fail("a target partition of another target than the program's", {.expected = "'" + p.target + "'", .found = part.target});
      if (part.fallback) {
        if (fallback.empty()) fallback = part.target;
        else if (part.target != fallback)
          fail("fallback partitions of two targets", {.expected = "'" + fallback + "' (the first fallback partition's)", .found = part.target});
      }
      check_semantics(part, p.compute);
      // The program's io specs and the partitions' graphs agree (runners check values against the specs).
      for (auto t : part.graph.inputs)
        for (const auto& io : p.inputs)
          if (io.name == part.graph.tensor(t).name && (io.shape != part.graph.tensor(t).shape || io.dtype != part.graph.tensor(t).dtype))
            fail("program input spec disagrees with the partition's graph input", {.tensor = io.name,
                 .expected = std::string(dtype_name(part.graph.tensor(t).dtype)) + to_string(part.graph.tensor(t).shape),
                 .found = std::string(dtype_name(io.dtype)) + to_string(io.shape)});
      for (auto t : part.graph.outputs)
        for (const auto& io : p.outputs)
          if (io.name == part.graph.tensor(t).name && (io.shape != part.graph.tensor(t).shape || io.dtype != part.graph.tensor(t).dtype))
            fail("program output spec disagrees with the partition's graph output", {.tensor = io.name,
                 .expected = std::string(dtype_name(part.graph.tensor(t).dtype)) + to_string(part.graph.tensor(t).shape),
                 .found = std::string(dtype_name(io.dtype)) + to_string(io.shape)});
      for (auto t : part.graph.inputs)
        if (!available.count(part.graph.tensor(t).name))
          fail("partition input is neither a program input nor an earlier partition's output", {.tensor = part.graph.tensor(t).name});
    } catch (const Error& e) {
      const std::string prefix = e.code() == ErrorCode::parse ? "malformed .npubin: partition " : "partition ";
      throw Error(e.code(), prefix + std::to_string(k) + ": " + e.message(), e.context());
    }
    for (auto t : part.graph.outputs) available.insert(part.graph.tensor(t).name);
  }
  for (const auto& io : p.outputs)
    if (!available.count(io.name)) fail("malformed .npubin: program output is produced by no partition", {.tensor = io.name});
  // Recipes: what each kind needs, and derived keys produced once, read only by later recipes
  // (the loader resolves them recursively: a cycle would never end).
  std::map<std::string, const weights::Recipe*, std::less<>> derived;
  for (const auto& r : p.recipes) {
    weights::check_recipe(r);
    for (const auto& in : r.inputs)
      if (!in.empty() && std::find(r.outputs.begin(), r.outputs.end(), in) != r.outputs.end())
        fail("malformed .npubin: a " + r.kind + " recipe reads its own output", {.tensor = in});
    for (const auto& out : r.outputs)
      if (auto [it, fresh] = derived.emplace(out, &r); !fresh && !(*it->second == r))
        fail("malformed .npubin: two different recipes produce the same weight", {.tensor = out});
  }
  for (std::size_t i = 0; i < p.recipes.size(); ++i)
    for (const auto& in : p.recipes[i].inputs)
      for (std::size_t j = i + 1; j < p.recipes.size(); ++j)
        if (std::find(p.recipes[j].outputs.begin(), p.recipes[j].outputs.end(), in) != p.recipes[j].outputs.end())
          fail("malformed .npubin: a " + p.recipes[i].kind + " recipe reads a weight a later recipe derives", {.tensor = in});
}

}  // namespace npusim::inline NPUSIM_ABI::program
