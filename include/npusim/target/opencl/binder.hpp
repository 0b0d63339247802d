// What an OpenCL kernel sees when it is bound: the program kernel, its graph and buffer plan, the
// device storage (buffer + byte offset + dtype) of every stored tensor, and a place to append its
// launches. Binding resolves shapes, strides and programs once; each Launch holds a cl_kernel whose
// arguments are already set, so a run only enqueues.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "npusim/core/quant.hpp"
#include "npusim/fusion/kernel.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/plan/buffer_plan.hpp"
#include "npusim/target/opencl/device.hpp"
#include "npusim/target/opencl/kernels_cl.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

// Storage type codes shared with cl/common.cl.
inline cl_int dt_code(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
    case DType::i64: return 3;
    case DType::i32: return 4;
    case DType::u8:
    case DType::boolean: return 5;
    case DType::i8: return 6;
    case DType::i16: return 7;
    case DType::f64: break;
  }
  throw Error(ErrorCode::dtype, "the OpenCL target does not store this dtype", {.found = std::string(dtype_name(t))});
}

// A tensor's device storage.
struct TensorRef {
  cl_mem mem = nullptr;
  cl_ulong off = 0;  // bytes
  DType dtype = DType::f32;
  friend bool operator==(const TensorRef& a, const TensorRef& b) { return a.mem == b.mem && a.off == b.off; }
};
// Kernel-argument wrappers: Ptr passes (buffer, offset), Typed passes (buffer, offset, dtype code).
struct Ptr {
  TensorRef r;
};
// A linear layer's weight in q8_0/q4_0 blocks, in the device layout gemv_q.cl reads (codes, then
// scales; ocl::pack_device_blocks); dtype: the weight's storage type, what its dequantized values
// are written as.
struct PackedWeight {
  TensorRef blocks;
  quant::BlockFormat format = quant::BlockFormat::q8_0;
  DType dtype = DType::f32;
};
struct Typed {
  TensorRef r;
};

// One argument of a launch as it was set (the persistent program re-reads launches as stages).
struct LaunchArg {
  enum class Kind : std::uint8_t { mem, i32, i64, u64, f32 } kind;
  std::uint64_t bits = 0;  // the value's bits (zero-extended); unused for mem
  cl_mem mem = nullptr;
};

struct Launch {
  KernelHandle kernel;
  cl_uint dims = 1;
  std::array<std::size_t, 3> global{1, 1, 1}, local{1, 1, 1};
  bool has_local = false;
  std::size_t owner = 0;  // index of the program kernel it belongs to
  std::string name;       // OpenCL kernel function
  std::string program;    // the program it comes from ("generic", "gemm", ...) and its build options
  std::string options;
  std::vector<LaunchArg> args;
};

// An index a kernel checks on the device (embedding, index_select, index_copy): what the executor
// needs to report the first index out of range as the reference does, naming node and tensor.
struct IndexCheck {
  std::string what;    // "embedding", "index_copy", ...
  std::string node;    // the IR node
  std::string tensor;  // its index tensor
  std::int64_t size = 0;
  bool negatives = true;  // negative indices count from the end
  std::string message;    // not an index: the error to report for the element found ("cannot quantize NaN")
};

class Binder {
 public:
  Binder(Device& dev, const ir::Graph& g, const plan::BufferPlan& plan, std::function<TensorRef(ir::TensorId)> ref, cl_mem dummy,
         std::vector<Launch>& launches, std::vector<Mem>& keep, std::vector<IndexCheck>& checks, cl_mem errors)
      : dev_(dev), g_(g), plan_(plan), ref_(std::move(ref)), dummy_(dummy), launches_(launches), keep_(keep), checks_(checks), errors_(errors) {}

  // The program kernel being bound.
  void begin(const Kernel& k, std::size_t index) { k_ = &k, index_ = index; }
  const Kernel& k() const { return *k_; }
  const ir::Graph& g() const { return g_; }
  const ir::Node& node(std::size_t member = 0) const { return g_.nodes.at(static_cast<std::size_t>(k_->nodes.at(member))); }
  template <class Op>
  typename Op::Attrs attrs(std::size_t member = 0) const {
    return ops::read_attrs<typename Op::Attrs>(node(member).attrs, node(member).op_type);
  }
  // The member node of op type Op (the first), or nullptr.
  template <class Op>
  const ir::Node* member() const {
    for (auto n : k_->nodes)
      if (ops::find_op(g_.nodes[static_cast<std::size_t>(n)].op_type) == ops::op_index_v<Op>) return &g_.nodes[static_cast<std::size_t>(n)];
    return nullptr;
  }
  const Shape& shape(ir::TensorId t) const { return g_.tensor(t).shape; }
  std::int64_t numel(ir::TensorId t) const { return npusim::numel(shape(t)); }
  DType storage(ir::TensorId t) const { return plan_.tensors.at(static_cast<std::size_t>(t)).storage; }
  ir::TensorId in(std::size_t i) const { return k_->inputs.at(i); }
  ir::TensorId out(std::size_t i = 0) const { return k_->outputs.at(i); }
  TensorRef ref(ir::TensorId t) const {
    TensorRef r = ref_(t);
    if (!r.mem) unsupported("reads a tensor that has no device storage (npusim bug): " + g_.tensor(t).name);
    return r;
  }
  Typed typed(ir::TensorId t) const { return {ref(t)}; }
  Ptr ptr(ir::TensorId t) const { return {ref(t)}; }
  // A placeholder for an unused buffer argument.
  Typed none() const { return {TensorRef{dummy_, 0, DType::f32}}; }

