// A partition's launches as one launch: the persistent program (cl/persistent.cl). Each launch
// becomes a stage of a table (its kernel function, its work, its arguments as they were set, with
// buffers as device addresses); one launch of G work-groups walks the table, every work-group
// taking virtual groups g, g + G, ... of a stage, with a grid-wide barrier between stages. On
// NVIDIA's OpenCL a launch costs about 7 us of device time and 5-16 us of host time, a barrier
// about 1 us: a decode step of 200-260 launches is bound by launching, and this removes it.
//
// Which launches can be stages: the kernels written with common.cl's PK_ macros (kernels below),
// 1-D, their storage types among the few build options they read. A partition with any other
// launch runs launch by launch (why_not() says which). The barrier needs every work-group resident
// at once: G is a few per compute unit with registers capped to fit, and a barrier that waits too
// long makes the run fail with an error instead of hanging.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "npusim/target/opencl/binder.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

// The kernel functions the persistent program has: whether one is indexed by work-group (else by
// work-item), the build options it reads (storage types TA, TB, TC; attention's TK is passed as
// TA; GV_M must be 1) and the local floats it takes.
struct PersistentKernel {
  std::string_view fn;
  bool group;
  std::array<std::string_view, 3> types;  // the -D names passed as the 1st, 2nd, 3rd type
  int local_floats;
};
inline constexpr std::array<PersistentKernel, 10> persistent_kernels{{
    {"gemv", true, {"TA", "TB", "TC"}, 128},
    {"gemv_rope", true, {"TA", "TB", "TC"}, 128},
    {"gemv_q", true, {"TA", "", "TC"}, 256},
    {"attention", true, {"TK", "", ""}, 256 + 1024 + 128},
    {"attention_dec", true, {"TK", "", ""}, 128 + 1024},
    {"rmsnorm", true, {"", "", ""}, 128},
    {"gather_rows", false, {"", "", ""}, 0},
    {"rope_kv", false, {"", "", ""}, 0},
    {"rotary", false, {"", "", ""}, 0},
    {"rotary_embedding", false, {"", "", ""}, 0},
}};
inline constexpr int persistent_wg = 128;  // PK_WG

// The sources between //@pk+ and //@pk- lines.
inline std::string persistent_regions(std::string_view src) {
  std::string out;
  bool in = false;
  std::size_t at = 0;
  while (at < src.size()) {
    std::size_t end = src.find('\n', at);
    if (end == std::string_view::npos) end = src.size();
    std::string_view line = src.substr(at, end - at);
    if (line.starts_with("//@pk+")) in = true;
    else if (line.starts_with("//@pk-")) in = false;
    else if (in) out.append(line).append("\n");
    at = end + 1;
  }
  return out;
}

// A stage's kind: kernel function, storage types and argument kinds (one `case` of pk_run).
struct PersistentStageType {
  std::string fn;
  bool group = true;
  std::array<int, 3> types{0, 0, 0};
  std::vector<LaunchArg::Kind> sig;
  int block_format = 0;  // gemv_q's GQ_FMT (source() defines it once: one format per program)
  bool split = false;    // attention's AT_SPLIT: rows merged over work-groups (source() compiles the merge if any stage does)
  bool operator<(const PersistentStageType& o) const {
    return std::tie(fn, types, sig, block_format, split) < std::tie(o.fn, o.types, o.sig, o.block_format, o.split);
  }
};

