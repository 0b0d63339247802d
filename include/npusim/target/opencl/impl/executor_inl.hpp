// Definitions for npusim/target/opencl/executor.hpp (NPUSIM_FUNC: npusim/config.hpp): ocl::Executor
// over every kernel of the target, and the proof that every op and pattern the target lists has one.
#pragma once

#include <algorithm>
#include <chrono>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "npusim/config.hpp"
#include "npusim/target/opencl/executor.hpp"
#include "npusim/target/opencl/kernels/attention.hpp"
#include "npusim/target/opencl/kernels/conv.hpp"
#include "npusim/target/opencl/kernels/index.hpp"
#include "npusim/target/opencl/kernels/linalg.hpp"
#include "npusim/target/opencl/kernels/moe.hpp"
#include "npusim/target/opencl/kernels/movement.hpp"
#include "npusim/target/opencl/kernels/nn.hpp"
#include "npusim/target/opencl/kernels/pointwise.hpp"
#include "npusim/target/opencl/kernels/quant.hpp"
#include "npusim/target/opencl/layout.hpp"
#include "npusim/target/opencl/persistent.hpp"

namespace npusim::inline NPUSIM_ABI {
static_assert(check_target<OpenCLTarget>(OpenCLTarget::op_list{}));
static_assert(check_target<OpenCLTarget>(OpenCLTarget::pattern_list{}));
}  // namespace npusim::inline NPUSIM_ABI