  [[noreturn]] void unsupported(const std::string& why) const {
    throw Error(ErrorCode::unsupported, "OpenCL target: " + why, {.node = k_ ? node().name : std::string()});
  }

  cl_program program(const std::string& name, std::string_view body, const std::string& options = {}) {
    std::string src;
    src.reserve(cl_source::common.size() + body.size() + 1);
    src.append(cl_source::common).append("\n").append(body);
    auto key = name + "|" + options;
    auto it = sources_.find(key);
    if (it == sources_.end()) {
      it = sources_.emplace(key, dev_.program(name, src, options)).first;
      origin_[it->second] = {name, options};
    }
    return it->second;
  }
  static std::string type_options(std::initializer_list<std::pair<const char*, DType>> ts) {
    std::string o;
    for (auto [n, t] : ts) o += std::string(" -D") + n + "=" + std::to_string(dt_code(t));
    return o;
  }

  // Registers a device-side index check of node n's index tensor: the kernel gets the executor's
  // error buffer and the returned code (pass both, as index_check_args does).
  cl_int index_check(const ir::Node& n, ir::TensorId idx, std::string what, std::int64_t size, bool negatives) {
    checks_.push_back({std::move(what), n.name, g_.tensor(idx).name, size, negatives, {}});
    return static_cast<cl_int>(checks_.size());
  }
  cl_mem errors() const { return errors_; }

  // A __constant descriptor buffer of int64 values (shapes, strides, parameters).
  cl_mem desc(const std::vector<std::int64_t>& v) { return constant(v.data(), v.size() * sizeof(std::int64_t)); }
  cl_mem constant(const void* p, std::size_t bytes) {
    Mem m = dev_.alloc(std::max<std::size_t>(bytes, 8), "a kernel descriptor");
    dev_.write(m.get(), 0, bytes, p, true);
    keep_.push_back(std::move(m));
    return keep_.back().get();
  }

  // A device-side check of node n that is not an index (message: the error, e.g. "cannot quantize
  // NaN"): the kernel reports the element; the run then fails with that message, naming node,
  // tensor and element.
  cl_int value_check(const ir::Node& n, ir::TensorId t, std::string message) {
    checks_.push_back({n.op_type, n.name, g_.tensor(t).name, 0, false, std::move(message)});
    return static_cast<cl_int>(checks_.size());
  }

  // The host value of weight t as bound (per-channel parameters a kernel derives at bind time).
  void set_host(std::function<const Tensor*(ir::TensorId)> f) { host_ = std::move(f); }
  const Tensor& host(ir::TensorId t) const {
    const Tensor* h = host_ ? host_(t) : nullptr;
    if (!h) unsupported("needs the value of a weight at bind time, and it is not a weight: " + g_.tensor(t).name);
    return *h;
  }

  // Tensors stored channels-last (NHWC: [N, H, W, C] bytes for an [N, C, H, W] shape), as
  // ocl::channels_last_tensors chose them for this partition; every other tensor is stored as its shape says.
  void set_channels_last(std::function<bool(ir::TensorId)> f) { channels_last_ = std::move(f); }
  bool channels_last(ir::TensorId t) const { return channels_last_ && channels_last_(t); }

  // The packed blocks of weight t, when a q8_0/q4_0 linear reads it (nullptr otherwise).
  void set_packed(std::function<const PackedWeight*(ir::TensorId)> f) { packed_ = std::move(f); }
  const PackedWeight* packed(ir::TensorId t) const { return packed_ ? packed_(t) : nullptr; }