// The stage type of launch l, or why it cannot be one.
inline std::optional<PersistentStageType> persistent_stage_type(const Launch& l, std::string* why) {
  auto no = [&](std::string w) -> std::optional<PersistentStageType> {
    if (why) *why = "kernel " + l.name + ": " + std::move(w);
    return std::nullopt;
  };
  const PersistentKernel* k = nullptr;
  for (const auto& pk : persistent_kernels)
    if (pk.fn == l.name) k = &pk;
  if (!k) return no("not in the persistent program");
  if (l.dims != 1 || !l.has_local) return no("not a 1-D launch");
  if (k->group && l.local[0] != static_cast<std::size_t>(persistent_wg) && l.name != "rmsnorm")
    return no("work-groups of " + std::to_string(l.local[0]) + " items");
  PersistentStageType t{l.name, k->group, {0, 0, 0}, {}};
  std::istringstream opts(l.options);
  for (std::string tok; opts >> tok;) {
    if (!tok.starts_with("-D")) return no("build option " + tok);
    const auto eq = tok.find('=');
    const std::string name = tok.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::string value = eq == std::string::npos ? "1" : tok.substr(eq + 1);
    if (name == "GV_M" && value == "1") continue;
    if (name == "AT_SPLIT" && k->fn.starts_with("attention")) {
      t.split = value != "0";
      continue;
    }
    if (name == "GQ_FMT" && k->fn == "gemv_q") {
      t.block_format = std::stoi(value);
      continue;
    }
    bool known = false;
    for (std::size_t i = 0; i < 3; ++i)
      if (k->types[i] == name) t.types[i] = std::stoi(value), known = true;
    if (!known && name != "TA" && name != "TB" && name != "TC" && name != "TK") return no("build option " + tok);  // a type it does not read
  }
  for (const auto& a : l.args) t.sig.push_back(a.kind);
  return t;
}

class Persistent {
  // Sets argument i of kernel k (`what` names it in the error).
  template <class T>
  void arg(cl_kernel k, cl_uint i, const T& v, const char* what) const {
    check(clSetKernelArg(k, i, sizeof v, &v), std::string("setting ") + what, dev_.info().name);
  }

 public:
  // Why these launches cannot run as one persistent launch ("" when they can).
  static std::string why_not(const std::vector<Launch>& launches) {
    std::string why;
    int block_format = 0;
    for (const auto& l : launches) {
      const auto t = persistent_stage_type(l, &why);
      if (!t) return why;
      if (t->block_format && block_format && t->block_format != block_format) return "gemv_q over two block formats (one per program)";
      if (t->block_format) block_format = t->block_format;
    }
    return launches.empty() ? "no launches" : "";
  }