namespace npusim::inline NPUSIM_ABI::ocl {

// Calls f.template operator()<kernel<X, OpenCLTarget>>() for the kernel k binds on (its pattern's,
// else its one op's): the binder and explain --kernels find it the same way. Returns what is
// missing instead ("" when f ran).
template <class F>
std::string with_kernel_type(const ir::Graph& g, const Kernel& k, F&& f) {
  bool done = false;
  meta::for_each(OpenCLTarget::pattern_list{}, [&]<class P>() {
    if (!done && k.kind == P::name) f.template operator()<kernel<P, OpenCLTarget>>(), done = true;
  });
  if (done) return {};
  if (k.nodes.size() != 1) return "no OpenCL kernel for fused kind '" + k.kind + "'";
  std::string no;
  ops::dispatch_op<void>(ops::require_op(g.nodes.at(static_cast<std::size_t>(k.nodes[0]))), [&]<class Op>() {
    if constexpr (has_kernel_v<Op, OpenCLTarget>) f.template operator()<kernel<Op, OpenCLTarget>>();
    else no = "no OpenCL kernel for " + std::string(Op::id);
  });
  return no;
}

class Executor final : public PartitionExecutor {
 public:
  Executor(const PartitionContext& ctx, std::shared_ptr<Device> dev, int persistent_groups = -1) : part_(ctx.partition), dev_(std::move(dev)) {
    kernel_choice::check_skipped<Skip>(meta::list<gemm_candidates>{});  // NPUSIM_OPENCL_SKIP checked before anything is bound
    const ir::Graph& g = part_.graph;
    const plan::BufferPlan& plan = part_.plan;
    const std::size_t T = g.tensors.size();
    weights::BindOptions bo = ctx.bind;
    bo.load_as.reset();
    bo.storage = [&plan](ir::TensorId t) { return plan.tensors.at(static_cast<std::size_t>(t)).storage; };
    auto bound = weights::bind_weights(g, ctx.weights, bo);
    dummy_ = dev_->alloc(64, "a placeholder argument");
    errors_ = dev_->alloc(sizeof err_host_, "the index-check error word");
    err_host_ = {};
    dev_->write(errors_.get(), 0, sizeof err_host_, err_host_.data(), true);
    arena_ = dev_->alloc(static_cast<std::size_t>(plan.arena_bytes), "the arena of partition " + std::to_string(ctx.index));
    refs_.assign(T, TensorRef{});
    for (std::size_t i = 0; i < g.inputs.size(); ++i) {
      const ir::TensorId t = g.inputs[i];
      const auto& tp = plan.tensors[static_cast<std::size_t>(t)];
      inputs_.push_back({t, dev_->alloc(static_cast<std::size_t>(tp.bytes), "input " + g.tensor(t).name), tp.storage, pinned_slot(tp.bytes), false, false, {}});
      refs_[static_cast<std::size_t>(t)] = {inputs_.back().buf.get(), 0, tp.storage};
    }
    // The weights of q8_0/q4_0 linears are packed (from their storage type's values, as the CPU
    // target packs them) and uploaded in gemv_q.cl's layout; the float values are uploaded only
    // when something else reads them too (a tied embedding).
    std::unordered_map<ir::TensorId, quant::BlockFormat> formats;
    std::unordered_set<ir::TensorId> float_readers;
    for (const ir::Node& n : g.nodes)
      if (auto f = ops::weight_block_format(n)) {
        auto [it, fresh] = formats.emplace(n.inputs[1], *f);
        if (!fresh && it->second != *f)
          throw Error(ErrorCode::unsupported, "OpenCL target: one weight read as two block formats",
                      {.file = g.source, .node = n.name, .tensor = g.tensor(n.inputs[1]).name});
      }
    for (const ir::Node& n : g.nodes)
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        if (formats.count(n.inputs[i]) && !(i == 1 && ops::weight_block_format(n))) float_readers.insert(n.inputs[i]);
    for (auto t : g.outputs) float_readers.insert(t);
    for (const auto& [id, host] : bound.tensors) {
      const DType st = plan.tensors[static_cast<std::size_t>(id)].storage;
      // A weight bound packed already (u8 rows of blocks from a .npubin) is only regrouped.
      const bool packed = quant::is_packed(host, g.tensor(id).dtype);
      Tensor h = host.dtype() == st || packed ? host : host.to(st);
      if (packed && (!formats.count(id) || float_readers.count(id)))
        throw Error(ErrorCode::unsupported, "OpenCL target: a weight bound packed is read as floats",
                    {.file = g.source, .tensor = g.tensor(id).name});
      if (auto q = formats.find(id); q != formats.end()) {
        const quant::BlockFormat f = q->second;
        const Shape& shape = g.tensor(id).shape;  // Clang before 16 cannot capture a structured binding
        std::shared_ptr<Mem> m;
        try {
          m = dev_->derived_buffer(h.raw(), (h.nbytes() << 1) | static_cast<std::uint64_t>(f), h.owner(),
                                   [&] { return packed ? regroup_device_blocks(f, h, shape) : pack_device_blocks(f, h); },
                                   "packed weight " + g.tensor(id).name);
        } catch (Error& e) {
          throw e.with_tensor(g.tensor(id).name).with_file(g.source);
        }
        packed_[id] = PackedWeight{{m->get(), 0, DType::u8}, f, st};
        weights_.push_back(std::move(m));
        if (!float_readers.count(id)) continue;
      }
      auto m = dev_->weight_buffer(h.raw(), h.nbytes(), h.owner(), "weight " + g.tensor(id).name);
      refs_[static_cast<std::size_t>(id)] = {m->get(), 0, st};
      weights_.push_back(std::move(m));
    }
    for (std::size_t t = 0; t < T; ++t)
      if (plan.tensors[t].place == plan::Place::arena) refs_[t] = {arena_.get(), static_cast<cl_ulong>(plan.tensors[t].offset), plan.tensors[t].storage};
    for (std::size_t t = 0; t < T; ++t)
      if (plan.tensors[t].place == plan::Place::view) {
        TensorRef r = refs_[static_cast<std::size_t>(plan.tensors[t].root)];
        refs_[t] = {r.mem, r.off, plan.tensors[t].storage};
      }
    channels_last_ = choose_channels_last(g, plan, part_.kernels, [&](ir::TensorId w) { return bound.tensors.count(w) > 0; },
                                          [this] { return mma_support(*dev_).ok; });
    Binder b(*dev_, g, plan, [this](ir::TensorId t) { return refs_.at(static_cast<std::size_t>(t)); }, dummy_.get(), launches_, keep_, checks_,
             errors_.get());
    b.set_channels_last([this](ir::TensorId t) { return channels_last_.count(t) > 0; });
    b.set_packed([this](ir::TensorId t) { return packed(t); });
    b.set_host([&bound](ir::TensorId t) -> const Tensor* {
      auto it = bound.tensors.find(t);
      return it == bound.tensors.end() ? nullptr : &it->second;
    });
    for (std::size_t k = 0; k < part_.kernels.size(); ++k) labels_.push_back("k" + std::to_string(k) + " " + part_.kernels[k].kind);
    // One program kernel, its own launches: what runs as one launch is a fusion pattern of the
    // target's (linear_group, linear_silu_gate, linear_add, rope_kv, conv_add_relu), so inspect,
    // explain and the NPU estimate see the same kernels.
    for (std::size_t k = 0; k < part_.kernels.size(); ++k) {
      const Kernel& kr = part_.kernels[k];
      b.begin(kr, k);
      try {
        bind_kernel(b, kr);
      } catch (Error& e) {
        throw e.with_node(g.nodes.at(static_cast<std::size_t>(kr.nodes.back())).name).with_file(g.source);
      }
    }
    // Each kernel's label names the OpenCL functions it launches ("k3 linear_add (gemv)"): the
    // profile and trace show which path a product took.
    std::vector<std::vector<std::string>> fns(part_.kernels.size());
    for (const Launch& l : launches_)
      if (auto& f = fns.at(l.owner); std::find(f.begin(), f.end(), l.name) == f.end()) f.push_back(l.name);
    for (std::size_t k = 0; k < fns.size(); ++k)
      for (std::size_t i = 0; i < fns[k].size(); ++i) labels_[k] += (i ? "+" : " (") + fns[k][i] + (i + 1 == fns[k].size() ? ")" : "");
    // ... and " [NHWC]" where it reads or writes a channels-last tensor.
    for (std::size_t k = 0; k < part_.kernels.size(); ++k) {
      const Kernel& kr = part_.kernels[k];
      auto last = [&](ir::TensorId t) { return channels_last_.count(t) > 0; };
      if (std::any_of(kr.inputs.begin(), kr.inputs.end(), last) || std::any_of(kr.outputs.begin(), kr.outputs.end(), last)) labels_[k] += " [NHWC]";
    }
    drop_launches();
    start_persistent(persistent_groups);
    for (auto t : g.outputs) {
      const auto& tp = plan.tensors[static_cast<std::size_t>(t)];
      outputs_.push_back({t, tp.storage, false, -1, pinned_slot(tp.bytes)});
      if (!refs_[static_cast<std::size_t>(t)].mem)
        throw Error(ErrorCode::runtime, "graph output has no device storage (npusim bug)", {.file = g.source, .tensor = g.tensor(t).name});
    }
    recycled_.resize(outputs_.size()), direct_.resize(outputs_.size());
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    const ir::Graph& g = part_.graph;
    if (inputs.size() != inputs_.size())
      throw Error(ErrorCode::graph, "wrong number of partition inputs", {.file = g.source, .expected = std::to_string(inputs_.size()),
                                                                         .found = std::to_string(inputs.size())});
    cl_command_queue q = prof_ ? dev_->profiling_queue() : dev_->queue();
    const double h0 = prof_ ? prof_->now_us() : 0;
    if (seed_queue_ && seed_queue_ != q) check(clFinish(seed_queue_), "seeding carried inputs", dev_->info().name), seed_queue_ = nullptr;
    const auto u0 = std::chrono::steady_clock::now();
    if (!pinned_on_ && pageable_.size() < pinned_bytes_) pageable_.resize(pinned_bytes_);
    std::byte* const pin = pinned_on_ ? pinned_.reserve(*dev_, pinned_bytes_) : pageable_.data();
    for (std::size_t i = 0; i < inputs.size(); ++i) upload(q, inputs_[i], inputs[i], pin);
    stats_.upload_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - u0).count();
    const std::size_t nl = launches_.size();
    if (prof_) events_.assign(nl, nullptr), enqueue_us_.assign(nl, 0);
    const auto e0 = std::chrono::steady_clock::now();
    // A profile needs each kernel's time: from the stage clock where the device has one, else
    // launch by launch.
    const bool stages = pk_ && pk_->stage_by_stage();
    const bool one_launch = pk_ && !stages && (!prof_ || pk_->has_clock());
    if (one_launch) {
      const double t0 = prof_ ? prof_->now_us() : 0;
      pk_->enqueue(q, prof_ != nullptr, prof_ ? &pk_event_ : nullptr);
      if (prof_) pk_enqueue_us_ = prof_->now_us() - t0;
    }
    for (std::size_t i = 0; i < (one_launch ? 0 : nl); ++i) {
      const Launch& l = launches_[i];
      const double t0 = prof_ ? prof_->now_us() : 0;
      cl_event* ev = prof_ ? &events_[i] : nullptr;
      cl_int e = stages ? pk_->enqueue_stage(q, i, ev)
                        : clEnqueueNDRangeKernel(q, l.kernel.get(), l.dims, nullptr, l.global.data(), l.has_local ? l.local.data() : nullptr, 0,
                                                 nullptr, ev);
      if (e != CL_SUCCESS)
        throw Error(ErrorCode::runtime, std::string("OpenCL: enqueueing kernel ") + l.name + " failed: " + cl_error_name(e) + " on " + dev_->info().name,
                    {.file = g.source, .node = labels_.at(l.owner)});
      if (prof_) enqueue_us_[i] = prof_->now_us() - t0;
      if (i + 1 == flush_after_) clFlush(q);  // the device starts on the first launches while the rest are enqueued
    }
    stats_.enqueue_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - e0).count();
    std::vector<Tensor> out(outputs_.size());
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      Output& o = outputs_[i];
      const TensorRef r = refs_[static_cast<std::size_t>(o.id)];
      if (o.carried) {
        In& dst = inputs_[static_cast<std::size_t>(o.carry_to)];
        if (!(r == TensorRef{dst.buf.get(), 0, dst.storage}))
          check(clEnqueueCopyBuffer(q, r.mem, dst.buf.get(), r.off, 0, part_.plan.tensors[static_cast<std::size_t>(o.id)].bytes, 0, nullptr, nullptr),
                "carrying " + g.tensor(o.id).name, dev_->info().name);
        continue;
      }
      out[i] = output_tensor(i, o.storage, g.tensor(o.id).shape);
      // Into pinned memory (asynchronous): the output tensor's own, or a slot copied out after the
      // clFinish.
      std::byte* dst = direct_[i] ? static_cast<std::byte*>(out[i].raw()) : pin + o.pinned_at;
      if (out[i].nbytes())
        check(clEnqueueReadBuffer(q, r.mem, CL_FALSE, r.off, out[i].nbytes(), dst, 0, nullptr, nullptr), "reading output " + g.tensor(o.id).name,
              dev_->info().name);
    }
    // The index checks' error word (and the persistent launch's) is read behind the last launch.
    if (!checks_.empty() || pk_)
      check(clEnqueueReadBuffer(q, errors_.get(), CL_FALSE, 0, sizeof err_host_, err_host_.data(), 0, nullptr, nullptr), "reading the index checks",
            dev_->info().name);
    const auto f0 = std::chrono::steady_clock::now();
    stats_.read_us += std::chrono::duration<double, std::micro>(f0 - e0).count();
    check(clFinish(q), "running partition (clFinish)", dev_->info().name);
    seed_queue_ = nullptr;  // seed_carried's writes are done
    const auto c0 = std::chrono::steady_clock::now();
    stats_.finish_us += std::chrono::duration<double, std::micro>(c0 - f0).count();
    for (std::size_t i = 0; i < outputs_.size(); ++i)
      if (!outputs_[i].carried && !direct_[i] && out[i].nbytes()) std::memcpy(out[i].raw(), pin + outputs_[i].pinned_at, out[i].nbytes());
    stats_.copy_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - c0).count();
    if (pk_ && err_host_[1] != 0) {
      err_host_ = {};
      dev_->write(errors_.get(), 0, sizeof err_host_, err_host_.data(), true);
      pk_->reset();
      throw Error(ErrorCode::runtime,
                  "OpenCL: the persistent launch's grid barrier timed out (its " + std::to_string(pk_->groups()) +
                      " work-groups were not all resident on " + dev_->info().name + "); set NPUSIM_OPENCL_PERSISTENT=0 to launch kernel by kernel",
                  {.file = g.source});
    }
    if ((!checks_.empty() || pk_) && err_host_[0] != 0) report_index_error();
    stats_.total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - e0).count(), ++stats_.runs;
    if (prof_) one_launch ? record_persistent_profile(h0, q) : record_profile(h0);
    return out;
  }

  void set_profiler(Profiler* p, int track) override { prof_ = p, track_ = track; }

  ~Executor() override {
    if (seed_queue_) clFinish(seed_queue_);  // seed_carried's writes read the inputs' staging
    // NPUSIM_OPENCL_STATS=1: where a run's host time goes (enqueueing vs waiting for the device).
    if (const char* e = std::getenv("NPUSIM_OPENCL_STATS"); e && *e == '1' && stats_.runs)
      std::fprintf(stderr,
                   "opencl partition (%zu launches, %s): %lld runs, enqueue %.1f us/run, enqueue+wait %.1f us/run (inputs written %.1f, "
                   "reads enqueued by %.1f, clFinish %.1f, outputs copied %.1f)\n",
                   launches_.size(), execution_note().c_str(), static_cast<long long>(stats_.runs), stats_.enqueue_us / static_cast<double>(stats_.runs),
                   stats_.total_us / static_cast<double>(stats_.runs), stats_.upload_us / static_cast<double>(stats_.runs),
                   stats_.read_us / static_cast<double>(stats_.runs), stats_.finish_us / static_cast<double>(stats_.runs),
                   stats_.copy_us / static_cast<double>(stats_.runs));
  }

  // "one persistent launch of G work-groups", "stage by stage, ..." or "launch by launch: <why>".
  std::string execution_note() const override {
    if (pk_ && pk_->stage_by_stage()) return "stage by stage, arguments from a table";
    return pk_ ? "one persistent launch of " + std::to_string(pk_->groups()) + " work-groups" : "launch by launch: " + pk_why_;
  }

  // NPUSIM_OPENCL_DROP=KINDS (a measuring knob: the outputs are wrong): the launches of the kernels
  // of these kinds (or OpenCL functions), comma-separated, are not made, so that a step timed with
  // and without them says what they cost the device.
  void drop_launches() {
    const char* e = std::getenv("NPUSIM_OPENCL_DROP");
    if (!e || !*e) return;
    const std::string list = std::string(",") + e + ",";
    const auto before = launches_.size();
    std::erase_if(launches_, [&](const Launch& l) {
      return list.find("," + part_.kernels[l.owner].kind + ",") != std::string::npos || list.find("," + l.name + ",") != std::string::npos;
    });
    std::fprintf(stderr, "NPUSIM_OPENCL_DROP=%s: %zu of %zu launches dropped (the outputs are wrong)\n", e, before - launches_.size(), before);
  }

  // Persistent mode (persistent.hpp) on `groups` work-groups; 0: off; -1: NPUSIM_OPENCL_PERSISTENT
  // ("off" or 0, "on", or a number of work-groups), else off: on the H200 its stages still run
  // slower than the same kernels launched one by one (docs/opencl.md). "On" means up to 4
  // work-groups per compute unit on a GPU (fewer where fewer are resident together), 1 in all on
  // other devices (a CPU driver runs work-groups on its threads: waiting ones would take the cores
  // from working ones).
  void start_persistent(int groups) {
    const DeviceInfo& d = dev_->info();
    const int on = d.gpu ? 4 * static_cast<int>(std::max<std::uint32_t>(d.compute_units, 1)) : 1;
    if (groups < 0 && groups != ExecutorOptions::stage_by_stage) {
      const char* e = std::getenv("NPUSIM_OPENCL_PERSISTENT");
      const std::string v = e ? e : "";
      if (v.empty()) {
        groups = 0, pk_why_ = "the default (NPUSIM_OPENCL_PERSISTENT=on for one launch)";
      } else if (v == "off" || v == "0") {
        groups = 0, pk_why_ = "NPUSIM_OPENCL_PERSISTENT=" + v;
      } else if (v == "on") {
        groups = on;
      } else if (v == "stages") {
        groups = ExecutorOptions::stage_by_stage;
      } else {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (*end != '\0' || n < 1 || n > 65536)
          throw Error(ErrorCode::unsupported, "NPUSIM_OPENCL_PERSISTENT must be off, on, stages or a number of work-groups", {.found = v});
        groups = static_cast<int>(n);
      }
    } else if (groups == 0) {
      pk_why_ = "turned off";
    }
    if (groups == 0) return;
    pk_why_ = Persistent::why_not(launches_);
    if (pk_why_.empty()) pk_.emplace(*dev_, launches_, groups == ExecutorOptions::stage_by_stage ? 0 : groups, errors_.get());
  }

  // The output stays on the device and becomes the named input of the next run.
  bool carry(const std::string& output, const std::string& input) override {
    const ir::Graph& g = part_.graph;
    auto in = std::find_if(inputs_.begin(), inputs_.end(), [&](const In& i) { return g.tensor(i.id).name == input; });
    auto out = std::find_if(outputs_.begin(), outputs_.end(), [&](const Output& o) { return g.tensor(o.id).name == output; });
    if (in == inputs_.end() || out == outputs_.end() || in->storage != out->storage ||
        part_.plan.tensors[static_cast<std::size_t>(in->id)].bytes != part_.plan.tensors[static_cast<std::size_t>(out->id)].bytes)
      return false;
    out->carried = true, out->carry_to = in - inputs_.begin();
    in->carried = true;
    return true;
  }

  // Runner::seed_carried: the input's buffer zeroed, then the prefix's rows written into
  // positions 0..S-1 of dimension 2 (one rectangular write, in the input's storage type). Nothing
  // waits: the rows stay in the input's staging until the next run's clFinish.
  bool seed_carried(const std::string& input, const Tensor& prefix) override {
    const ir::Graph& g = part_.graph;
    auto in = std::find_if(inputs_.begin(), inputs_.end(), [&](const In& i) { return g.tensor(i.id).name == input; });
    if (in == inputs_.end() || !in->carried) return false;
    const Shape& full = g.tensor(in->id).shape;
    const Shape& ps = prefix.shape();
    if (full.size() != 4 || ps.size() != 4 || ps[0] != full[0] || ps[1] != full[1] || ps[3] != full[3] || ps[2] > full[2])
      throw Error(ErrorCode::shape, "the prefix does not fit the carried input", {.file = g.source, .tensor = input,
                  .expected = "[B, H, S <= L, D] for " + to_string(full), .found = to_string(ps)});
    const std::size_t es = dtype_size(in->storage), row = static_cast<std::size_t>(ps[3]) * es, rows = static_cast<std::size_t>(ps[0] * ps[1]);
    cl_command_queue q = prof_ ? dev_->profiling_queue() : dev_->queue();
    if (seed_queue_ && !in->staging.empty()) check(clFinish(seed_queue_), "seeding " + input, dev_->info().name);  // its last seed is still being written
    std::vector<std::byte>& host = in->staging;
    host.resize(static_cast<std::size_t>(prefix.numel()) * es);
    convert_elements(prefix.dtype(), prefix.raw(), in->storage, host.data(), prefix.numel());
    const cl_uchar zero = 0;
    check(clEnqueueFillBuffer(q, in->buf.get(), &zero, 1, 0, static_cast<std::size_t>(part_.plan.tensors[static_cast<std::size_t>(in->id)].bytes), 0,
                              nullptr, nullptr),
          "zeroing " + input, dev_->info().name);
    if (!host.empty()) {
      const std::size_t origin[3] = {0, 0, 0}, region[3] = {static_cast<std::size_t>(ps[2]) * row, rows, 1};
      check(clEnqueueWriteBufferRect(q, in->buf.get(), CL_FALSE, origin, origin, region, static_cast<std::size_t>(full[2]) * row, 0,
                                     static_cast<std::size_t>(ps[2]) * row, 0, host.data(), 0, nullptr, nullptr),
            "writing " + input, dev_->info().name);
      seed_queue_ = q;
    }
    in->has_value = true;
    return true;
  }

  const std::vector<Launch>& launches() const { return launches_; }
  const Device& device() const { return *dev_; }

 private:
  struct In {
    ir::TensorId id;
    Mem buf;
    DType storage;
    std::size_t pinned_at = 0;  // its bytes in pinned_
    bool carried = false, has_value = false;
    std::vector<std::byte> staging;  // seed_carried's rows, until the write is done
  };
  cl_command_queue seed_queue_ = nullptr;  // where seed_carried's writes are pending, if any
  struct Output {
    ir::TensorId id;
    DType storage;
    bool carried = false;
    std::ptrdiff_t carry_to = -1;
    std::size_t pinned_at = 0;  // its bytes in pinned_
  };
  // Output i's tensor for this run: last run's, where nothing outside this executor holds it any
  // more (a fresh 39 MB tensor, a prefill's logits, costs ~20 ms of page faults on the GPU
  // machine, more than the transfer), else a new one.
  // A new one lives in pinned memory of its own, which the read fills with no copy; where the
  // driver cannot pin more, or NPUSIM_OPENCL_PINNED=0, in ordinary memory (filled from a slot: the
  // same bytes, one copy more).
  Tensor output_tensor(std::size_t i, DType dt, const Shape& shape) {
    Tensor& last = recycled_[i];
    if (last.defined() && last.owner().use_count() == 1 && last.dtype() == dt && last.shape() == shape) return last;
    direct_[i] = false;
    if (pinned_on_) {
      try {
        auto mem = std::make_shared<PinnedHost>(dev_);
        std::byte* p = mem->reserve(*dev_, std::max<std::size_t>(static_cast<std::size_t>(checked_nbytes(shape, dt)), 64));
        last = Tensor::wrap(dt, shape, p, std::move(mem));
        direct_[i] = true;
        return last;
      } catch (const Error&) {
      }
    }
    last = Tensor::empty(dt, shape);
    return last;
  }
  // The next 64-byte aligned slot of `bytes` in pinned_ (every input and output has one).
  std::size_t pinned_slot(std::int64_t bytes) {
    const std::size_t at = pinned_bytes_;
    pinned_bytes_ += (static_cast<std::size_t>(std::max<std::int64_t>(bytes, 0)) + 63) / 64 * 64;
    return at;
  }

  // A kernel met an index out of range: the error the reference gives (the node, its index tensor,
  // the range), once the error word is cleared for the next run. The run's outputs are discarded.
  [[noreturn]] void report_index_error() {
    const std::size_t code = static_cast<std::size_t>(err_host_[0]);
    const std::int64_t found = static_cast<std::int64_t>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(err_host_[3])) << 32) |
                                                         static_cast<std::uint32_t>(err_host_[2]));
    err_host_ = {};
    dev_->write(errors_.get(), 0, sizeof err_host_, err_host_.data(), true);
    if (code < 1 || code > checks_.size())
      throw Error(ErrorCode::runtime, "OpenCL index check reported an unknown check (npusim bug)", {.file = part_.graph.source, .found = std::to_string(code)});
    const IndexCheck& c = checks_[code - 1];
    if (!c.message.empty())
      throw Error(ErrorCode::runtime, c.message, {.file = part_.graph.source, .node = c.node, .tensor = c.tensor, .found = "element " + std::to_string(found)});
    throw ops::index_out_of_range(c.what, found, c.size, c.negatives).with_node(c.node).with_tensor(c.tensor).with_file(part_.graph.source);
  }

  void upload(cl_command_queue q, In& in, const Tensor& t, std::byte* pin) {
    const ir::TensorInfo& info = part_.graph.tensor(in.id);
    if (!t.defined()) {
      if (in.carried && in.has_value) return;  // the device holds the carried value
      throw Error(ErrorCode::runtime, "no value for this input (nothing carried yet)", {.file = part_.graph.source, .tensor = info.name});
    }
    if (t.shape() != info.shape)
      throw Error(ErrorCode::shape, "input has the wrong shape", {.file = part_.graph.source, .tensor = info.name, .expected = to_string(info.shape),
                                                                  .found = to_string(t.shape())});
    // Converted (or copied) into pinned memory, then written without blocking: those bytes stay
    // as they are until the clFinish at the end of run().
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(in.storage);
    std::byte* src = pin + in.pinned_at;
    if (t.dtype() != in.storage) convert_elements(t.dtype(), t.raw(), in.storage, src, t.numel());
    else if (bytes) std::memcpy(src, t.raw(), bytes);
    if (bytes) check(clEnqueueWriteBuffer(q, in.buf.get(), CL_FALSE, 0, bytes, src, 0, nullptr, nullptr), "writing input " + info.name, dev_->info().name);
    in.has_value = true;
  }

  // A q8_0/q4_0 linear's weight (nullptr for a float one).
  const PackedWeight* packed(ir::TensorId t) const {
    auto it = packed_.find(t);
    return it == packed_.end() ? nullptr : &it->second;
  }

  static void bind_kernel(Binder& b, const Kernel& k) {
    if (k.kind == "view") return;
    if (std::string no = with_kernel_type(b.g(), k, [&]<class Kr>() { Kr::bind(b); }); !no.empty()) b.unsupported(no);
  }

  void record_profile(double h0) {
    // Device timestamps (ns) mapped onto the profiler's clock: the first launch was queued at h0.
    cl_ulong q0 = 0;
    if (!events_.empty() && events_[0]) clGetEventProfilingInfo(events_[0], CL_PROFILING_COMMAND_QUEUED, sizeof q0, &q0, nullptr);
    std::vector<cl_ulong> start(launches_.size()), end(launches_.size());
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      clGetEventProfilingInfo(events_[i], CL_PROFILING_COMMAND_START, sizeof start[i], &start[i], nullptr);
      clGetEventProfilingInfo(events_[i], CL_PROFILING_COMMAND_END, sizeof end[i], &end[i], nullptr);
    }
    for (cl_event& ev : events_)
      if (ev) clReleaseEvent(ev), ev = nullptr;
    add_profile_rows(h0, q0, start, end, enqueue_us_);
  }

  // The persistent launch's profile: its stages' spans from the stage clock, placed from the
  // launch's start; the one enqueue's host time goes to the first.
  void record_persistent_profile(double h0, cl_command_queue q) {
    const std::vector<cl_ulong> t = pk_->stage_times(q);
    cl_ulong q0 = 0, s0 = 0;
    clGetEventProfilingInfo(pk_event_, CL_PROFILING_COMMAND_QUEUED, sizeof q0, &q0, nullptr);
    clGetEventProfilingInfo(pk_event_, CL_PROFILING_COMMAND_START, sizeof s0, &s0, nullptr);
    clReleaseEvent(pk_event_), pk_event_ = nullptr;
    std::vector<cl_ulong> start(launches_.size()), end(launches_.size());
    for (std::size_t i = 0; i < launches_.size(); ++i) start[i] = s0 + (t[i] - t[0]), end[i] = s0 + (t[i + 1] - t[0]);
    std::vector<double> host(launches_.size(), 0.0);
    if (!host.empty()) host[0] = pk_enqueue_us_;
    add_profile_rows(h0, q0, start, end, host);
  }

  // One profile row per program kernel: the span of its launches (device ns from start/end, the
  // queue time q0 placed at h0) and their host enqueue time.
  void add_profile_rows(double h0, cl_ulong q0, const std::vector<cl_ulong>& start, const std::vector<cl_ulong>& end,
                        const std::vector<double>& host_us) {
    for (std::size_t i = 0; i < launches_.size();) {
      const std::size_t owner = launches_[i].owner;
      cl_ulong e = 0;
      double host = 0;
      std::size_t j = i;
      for (; j < launches_.size() && launches_[j].owner == owner; ++j) e = std::max(e, end[j]), host += host_us[j];
      prof_->add({labels_[owner], part_.kernels[owner].kind, part_.target, h0 + static_cast<double>(start[i] - q0) / 1000.0, host,
                  static_cast<double>(e - start[i]) / 1000.0, track_, static_cast<int>(owner)});
      i = j;
    }
  }

  const program::Partition& part_;
  std::shared_ptr<Device> dev_;
  Mem dummy_, arena_;
  std::vector<In> inputs_;
  std::vector<Output> outputs_;
  std::vector<std::shared_ptr<Mem>> weights_;
  std::vector<TensorRef> refs_;
  std::unordered_map<ir::TensorId, PackedWeight> packed_;  // q8_0/q4_0 linears' weights
  std::vector<Launch> launches_;
  std::unordered_set<ir::TensorId> channels_last_;  // stored NHWC (layout.hpp)
  std::optional<Persistent> pk_;  // the launches as one (persistent.hpp)
  std::string pk_why_;            // why not
  cl_event pk_event_ = nullptr;   // its event in a profiled run
  double pk_enqueue_us_ = 0;
  std::vector<Mem> keep_;
  std::vector<IndexCheck> checks_;  // device-side index checks, code = position + 1
  Mem errors_;
  std::array<cl_int, 4> err_host_{};
  std::vector<std::string> labels_;
  Profiler* prof_ = nullptr;
  int track_ = 0;
  std::vector<cl_event> events_;
  std::vector<double> enqueue_us_;
  struct {
    std::int64_t runs = 0;
    double enqueue_us = 0, total_us = 0, upload_us = 0, read_us = 0, finish_us = 0, copy_us = 0;
  } stats_;
  PinnedHost pinned_;  // the inputs' and outputs' bytes on their way to and from the device
  std::size_t pinned_bytes_ = 64;
  // NPUSIM_OPENCL_PINNED=0: the same transfers through pageable memory (to measure the
  // difference, docs/opencl.md); 1 or unset: pinned.
  bool pinned_on_ = [] {
    const char* e = std::getenv("NPUSIM_OPENCL_PINNED");
    const std::string_view v = e && *e ? e : "1";
    if (v != "0" && v != "1") throw Error(ErrorCode::attr, "NPUSIM_OPENCL_PINNED must be 0 or 1", {.found = std::string(v)});
    return v == "1";
  }();
  // Flush the queue after this many launches of a run, so that the device starts on them while the
  // host enqueues the rest (4 pipeline stages on one H200: 3.14 / 3.03 -> 2.80 / 2.84 ms a step,
  // one call, docs/benchmarks.md). NPUSIM_OPENCL_FLUSH_AFTER=N (a measuring knob; unset or 0: never).
  std::size_t flush_after_ = [] {
    const char* e = std::getenv("NPUSIM_OPENCL_FLUSH_AFTER");
    if (!e || !*e) return std::size_t(0);
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    if (*end != '\0' || n < 0) throw Error(ErrorCode::attr, "NPUSIM_OPENCL_FLUSH_AFTER must be a number of launches (0: never)", {.found = e});
    return static_cast<std::size_t>(n);
  }();
  std::vector<std::byte> pageable_;
  std::vector<Tensor> recycled_;  // the outputs of the last run (output_tensor)
  std::vector<bool> direct_;      // recycled_[i] lives in pinned memory of its own (read into with no copy)
};

