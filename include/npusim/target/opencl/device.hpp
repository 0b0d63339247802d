// OpenCL plumbing for the OpenCL target: the only place that includes the OpenCL headers (with
// target/opencl/ beside it). Devices are listed across platforms and chosen by index, by a name
// substring or by NPUSIM_OPENCL_DEVICE (default: the first GPU, else the first device). A Device
// owns a context and in-order queues (one with profiling, made on first use) and builds programs
// once per (device, driver, source, options): built binaries are cached on disk under
// NPUSIM_OPENCL_CACHE (default $XDG_CACHE_HOME/npusim/opencl or ~/.cache/npusim/opencl), keyed by
// a hash of all of these, so a driver or source change rebuilds; build logs surface in errors.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/core/file.hpp"

namespace npusim::inline NPUSIM_ABI::ocl {

inline const char* cl_error_name(cl_int e) {
  switch (e) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
    default: return "OpenCL error";
  }
}

// Throws a typed error for a failed OpenCL call; `where` names the call and what it was for.
inline void check(cl_int e, const std::string& where, const std::string& device = {}) {
  if (e == CL_SUCCESS) return;
  throw Error(ErrorCode::runtime, "OpenCL: " + where + " failed: " + cl_error_name(e) + " (" + std::to_string(e) + ")" +
                                      (device.empty() ? "" : " on " + device));
}

// Owning handles for OpenCL objects.
template <class T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(), h_ = o.h_, o.h_ = nullptr;
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (h_) Release(h_);
    h_ = nullptr;
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};
using Mem = Handle<cl_mem, clReleaseMemObject>;
using KernelHandle = Handle<cl_kernel, clReleaseKernel>;
using ProgramHandle = Handle<cl_program, clReleaseProgram>;
using QueueHandle = Handle<cl_command_queue, clReleaseCommandQueue>;
using ContextHandle = Handle<cl_context, clReleaseContext>;
using EventHandle = Handle<cl_event, clReleaseEvent>;