  // Builds the program and the stage table for `launches` (why_not() empty) on `groups` work-groups,
  // or, with groups == 0, for stage by stage: one launch per stage of a kernel whose arguments are
  // the table's row (two arguments instead of up to 44: the driver's cost of a launch grows with them).
  Persistent(Device& dev, const std::vector<Launch>& launches, int groups, cl_mem errors) : dev_(dev), groups_(groups), errors_(errors) {
    std::map<PersistentStageType, int> kinds;
    std::vector<int> kind_of;
    for (const auto& l : launches) {
      auto t = *persistent_stage_type(l, nullptr);
      kind_of.push_back(kinds.emplace(t, static_cast<int>(kinds.size())).first->second);
    }
    std::size_t max_args = 0;
    for (const auto& l : launches) max_args = std::max(max_args, l.args.size());
    stride_ = 2 + max_args;
    std::vector<const PersistentStageType*> by_id(kinds.size());
    for (const auto& [t, id] : kinds) by_id[static_cast<std::size_t>(id)] = &t;
    const bool nv = dev.info().cc_major >= 7;
    // Registers capped so that the work-groups of a compute unit fit its 64K registers together.
    const int per_cu = std::max(1, groups / std::max<int>(1, static_cast<int>(dev.info().compute_units)));  // 1 stage by stage
    std::string options = nv ? "-DPK_PTX_FENCE -cl-nv-maxrregcount=" + std::to_string(std::min(255, 65536 / (persistent_wg * per_cu))) : "";
    if (const char* e = std::getenv("NPUSIM_OPENCL_PERSISTENT_OPTIONS")) options += std::string(" ") + e;  // experiments: -DPK_EMPTY
    program_ = dev.program("persistent", source(by_id), options);
    kernel_ = dev.kernel(program_, "pk_run");
    address_ = dev.kernel(program_, "pk_address");
    // Device addresses of every buffer the launches use.
    std::map<cl_mem, std::size_t> index;
    for (const auto& l : launches)
      for (const auto& a : l.args)
        if (a.kind == LaunchArg::Kind::mem) index.emplace(a.mem, index.size());
    Mem addrs = dev.alloc(std::max<std::size_t>(index.size(), 1) * sizeof(cl_ulong), "the persistent program's buffer addresses");
    cl_mem am = addrs.get();
    const std::size_t one = 1;
    for (const auto& [m, i] : index) {
      const cl_int ii = static_cast<cl_int>(i);
      arg(address_.get(), 0, m, "pk_address's buffer"), arg(address_.get(), 1, am, "pk_address's output"), arg(address_.get(), 2, ii, "pk_address's index");
      check(clEnqueueNDRangeKernel(dev.queue(), address_.get(), 1, nullptr, &one, &one, 0, nullptr, nullptr), "reading a buffer's device address",
            dev.info().name);
    }
    std::vector<cl_ulong> address(index.size());
    if (!address.empty())
      check(clEnqueueReadBuffer(dev.queue(), am, CL_TRUE, 0, address.size() * sizeof(cl_ulong), address.data(), 0, nullptr, nullptr),
            "reading the buffers' device addresses", dev.info().name);
    // The table: [kind, virtual groups, arguments...] per stage.
    std::vector<cl_ulong> table(launches.size() * stride_, 0);
    for (std::size_t s = 0; s < launches.size(); ++s) {
      const Launch& l = launches[s];
      cl_ulong* row = table.data() + s * stride_;
      const auto& t = *by_id[static_cast<std::size_t>(kind_of[s])];
      row[0] = static_cast<cl_ulong>(kind_of[s]);
      row[1] = t.group ? l.global[0] / l.local[0] : (l.global[0] + persistent_wg - 1) / persistent_wg;
      for (std::size_t j = 0; j < l.args.size(); ++j)
        row[2 + j] = l.args[j].kind == LaunchArg::Kind::mem ? address[index.at(l.args[j].mem)] : l.args[j].bits;
    }
    stages_ = launches.size();
    table_ = dev.alloc(table.size() * sizeof(cl_ulong), "the persistent program's stage table");
    dev.write(table_.get(), 0, table.size() * sizeof(cl_ulong), table.data(), true);
    bar_ = dev.alloc(sizeof(cl_uint), "the persistent program's barrier counter");
    const cl_uint zero = 0;
    dev.write(bar_.get(), 0, sizeof zero, &zero, true);
    cl_mem tm = table_.get(), bm = bar_.get();
    const cl_int ns = static_cast<cl_int>(stages_), st = static_cast<cl_int>(stride_);
    arg(kernel_.get(), 0, tm, "pk_run's table"), arg(kernel_.get(), 2, st, "pk_run's table stride");
    arg(kernel_.get(), 3, bm, "pk_run's barrier"), arg(kernel_.get(), 5, errors_, "pk_run's error word");
    times_ = dev.alloc((stages_ + 1) * sizeof(cl_ulong), "the persistent program's stage times");
    cl_mem tt = times_.get();
    arg(kernel_.get(), 6, tt, "pk_run's stage times");
    clock_ = nv;
    if (groups_ == 0) {  // stage by stage
      for (std::size_t st_i = 0; st_i < stages_; ++st_i) {
        KernelHandle k = dev.kernel(program_, ("pk_one_" + std::to_string(kind_of[st_i])).c_str());
        const cl_int row = static_cast<cl_int>(st_i);
        arg(k.get(), 0, tm, "a stage kernel's table"), arg(k.get(), 1, st, "a stage kernel's table stride"), arg(k.get(), 2, row, "a stage kernel's row");
        stage_kernels_.push_back(std::move(k));
        stage_global_.push_back(static_cast<std::size_t>(table[st_i * stride_ + 1]) * persistent_wg);
      }
      return;
    }
    // As many work-groups as are resident together, from `groups` down by halves: each count is
    // tried with one barrier of this kernel (its registers and local memory), waiting briefly.
    while (groups_ > 1 && !resident(groups_)) groups_ /= 2;
    const cl_int limit = 1 << 24;  // a run's barriers give up after seconds, never hang
    arg(kernel_.get(), 8, limit, "pk_run's spin limit"), arg(kernel_.get(), 1, ns, "pk_run's stage count");
  }