  // A device buffer of at least `bytes` that every kernel bound here asking for the same slot
  // shares (launches run in order on one queue): transient values, written and read by adjacent
  // launches of one kernel. Grows by a new buffer; the old one stays with the launches bound to it.
  cl_mem reusable(int slot, std::size_t bytes) {
    auto& [mem, size] = reusable_[slot];
    if (!mem || size < bytes) mem = scratch(bytes), size = bytes;
    return mem;
  }

  // A zero-filled device buffer of `bytes` (counters a kernel keeps, and zeroes again itself).
  cl_mem zeroed(std::size_t bytes) {
    const std::vector<std::byte> zeros(std::max<std::size_t>(bytes, 8));
    return constant(zeros.data(), zeros.size());
  }

  // A device buffer for a kernel's own intermediate values (lives as long as the executor).
  cl_mem scratch(std::size_t bytes) {
    keep_.push_back(dev_.alloc(std::max<std::size_t>(bytes, 64), "kernel scratch"));
    return keep_.back().get();
  }

  // Appends a 1-D launch over n work-items (rounded up to the work-group size).
  template <class... A>
  Launch& launch1d(cl_program p, const char* fn, std::int64_t n, std::size_t wg, A&&... args) {
    std::size_t groups = static_cast<std::size_t>((std::max<std::int64_t>(n, 1) + static_cast<std::int64_t>(wg) - 1) / static_cast<std::int64_t>(wg));
    return launch(p, fn, {groups * wg, 1, 1}, {wg, 1, 1}, 1, std::forward<A>(args)...);
  }
  template <class... A>
  Launch& launch(cl_program p, const char* fn, std::array<std::size_t, 3> global, std::array<std::size_t, 3> local, cl_uint dims, A&&... args) {
    Launch l;
    l.kernel = dev_.kernel(p, fn);
    l.dims = dims, l.global = global, l.local = local, l.has_local = true, l.owner = index_, l.name = fn;
    if (auto o = origin_.find(p); o != origin_.end()) l.program = o->second.first, l.options = o->second.second;
    cl_uint i = 0;
    (set(l, i, std::forward<A>(args)), ...);
    launches_.push_back(std::move(l));
    return launches_.back();
  }

  Device& device() { return dev_; }

 private:
  void set_raw(Launch& l, cl_uint& i, std::size_t size, const void* v, LaunchArg rec) {
    check(clSetKernelArg(l.kernel.get(), i, size, v), "setting argument " + std::to_string(i) + " of kernel " + l.name, dev_.info().name);
    l.args.push_back(rec);
    ++i;
  }
  template <class T>
  void set_value(Launch& l, cl_uint& i, T v, LaunchArg::Kind kind) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    set_raw(l, i, sizeof v, &v, {kind, bits, nullptr});
  }
  void set(Launch& l, cl_uint& i, Typed t) {
    set(l, i, Ptr{t.r});
    set(l, i, static_cast<cl_int>(dt_code(t.r.dtype)));
  }
  void set(Launch& l, cl_uint& i, Ptr p) {
    set(l, i, p.r.mem);
    set(l, i, static_cast<cl_ulong>(p.r.off));
  }
  void set(Launch& l, cl_uint& i, cl_mem m) { set_raw(l, i, sizeof m, &m, {LaunchArg::Kind::mem, 0, m}); }
  void set(Launch& l, cl_uint& i, cl_int v) { set_value(l, i, v, LaunchArg::Kind::i32); }
  void set(Launch& l, cl_uint& i, cl_long v) { set_value(l, i, v, LaunchArg::Kind::i64); }
  void set(Launch& l, cl_uint& i, cl_ulong v) { set_value(l, i, v, LaunchArg::Kind::u64); }
  void set(Launch& l, cl_uint& i, cl_float v) { set_value(l, i, v, LaunchArg::Kind::f32); }
  void set(Launch& l, cl_uint& i, bool v) { set(l, i, static_cast<cl_int>(v)); }

  Device& dev_;
  const ir::Graph& g_;
  const plan::BufferPlan& plan_;
  std::function<TensorRef(ir::TensorId)> ref_;
  cl_mem dummy_;
  std::vector<Launch>& launches_;
  std::vector<Mem>& keep_;
  std::vector<IndexCheck>& checks_;
  cl_mem errors_;
  std::map<std::string, cl_program> sources_;
  std::map<cl_program, std::pair<std::string, std::string>> origin_;  // program -> (name, options)
  std::function<const PackedWeight*(ir::TensorId)> packed_;
  std::function<const Tensor*(ir::TensorId)> host_;
  std::function<bool(ir::TensorId)> channels_last_;
  std::map<int, std::pair<cl_mem, std::size_t>> reusable_;
  const Kernel* k_ = nullptr;
  std::size_t index_ = 0;
};

}  // namespace npusim::inline NPUSIM_ABI::ocl