// A string property of an OpenCL object (clGetDeviceInfo / clGetPlatformInfo), trailing NULs and
// spaces removed; empty when the driver does not answer.
template <class Obj, class Info, class Get>
std::string info_string(Obj o, Info what, Get get) {
  std::size_t n = 0;
  if (get(o, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  get(o, what, n, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}
inline std::string device_string(cl_device_id d, cl_device_info what) { return info_string(d, what, clGetDeviceInfo); }
inline std::string platform_string(cl_platform_id p, cl_platform_info what) { return info_string(p, what, clGetPlatformInfo); }
template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

struct DeviceInfo {
  std::size_t index = 0;  // in the list over all platforms
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string platform_name, name, vendor, driver, version, c_version;
  bool gpu = false;
  std::uint64_t global_mem = 0, max_alloc = 0, local_mem = 0;
  std::uint32_t compute_units = 0;
  std::size_t max_work_group = 0;
  // NVIDIA's compute capability (cl_nv_device_attribute_query); 0.0 on other devices.
  int cc_major = 0, cc_minor = 0;
  std::string describe() const {
    return name + " (" + platform_name + ", " + (gpu ? "GPU" : "CPU/other") + ", driver " + driver + ")";
  }
};

// Every OpenCL device over all platforms, in platform order. An empty list when no ICD is there.
inline std::vector<DeviceInfo> list_devices() {
  cl_uint np = 0;
  std::vector<DeviceInfo> out;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    for (cl_device_id d : ds) {
      DeviceInfo i;
      i.index = out.size();
      i.platform = p, i.id = d;
      i.platform_name = platform_string(p, CL_PLATFORM_NAME);
      i.name = device_string(d, CL_DEVICE_NAME);
      i.vendor = device_string(d, CL_DEVICE_VENDOR);
      i.driver = device_string(d, CL_DRIVER_VERSION);
      i.version = device_string(d, CL_DEVICE_VERSION);
      i.c_version = device_string(d, CL_DEVICE_OPENCL_C_VERSION);
      i.gpu = (device_value<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
      i.global_mem = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
      i.max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      i.local_mem = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
      i.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
      i.max_work_group = device_value<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      if (device_string(d, CL_DEVICE_EXTENSIONS).find("cl_nv_device_attribute_query") != std::string::npos) {
        constexpr cl_device_info cc_major_nv = 0x4000, cc_minor_nv = 0x4001;  // CL_DEVICE_COMPUTE_CAPABILITY_{MAJOR,MINOR}_NV
        i.cc_major = static_cast<int>(device_value<cl_uint>(d, cc_major_nv));
        i.cc_minor = static_cast<int>(device_value<cl_uint>(d, cc_minor_nv));
      }
      out.push_back(std::move(i));
    }
  }
  return out;
}

// Why the loader may list fewer drivers than are installed: ocl-icd's OCL_ICD_FILENAMES names the
// driver libraries it loads. On the lent GPU machine the shell has
// OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1 and mpirun's ranks got only its first entry.
inline std::string loader_note() {
  const char* f = std::getenv("OCL_ICD_FILENAMES");
  if (!f || !*f) return {};
  return " (OCL_ICD_FILENAMES=" + std::string(f) + " limits the OpenCL loader to those drivers: list every driver there; "
         "under mpirun pass it whole, e.g. mpirun -x OCL_ICD_FILENAMES=libnvidia-opencl.so.1:libpocl.so.2 ...)";
}

// "" -> NPUSIM_OPENCL_DEVICE, else the first GPU, else device 0. A number is an index; anything
// else a case-insensitive substring of "platform name / device name".
inline DeviceInfo select_device(std::string selector = {}) {
  if (selector.empty())
    if (const char* e = std::getenv("NPUSIM_OPENCL_DEVICE")) selector = e;
  auto devs = list_devices();
  if (devs.empty())
    throw Error(ErrorCode::unsupported, "no OpenCL device found (is an OpenCL driver installed, e.g. Debian's pocl-opencl-icd?)" + loader_note());
  auto all = [&] {
    std::string s;
    for (const auto& d : devs) s += (s.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.platform_name + " / " + d.name;
    return s;
  };
  if (selector.empty()) {
    for (const auto& d : devs)
      if (d.gpu) return d;
    return devs[0];
  }
  if (selector.find_first_not_of("0123456789") == std::string::npos) {
    std::size_t i = std::stoul(selector);
    if (i >= devs.size()) throw Error(ErrorCode::unsupported, "no OpenCL device with this index" + loader_note(), {.expected = all(), .found = selector});
    return devs[i];
  }
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (const auto& d : devs)
    if (lower(d.platform_name + " / " + d.name).find(lower(selector)) != std::string::npos) return d;
  throw Error(ErrorCode::unsupported, "no OpenCL device matches '" + selector + "'" + loader_note(), {.expected = all(), .found = selector});
}

// FNV-1a 64, for cache keys.
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

inline std::filesystem::path program_cache_dir() {
  if (const char* e = std::getenv("NPUSIM_OPENCL_CACHE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "npusim" / "opencl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "npusim" / "opencl";
  return std::filesystem::temp_directory_path() / "npusim-opencl-cache";
}

// Whether a device gets the tensor-core matrix kernels (mma.hpp decides, once per device).
struct MmaSupport {
  bool ok = false;
  bool emulated = false;  // NPUSIM_OPENCL_MMA=emulate: the same kernels in portable OpenCL C (tests)
  std::string why;  // the path taken and the reason, for `npusim devices` and the docs
};

// A device opened for use: context, queues, built programs. Shared by every executor on it
// (weights uploaded by one partition are found by the next through weight_buffer()).
class Device {
 public:
  explicit Device(DeviceInfo info) : info_(std::move(info)) {
    cl_int e = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info_.platform), 0};
    cl_device_id id = info_.id;
    ctx_ = ContextHandle(clCreateContext(props, 1, &id, nullptr, nullptr, &e));
    check(e, "clCreateContext", info_.name);
    queue_ = QueueHandle(clCreateCommandQueue(ctx_.get(), id, 0, &e));
    check(e, "clCreateCommandQueue", info_.name);
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  cl_context context() const { return ctx_.get(); }
  cl_command_queue queue() const { return queue_.get(); }
  cl_command_queue profiling_queue() {
    std::lock_guard lock(mu_);
    if (!pqueue_) {
      cl_int e = CL_SUCCESS;
      pqueue_ = QueueHandle(clCreateCommandQueue(ctx_.get(), info_.id, CL_QUEUE_PROFILING_ENABLE, &e));
      check(e, "clCreateCommandQueue (profiling)", info_.name);
    }
    return pqueue_.get();
  }

  Mem alloc(std::size_t bytes, const std::string& what) {
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 64), nullptr, &e);
    check(e, "allocating " + std::to_string(bytes) + " bytes for " + what, info_.name);
    return Mem(m);
  }
  void write(cl_mem m, std::size_t offset, std::size_t bytes, const void* p, bool blocking) {
    if (bytes) check(clEnqueueWriteBuffer(queue_.get(), m, blocking ? CL_TRUE : CL_FALSE, offset, bytes, p, 0, nullptr, nullptr), "clEnqueueWriteBuffer", info_.name);
  }

  // Device copies of host weights, keyed by the host storage they came from (so tied weights and
  // the weights of a prefill and a decode program share one copy). The entry keeps the host
  // storage alive, so its address cannot be reused for other values while the copy exists.
  std::shared_ptr<Mem> weight_buffer(const void* host, std::size_t bytes, std::shared_ptr<void> owner, const std::string& what) {
    std::lock_guard lock(mu_);
    const CacheKey key{host, bytes};
    if (auto sp = cached(weights_, key)) return sp;
    auto m = upload(host, bytes, std::move(owner), what);
    weights_[key] = m;
    return m;
  }

  // A buffer of bytes computed from a host weight (its packed blocks): made once per (host, tag)
  // while some partition holds it, so the prefill and decode programs share one copy. `owner`
  // keeps the host bytes (and so the key) alive as long as the buffer.
  std::shared_ptr<Mem> derived_buffer(const void* host, std::uint64_t tag, std::shared_ptr<void> owner,
                                      const std::function<std::vector<std::byte>()>& make, const std::string& what) {
    std::lock_guard lock(mu_);
    const CacheKey key{host, tag};
    if (auto sp = cached(derived_, key)) return sp;
    const std::vector<std::byte> bytes = make();
    auto m = upload(bytes.data(), bytes.size(), std::move(owner), what);
    derived_[key] = m;
    return m;
  }

  // The program for (source, options), built once per process and cached on disk.
  cl_program program(const std::string& name, std::string_view source, const std::string& options) {
    std::lock_guard lock(mu_);
    // On NVIDIA GPUs (compute capability >= 7) reductions use warp shuffles (common.cl, NV_WARP).
    const bool nv_warp = info_.platform_name.find("NVIDIA") != std::string::npos && info_.gpu && info_.cc_major >= 7;
    std::string full_opts = "-cl-std=CL1.2 " + std::string(nv_warp ? "-DNV_WARP=1 " : "") + options + extra_build_options();
    std::string key_text = info_.platform_name + "\n" + info_.name + "\n" + info_.driver + "\n" + info_.version + "\n" + full_opts + "\n";
    std::uint64_t key = fnv1a(source, fnv1a(key_text));
    if (auto it = programs_.find(key); it != programs_.end()) return it->second.get();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
    const std::filesystem::path file = program_cache_dir() / (name + "-" + hex + ".bin");
    cl_device_id id = info_.id;
    cl_int e = CL_SUCCESS;
    ProgramHandle prog;
    if (std::ifstream in(file, std::ios::binary); in) {
      std::string bin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto* data = reinterpret_cast<const unsigned char*>(bin.data());
      std::size_t len = bin.size();
      cl_int status = CL_SUCCESS;
      prog = ProgramHandle(clCreateProgramWithBinary(ctx_.get(), 1, &id, &len, &data, &status, &e));
      if (e != CL_SUCCESS || status != CL_SUCCESS || clBuildProgram(prog.get(), 1, &id, full_opts.c_str(), nullptr, nullptr) != CL_SUCCESS)
        prog.reset();  // stale or foreign binary: rebuild from source
    }
    if (!prog) {
      const char* src = source.data();
      std::size_t len = source.size();
      prog = ProgramHandle(clCreateProgramWithSource(ctx_.get(), 1, &src, &len, &e));
      check(e, "clCreateProgramWithSource (" + name + ")", info_.name);
      if (clBuildProgram(prog.get(), 1, &id, full_opts.c_str(), nullptr, nullptr) != CL_SUCCESS) {
        std::size_t n = 0;
        clGetProgramBuildInfo(prog.get(), id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
        std::string log(n, '\0');
        clGetProgramBuildInfo(prog.get(), id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        throw Error(ErrorCode::runtime, "OpenCL program '" + name + "' failed to build on " + info_.name + " with options '" + full_opts +
                                            "'; build log:\n" + log);
      }
      save_binary(prog.get(), file);
    }
    cl_program p = prog.get();
    programs_.emplace(key, std::move(prog));
    return p;
  }

  // NPUSIM_OPENCL_BUILD_OPTIONS: OpenCL C build options appended to every program (part of the
  // cache key). CI's PoCL tests set -cl-opt-disable where a test's time is PoCL optimising kernels
  // it runs once (tests/CMakeLists.txt): a kernel's first launch takes 0.3-0.8 s instead of 10-23 s.
  static std::string extra_build_options() {
    const char* e = std::getenv("NPUSIM_OPENCL_BUILD_OPTIONS");
    return e && *e ? std::string(" ") + e : std::string();
  }

  // The tensor-core decision, made once by `probe` (mma.hpp) and kept with the device.
  template <class Probe>
  const MmaSupport& mma(Probe&& probe) {
    std::call_once(mma_once_, [&] { mma_ = probe(*this); });
    return mma_;
  }

  KernelHandle kernel(cl_program p, const char* name) {
    cl_int e = CL_SUCCESS;
    KernelHandle k(clCreateKernel(p, name, &e));
    check(e, std::string("clCreateKernel ") + name, info_.name);
    return k;
  }

 private:
  static void save_binary(cl_program p, const std::filesystem::path& file) {
    std::size_t n = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr) != CL_SUCCESS || n == 0) return;
    std::string bin(n, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
    try {  // the cache is an optimisation: a read-only home must not fail the run
      std::filesystem::create_directories(file.parent_path());
      write_file_atomic(file.string(), bin);
    } catch (const std::exception&) {
    }
  }

  DeviceInfo info_;
  ContextHandle ctx_;
  QueueHandle queue_, pqueue_;
  std::mutex mu_;
  std::map<std::uint64_t, ProgramHandle> programs_;
  using CacheKey = std::pair<const void*, std::uint64_t>;
  using Cache = std::map<CacheKey, std::weak_ptr<Mem>>;
  static std::shared_ptr<Mem> cached(const Cache& c, const CacheKey& key) {
    auto it = c.find(key);
    return it == c.end() ? nullptr : it->second.lock();
  }
  // A new device copy of n host bytes that keeps `owner` alive as long as it lives.
  std::shared_ptr<Mem> upload(const void* src, std::size_t n, std::shared_ptr<void> owner, const std::string& what) {
    struct Owned {
      Mem mem;
      std::shared_ptr<void> host;
    };
    auto o = std::make_shared<Owned>(Owned{alloc(n, what), std::move(owner)});
    write(o->mem.get(), 0, n, src, true);
    return std::shared_ptr<Mem>(o, &o->mem);
  }
  Cache weights_;  // by (host, bytes)
  Cache derived_;  // by (host, tag)
  std::once_flag mma_once_;
  MmaSupport mma_;
};

// One Device per selected device per process.
// The device's copy bandwidth in GB/s, bytes read plus bytes written: the median of `reps`
// clEnqueueCopyBuffer calls between two buffers (512 MiB on a GPU, ten times its largest caches;
// 64 MiB elsewhere), after one untimed. The floor a weight-streaming step is measured against.
// Pinned host memory: page-aligned memory of ours that the driver pins (CL_MEM_USE_HOST_PTR),
// mapped once, ordinary cached memory to the CPU, so an output tensor can live in it. Transfers
// between it and device buffers are DMA the queue runs asynchronously; from or into pageable memory
// NVIDIA's driver stages each transfer and waits for it. (The driver's own CL_MEM_ALLOC_HOST_PTR
// buffer, which the CPU reads slowly, was measured beside it: docs/benchmarks.md.) Grows on demand
// (the old contents are not kept); callers reserve before enqueueing transfers. `keep` holds the
// device for as long as the memory lives (a tensor may outlive its executor).
class PinnedHost {
 public:
  PinnedHost() = default;
  explicit PinnedHost(std::shared_ptr<Device> keep) : keep_(std::move(keep)) {}
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  ~PinnedHost() { release(); }

  std::byte* reserve(Device& dev, std::size_t bytes) {
    if (bytes <= bytes_) return ptr_;
    release();
    bytes = (bytes + 4095) / 4096 * 4096;
    own_ = static_cast<std::byte*>(std::aligned_alloc(4096, bytes));
    if (!own_) throw Error(ErrorCode::resource, "cannot allocate " + std::to_string(bytes) + " bytes of host memory for transfers");
    cl_int e = CL_SUCCESS;
    buf_ = Mem(clCreateBuffer(dev.context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, own_, &e));
    check(e, "pinning " + std::to_string(bytes) + " bytes of host memory", dev.info().name);
    void* p = clEnqueueMapBuffer(dev.queue(), buf_.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &e);
    check(e, "mapping pinned host memory", dev.info().name);
    ptr_ = static_cast<std::byte*>(p), bytes_ = bytes, queue_ = dev.queue();
    return ptr_;
  }

 private:
  void release() {
    if (ptr_) clEnqueueUnmapMemObject(queue_, buf_.get(), ptr_, 0, nullptr, nullptr), clFinish(queue_);
    buf_ = Mem();
    std::free(own_);
    ptr_ = nullptr, own_ = nullptr, bytes_ = 0;
  }
  Mem buf_;
  std::byte* ptr_ = nullptr;
  std::byte* own_ = nullptr;
  std::size_t bytes_ = 0;
  cl_command_queue queue_ = nullptr;
  std::shared_ptr<Device> keep_;  // declared last: released after the memory
};

inline double copy_bandwidth_gbs(Device& dev, int reps = 7) {
  const std::size_t bytes = std::min<std::size_t>(dev.info().gpu ? std::size_t{512} << 20 : std::size_t{64} << 20, static_cast<std::size_t>(dev.info().max_alloc));
  Mem a = dev.alloc(bytes, "the copy-bandwidth probe"), b = dev.alloc(bytes, "the copy-bandwidth probe");
  const cl_uchar zero = 0;
  check(clEnqueueFillBuffer(dev.queue(), a.get(), &zero, 1, 0, bytes, 0, nullptr, nullptr), "filling the copy-bandwidth probe", dev.info().name);
  std::vector<double> ms;
  for (int i = 0; i <= reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    check(clEnqueueCopyBuffer(dev.queue(), a.get(), b.get(), 0, 0, bytes, 0, nullptr, nullptr), "the copy-bandwidth probe", dev.info().name);
    check(clFinish(dev.queue()), "the copy-bandwidth probe", dev.info().name);
    if (i) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e6);
}

inline std::shared_ptr<Device> open_device(const std::string& selector = {}) {
  static std::mutex mu;
  static std::map<cl_device_id, std::weak_ptr<Device>> open;
  DeviceInfo info = select_device(selector);
  std::lock_guard lock(mu);
  if (auto it = open.find(info.id); it != open.end())
    if (auto d = it->second.lock()) return d;
  auto d = std::make_shared<Device>(std::move(info));
  open[d->info().id] = d;
  return d;
}

}  // namespace npusim::inline NPUSIM_ABI::ocl