  // Enqueues the one launch (the barrier counter continues from the last run's); `timed` records
  // when each stage ended (stage_times(), on devices with a clock: has_clock()).
  void enqueue(cl_command_queue q, bool timed = false, cl_event* ev = nullptr) {
    const cl_int t = timed ? 1 : 0;
    arg(kernel_.get(), 4, base_, "pk_run's barrier base"), arg(kernel_.get(), 7, t, "pk_run's timing flag");
    const std::size_t local = persistent_wg, global = static_cast<std::size_t>(groups_) * local;
    check(clEnqueueNDRangeKernel(q, kernel_.get(), 1, nullptr, &global, &local, 0, nullptr, ev), "enqueueing the persistent program",
          dev_.info().name);
    base_ += static_cast<cl_uint>(groups_) * static_cast<cl_uint>(stages_ > 0 ? stages_ - (timed ? 0 : 1) : 0);
  }
  bool has_clock() const { return clock_; }
  bool stage_by_stage() const { return groups_ == 0; }
  // Stage by stage: enqueues stage s (the launch it stands for), as clEnqueueNDRangeKernel returns.
  cl_int enqueue_stage(cl_command_queue q, std::size_t s, cl_event* ev) const {
    const std::size_t local = persistent_wg;
    return clEnqueueNDRangeKernel(q, stage_kernels_.at(s).get(), 1, nullptr, &stage_global_[s], &local, 0, nullptr, ev);
  }

  // Whether g work-groups of pk_run all reach one barrier (its error word cleared after).
  bool resident(int g) {
    const cl_int zero_stages = 0, t = 0, limit = 1 << 20;
    arg(kernel_.get(), 1, zero_stages, "pk_run's stage count"), arg(kernel_.get(), 7, t, "pk_run's timing flag");
    arg(kernel_.get(), 8, limit, "pk_run's spin limit");
    reset();
    arg(kernel_.get(), 4, base_, "pk_run's barrier base");
    const std::size_t local = persistent_wg, global = static_cast<std::size_t>(g) * local;
    check(clEnqueueNDRangeKernel(dev_.queue(), kernel_.get(), 1, nullptr, &global, &local, 0, nullptr, nullptr), "probing the persistent program",
          dev_.info().name);
    std::array<cl_int, 4> err{};
    check(clEnqueueReadBuffer(dev_.queue(), errors_, CL_TRUE, 0, sizeof err, err.data(), 0, nullptr, nullptr), "reading the probe's error word",
          dev_.info().name);
    const std::array<cl_int, 4> clear{};
    dev_.write(errors_, 0, sizeof clear, clear.data(), true);
    reset();
    return err[1] == 0;
  }
  // Device ns when the launch began (element 0) and when each stage had ended (element s + 1), of
  // the last timed run (read after it finished).
  std::vector<cl_ulong> stage_times(cl_command_queue q) const {
    std::vector<cl_ulong> t(stages_ + 1);
    check(clEnqueueReadBuffer(q, times_.get(), CL_TRUE, 0, t.size() * sizeof(cl_ulong), t.data(), 0, nullptr, nullptr),
          "reading the persistent program's stage times", dev_.info().name);
    return t;
  }
  // After a barrier timed out: the counter starts again from 0.
  void reset() {
    const cl_uint zero = 0;
    dev_.write(bar_.get(), 0, sizeof zero, &zero, true);
    base_ = 0;
  }
  int groups() const { return groups_; }
  std::size_t stages() const { return stages_; }