// The problems the binder makes of a partition's matrix products (kernels/linalg.hpp, conv.hpp),
// from the graph and the plan alone: M, N, K, the storage types, packed weights, whether only a
// GEMV can run the kernel's epilogue, and for a convolution whether it is an implicit GEMM.
inline std::optional<GemmProblem> product_problem(const program::Partition& part, const Kernel& k, const std::function<MmaSupport()>& mma) {
  const ir::Graph& g = part.graph;
  std::optional<Product> product;  // what the kernel's binder declares, if it binds a product
  with_kernel_type(g, k, [&]<class Kr>() {
    if constexpr (requires { Kr::product; }) product = Kr::product;
  });
  if (!product) return std::nullopt;
  auto storage = [&](ir::TensorId t) { return part.plan.tensors.at(static_cast<std::size_t>(t)).storage; };
  if (k.kind == "matmul" || k.kind == fusion::GqaMatmul::name || k.kind == fusion::MatmulTransB::name) {  // bind_matmul's layout
    const ir::Node& n0 = g.nodes.at(static_cast<std::size_t>(k.nodes.at(0)));
    const bool single = k.kind == "matmul";
    const ir::TensorId ta = single ? n0.inputs.at(0) : k.inputs.at(0), tb = single ? n0.inputs.at(1) : k.inputs.at(1);
    bool trans = k.kind == fusion::MatmulTransB::name;
    std::int64_t group = 1;
    if (k.kind == fusion::GqaMatmul::name) {
      trans = k.bool_param("trans_b"), group = k.int_param("group", 1);
    }
    std::optional<Gemm> gm = matmul_layout(g.tensor(ta).shape, g.tensor(tb).shape, trans, group);
    if (!gm) return std::nullopt;
    gm->a.dtype = storage(ta), gm->b.dtype = storage(tb);
    return gemm_problem(*gm, false, mma);
  }
  std::vector<const ir::Node*> lins;
  const ir::Node* conv = nullptr;
  for (auto ni : k.nodes) {
    const ir::Node& n = g.nodes.at(static_cast<std::size_t>(ni));
    const std::string_view op = ops::op_info(ops::require_op(n)).id;
    if (op == "linear" || op == "addmm") lins.push_back(&n);
    if (op == "conv2d" && !conv) conv = &n;
  }
  if (conv) {
    const Shape &xs = g.tensor(conv->inputs.at(0)).shape, &ws = g.tensor(conv->inputs.at(1)).shape, &ys = g.tensor(conv->outputs.at(0)).shape;
    if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) return std::nullopt;
    auto [gm, pointwise] = conv_layout(xs, ws, ys, ops::read_attrs<ops::Conv2d::Attrs>(conv->attrs, conv->op_type));
    gm.a.dtype = storage(conv->inputs[1]), gm.b.dtype = storage(conv->inputs[0]);
    return gemm_problem(gm, !pointwise, mma);
  }
  if (lins.empty()) return std::nullopt;
  const ir::Node& l = *lins[0];
  const bool addmm = ops::op_info(ops::require_op(l)).id == "addmm";
  const ir::TensorId x = l.inputs.at(addmm ? 1 : 0), w = l.inputs.at(addmm ? 2 : 1);
  if (g.tensor(w).shape.size() != 2 || (addmm && g.tensor(x).shape.size() != 2)) return std::nullopt;
  Gemm gm = addmm ? addmm_layout(g.tensor(x).shape, g.tensor(w).shape) : linear_layout(g.tensor(x).shape, g.tensor(w).shape);
  // With a folded RMSNorm the GEMV reads the norm's input (the kernel's first); packed weights
  // are read as their storage type (the executor's PackedWeight).
  const bool norm = k.bool_param("has_norm");
  gm.a.dtype = storage(norm ? k.inputs.at(0) : x), gm.b.dtype = storage(w), gm.wq = ops::weight_block_format(l), gm.wdt = storage(w);
  GemmProblem p = gemm_problem(gm, false, mma);
  // The binder's up, more, norm or rope, which the graph alone does not show.
  p.gemv_only = *product == Product::gemv_only || norm, p.grouped = *product != Product::any;
  return p;
}