  // The program: persistent.cl, the kernels' //@pk+ regions, and pk_run with one case per stage type.
  static std::string source(const std::vector<const PersistentStageType*>& kinds) {
    std::string s(cl_source::persistent);
    s.append("\n").append(cl_source::common).append("\n");
    bool split = false;
    for (const auto* t : kinds) split = split || t->split;
    s += split ? "#define AT_SPLIT 1\n" : "#define AT_SPLIT 0\n";
    for (std::string_view src : {cl_source::generic, cl_source::gemm, cl_source::attention}) s += persistent_regions(src);
    for (const auto* t : kinds)
      if (t->block_format) {
        s += "#define GQ_FMT " + std::to_string(t->block_format) + "\n" + persistent_regions(cl_source::gemv_q);
        break;
      }
    int lmem = 1;
    for (const auto* t : kinds)
      for (const auto& pk : persistent_kernels)
        if (pk.fn == t->fn) lmem = std::max(lmem, pk.local_floats);
    // With `timed`, work-group 0 records the clock when every stage has ended (times[s + 1]).
    // nst == 0: one barrier, to learn whether this many work-groups are resident together.
    s += "\n__kernel __attribute__((reqd_work_group_size(PK_WG, 1, 1))) void pk_run(__global const ulong* tab, int nst, int stride,\n"
         "    volatile __global uint* bar, uint base, __global int* err, __global ulong* times, int timed, int spin_limit) {\n"
         "  __local float lmem[" + std::to_string(lmem) + "];\n"
         "  __local int timed_out;\n"
         "  const long G = get_num_groups(0), gid = get_group_id(0);\n"
         "  const int stamp = timed && gid == 0 && get_local_id(0) == 0;\n"
         "  uint target = base;\n"
         "  if (stamp) times[0] = pk_now();\n"
         "  if (nst == 0) {\n"
         "    pk_grid_sync(bar, target + (uint)G, err, &timed_out, spin_limit);\n"
         "    return;\n"
         "  }\n"
         "  for (int s = 0; s < nst; ++s) {\n"
         "    __global const ulong* a = tab + (long)s * stride;\n"
         "    const long n = (long)a[1];\n"
         "#ifndef PK_EMPTY\n"  // (PK_EMPTY: stages without their work, to time what the stages cost by themselves)
         "    switch ((int)a[0]) {\n";
    for (std::size_t id = 0; id < kinds.size(); ++id) {
      const auto& t = *kinds[id];
      s += "      case " + std::to_string(id) + ":\n        for (long vg = gid; vg < n; vg += G) {\n";
      if (t.group)
        s += "          " + call(t, "vg", "lmem") + ";\n          barrier(CLK_LOCAL_MEM_FENCE);\n";
      else
        s += "          " + call(t, "vg * PK_WG + get_local_id(0)", "") + ";\n";
      s += "        }\n        break;\n";
    }
    s += "    }\n"
         "#endif\n"
         "    if (s + 1 < nst || timed) {\n"
         "      target += (uint)G;\n"
         "      if (pk_grid_sync(bar, target, err, &timed_out, spin_limit)) return;\n"
         "      if (stamp) times[s + 1] = pk_now();\n"
         "    }\n"
         "  }\n"
         "}\n";
    // Stage by stage (stage_by_stage()): one small kernel per stage type, its arguments a table row.
    for (std::size_t id = 0; id < kinds.size(); ++id) {
      const auto& t = *kinds[id];
      s += "__kernel __attribute__((reqd_work_group_size(PK_WG, 1, 1))) void pk_one_" + std::to_string(id) +
           "(__global const ulong* tab, int stride, int row) {\n"
           "  __global const ulong* a = tab + (long)row * stride;\n";
      if (t.group) s += "  __local float lmem[" + std::to_string(lmem) + "];\n  " + call(t, "get_group_id(0)", "lmem") + ";\n}\n";
      else s += "  " + call(t, "get_global_id(0)", "") + ";\n}\n";
    }
    return s;
  }

  // The call of stage type t's function for virtual group (or item) `index`, its arguments from row a.
  static std::string call(const PersistentStageType& t, const std::string& index, const std::string& lmem) {
    std::string args;
    for (std::size_t j = 0; j < t.sig.size(); ++j) {
      const std::string w = "a[" + std::to_string(2 + j) + "]";
      switch (t.sig[j]) {
        case LaunchArg::Kind::mem: args += ", (__global void*)" + w; break;
        case LaunchArg::Kind::i32: args += ", (int)" + w; break;
        case LaunchArg::Kind::i64: args += ", (long)" + w; break;
        case LaunchArg::Kind::u64: args += ", " + w; break;
        case LaunchArg::Kind::f32: args += ", as_float((uint)" + w + ")"; break;
      }
    }
    const std::string types = std::to_string(t.types[0]) + ", " + std::to_string(t.types[1]) + ", " + std::to_string(t.types[2]);
    return t.fn + "(" + index + (lmem.empty() ? "" : ", " + lmem) + ", " + types + args + ")";
  }

 private:
  Device& dev_;
  int groups_;
  cl_mem errors_;
  cl_program program_ = nullptr;
  KernelHandle kernel_, address_;
  Mem table_, bar_, times_;
  std::vector<KernelHandle> stage_kernels_;  // stage by stage
  std::vector<std::size_t> stage_global_;
  bool clock_ = false;
  std::size_t stages_ = 0, stride_ = 2;
  cl_uint base_ = 0;
};

}  // namespace npusim::inline NPUSIM_ABI::ocl