inline std::vector<KernelImplementation> implementations(const program::Partition& part) {
  kernel_choice::check_skipped<Skip>(meta::list<gemm_candidates>{});
  std::optional<MmaSupport> asked;  // the default device's answer, asked at most once
  auto mma = [&asked] {
    if (asked) return *asked;
    try {
      asked = mma_support(*open_device());
    } catch (const Error& e) {
      asked = MmaSupport{};
      asked->why = std::string("no OpenCL device to ask (") + e.what() + ")";
    }
    return *asked;
  };
  std::vector<KernelImplementation> out;
  // The convolutions the executor runs channels-last (layout.hpp), from the same rules.
  const ir::Graph& g = part.graph;
  const std::unordered_set<ir::TensorId> last = choose_channels_last(
      g, part.plan, part.kernels, [&g](ir::TensorId w) { return g.tensor(w).kind == ir::TensorKind::weight; }, [&mma] { return mma().ok; });
  for (std::size_t k = 0; k < part.kernels.size(); ++k) {
    const Kernel& kr = part.kernels[k];
    if (kr.kind == "view" || kr.nodes.empty()) continue;
    const std::optional<GemmProblem> p = product_problem(part, kr, mma);
    if (!p) continue;
    kernel_choice::Choice ch;
    kernel_choice::choose<Skip, gemm_candidates>(*p, &ch);
    KernelImplementation r{k, std::string(ch.chosen), {}, {}};
    // A group the 64x64 tiles take runs as its products apart (bind_apart); the GEMV and the tensor
    // cores run it as one launch (the tensor cores apart too where its rows are not aligned).
    if (p->grouped && !p->gemv_only && ch.chosen == GemmTiled::name) r.note = "each product apart (one launch only on a GEMV or the tensor cores)";
    if (is_conv_kernel(kr) && last.count(kr.outputs.at(0))) {
      const ir::Node& c = g.nodes.at(static_cast<std::size_t>(kr.nodes.at(0)));
      r.note = is_pointwise(g.tensor(c.inputs.at(1)).shape, ops::read_attrs<ops::Conv2d::Attrs>(c.attrs, c.op_type)) ? "channels-last (NHWC): a linear layer over the image's pixels" : "channels-last (NHWC): the image gathered 8 channels of a tap per 16-byte copy";
    }
    for (const auto& [name, why] : ch.declined) r.declined.emplace_back(std::string(name), why);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace npusim::inline NPUSIM_ABI::ocl

namespace npusim::inline NPUSIM_ABI {
NPUSIM_FUNC std::vector<KernelImplementation> implementations_for<OpenCLTarget>::of(const program::Partition& p) { return ocl::implementations(p); }

NPUSIM_FUNC ExecutorFactory executor_for<OpenCLTarget>::factory(const ExecutorOptions& o) {
  return [device = o.device, groups = o.persistent_groups](const PartitionContext& ctx) -> std::unique_ptr<PartitionExecutor> {
    return std::make_unique<ocl::Executor>(ctx, ocl::open_device(device), groups);
  };
}
}  // namespace npusim::inline NPUSIM_ABI
