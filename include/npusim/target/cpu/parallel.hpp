// Threading for the CPU target: one persistent pool, sized to the machine (NPUSIM_THREADS, else
// OMP_NUM_THREADS, else the hardware), with workers that spin briefly between back-to-back
// kernels and sleep otherwise, so a busy machine does not turn every kernel into a scheduler wait
// (OpenMP's default spin-then-wait behaved badly there). parallel_for hands each thread one
// contiguous range; small work stays on the calling thread. parallel_items (the convolutions)
// starts each thread on its own range and lets a thread that is done take the others' last items.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPUSIM_CPU_PAUSE() _mm_pause()
#else
#define NPUSIM_CPU_PAUSE() std::this_thread::yield()
#endif

namespace npusim::inline NPUSIM_ABI::cpu {

class ThreadPool {
 public:
  // When the system refuses a thread part way (a memory or process limit), the workers already
  // started are stopped and joined, and a resource error says how many threads could be created:
  // an exception escaping with running workers would destroy the condition variable they wait on
  // (pthread_cond_destroy then blocks for ever) or a joinable std::thread (std::terminate).
  explicit ThreadPool(int threads) : n_(std::clamp(threads, 1, static_cast<int>(width_mask))) {
    try {
      workers_.reserve(static_cast<std::size_t>(n_ - 1));
      for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { loop(i); });
    } catch (const std::exception& e) {
      const std::size_t started = workers_.size();
      stop_workers();
      throw Error(ErrorCode::resource, "cannot start the CPU target's worker threads (" + std::string(e.what()) + "); ask for fewer with --threads or NPUSIM_THREADS",
                  {.expected = std::to_string(n_) + " threads", .found = std::to_string(started + 1) + " could be started"});
    }
  }
  ~ThreadPool() { stop_workers(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }

  // Runs f(t) for t in [0, n) (n <= size()), t = 0 on the calling thread; returns when all ran.
  void run(int n, const std::function<void(int)>& f) {
    n = std::clamp(n, 1, n_);
    if (n == 1 || inside()) {  // nested regions run on the calling thread
      for (int t = 0; t < n; ++t) f(t);
      return;
    }
    std::lock_guard serial(run_m_);
    inside() = true;
    error_ = nullptr;
    job_ = &f;
    pending_.store(n - 1, std::memory_order_relaxed);
    publish(n);
    guarded(0);
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins)
      if (spins > 2000) std::this_thread::yield();
      else NPUSIM_CPU_PAUSE();
    inside() = false;
    if (error_) std::rethrow_exception(error_);  // the first exception any thread raised
  }

 private:
  void guarded(int t) {
    try {
      (*job_)(t);
    } catch (...) {
      std::lock_guard lock(error_m_);
      if (!error_) error_ = std::current_exception();
    }
  }
  // A new region for threads [0, n): its generation and its width go out in one atomic word, so a
  // worker decides from one load whether it takes part. (Read apart, a worker left out of one
  // region could see the next region's width under the old generation and run the next job
  // twice: pending_ then went negative, a hang, or reached zero early while a worker still ran
  // the job, a use after free. Found on 16 cores; tests/unit/cpu/test_thread_pool.cpp.)
  void publish(int n) {
    {
      std::lock_guard lock(m_);
      const std::uint64_t gen = (word_.load(std::memory_order_relaxed) >> width_bits) + 1;
      word_.store(gen << width_bits | static_cast<std::uint64_t>(n), std::memory_order_release);
    }
    cv_.notify_all();
  }
  void stop_workers() {
    stop_.store(true, std::memory_order_relaxed);
    publish(0);
    for (auto& w : workers_) w.join();
    workers_.clear();
  }
  static bool& inside() {
    thread_local bool in = false;
    return in;
  }
  void loop(int i) {
    inside() = true;
    std::uint64_t seen = 0;
    for (;;) {
      // Spin a little (the next kernel usually follows within microseconds), then sleep.
      std::uint64_t w = word_.load(std::memory_order_acquire);
      for (int spins = 0; w == seen && spins < 4000; ++spins) {
        NPUSIM_CPU_PAUSE();
        w = word_.load(std::memory_order_acquire);
      }
      if (w == seen) {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return word_.load(std::memory_order_acquire) != seen; });
        w = word_.load(std::memory_order_acquire);
      }
      seen = w;
      if (stop_.load(std::memory_order_relaxed)) return;
      // Taking part holds run() until this thread is done, so job_ stays this region's job.
      if (static_cast<std::uint64_t>(i) < (w & width_mask)) {
        guarded(i);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
  }

  int n_;
  std::vector<std::thread> workers_;
  std::mutex m_, run_m_, error_m_;
  std::exception_ptr error_;
  std::condition_variable cv_;
  static constexpr int width_bits = 20;  // threads per region < 2^20; the rest counts generations
  static constexpr std::uint64_t width_mask = (std::uint64_t{1} << width_bits) - 1;
  std::atomic<std::uint64_t> word_{0};  // generation << width_bits | threads taking part
  std::atomic<int> pending_{0};
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<bool> stop_{false};
};

// NPUSIM_THREADS when set: a whole number in [1, 4096] (as --threads), anything else an error
// rather than a silent "all cores". OMP_NUM_THREADS is OpenMP's (it may list nested levels,
// "8,2"): its leading number is taken when positive, else it is left to OpenMP.
inline std::optional<int> threads_from_env() {
  const char* e = std::getenv("NPUSIM_THREADS");
  if (!e) return std::nullopt;
  const std::string s = e;
  const bool digits = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
  const long n = digits ? std::strtol(s.c_str(), nullptr, 10) : 0;
  if (n < 1 || n > 4096)
    throw Error(ErrorCode::attr, "NPUSIM_THREADS must be a number of worker threads", {.expected = "an integer in [1, 4096]", .found = "'" + s + "'"});
  return static_cast<int>(n);
}

inline int configured_threads() {
  if (auto n = threads_from_env()) return *n;
  if (const char* e = std::getenv("OMP_NUM_THREADS"); e && std::atoi(e) > 0) return std::atoi(e);
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace detail {
inline std::unique_ptr<ThreadPool>& pool_slot() {
  static std::unique_ptr<ThreadPool> p;
  return p;
}
// The largest thread count kernels have been told about (they size per-thread scratch with it).
inline std::atomic<int>& promised_threads() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace detail

inline ThreadPool& pool() {
  auto& p = detail::pool_slot();
  if (!p) p = std::make_unique<ThreadPool>(configured_threads());
  return *p;
}
// Threads a parallel_for may use. Kernels bound now size their per-thread scratch with it.
inline int max_threads() {
  const int n = pool().size();
  for (int seen = detail::promised_threads().load(); seen < n && !detail::promised_threads().compare_exchange_weak(seen, n);) {}
  return n;
}
// Resizes the pool (the CLI's --threads) and tells OpenMP (weight synthesis) and Eigen (its GEMMs
// use OpenMP) the same count, so n is every thread the CPU target computes on. Fewer threads is
// always safe; more than kernels were already bound for is refused, since their per-thread scratch
// would be too small. The pool comes first: it says so cleanly when the system refuses threads.
void set_threads(int n);

// Calls f(thread, begin, end) over [0, n) in about-equal contiguous chunks, one per thread, when
// there are at least `min_chunk` items per thread; otherwise on the calling thread only.
template <class F>
void parallel_for_t(std::int64_t n, std::int64_t min_chunk, F&& f) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<std::int64_t>(pool().size(), std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk))));
  if (threads <= 1) {
    f(0, std::int64_t{0}, n);
    return;
  }
  pool().run(threads, [&](int t) {
    const std::int64_t b = n * t / threads, e = n * (t + 1) / threads;
    if (b < e) f(t, b, e);
  });
}

// The items of one parallel_items call: each thread's share [next, end) of [0, n), packed in one
// word so that its owner (taking from the front) and the others (taking from the back) claim
// items with one compare-and-swap and never both get the same one.
class ItemShares {
 public:
  // Shares in thread order of about equal total cost(i) >= 0: item i goes to the thread whose share
  // holds the middle of its cost (off by at most half an item's cost at either end); with no cost
  // at all, equal counts.
  template <class C>
  ItemShares(std::int64_t n, int threads, C&& cost) : threads_(threads) {
    if (n >= (std::int64_t{1} << 31)) throw Error(ErrorCode::resource, "cpu::parallel_items: too many work items", {.expected = "< 2^31", .found = std::to_string(n)});
    if (threads > static_cast<int>(inline_.size())) heap_ = std::make_unique<Share[]>(static_cast<std::size_t>(threads));
    double total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += cost(i);
    std::int64_t begin = 0;
    double before = 0;
    for (int t = 0; t < threads; ++t) {
      std::int64_t end = begin;
      if (!(total > 0)) end = n * (t + 1) / threads;
      else if (t == threads - 1) end = n;
      else
        for (double c; end < n && static_cast<std::int64_t>((before + (c = cost(end)) / 2) * threads / total) <= t; ++end) before += c;
      share(t).store(pack(begin, end), std::memory_order_relaxed);
      begin = end;
    }
  }
  // Thread t's items not yet taken, [next, end).
  std::pair<std::int64_t, std::int64_t> left(int t) {
    const std::uint64_t r = share(t).load(std::memory_order_relaxed);
    return {first(r), last(r)};
  }
  // The next items [b, e) for thread t: from its own share's front, up to the next multiple of
  // `run`; then one from the back of the share with the most items left. False when every item
  // is taken.
  bool claim(int t, std::int64_t& b, std::int64_t& e, std::int64_t run = 1) {
    for (std::uint64_t r = share(t).load(std::memory_order_relaxed); first(r) < last(r);)
      if (const std::int64_t take = std::min(run - first(r) % run, last(r) - first(r)); share(t).compare_exchange_weak(r, pack(first(r) + take, last(r)), std::memory_order_relaxed))
        return b = first(r), e = b + take, true;
    for (;;) {
      int victim = -1;
      std::int64_t most = 0;
      for (int v = 0; v < threads_; ++v)
        if (const std::uint64_t r = share(v).load(std::memory_order_relaxed); last(r) - first(r) > most) most = last(r) - first(r), victim = v;
      if (victim < 0) return false;
      for (std::uint64_t r = share(victim).load(std::memory_order_relaxed); first(r) < last(r);)
        if (share(victim).compare_exchange_weak(r, pack(first(r), last(r) - 1), std::memory_order_relaxed)) return e = last(r), b = e - 1, true;
    }
  }

 private:
  struct alignas(64) Share {
    std::atomic<std::uint64_t> range{0};
  };
  static std::uint64_t pack(std::int64_t next, std::int64_t end) { return static_cast<std::uint64_t>(next) << 32 | static_cast<std::uint64_t>(end); }
  static std::int64_t first(std::uint64_t r) { return static_cast<std::int64_t>(r >> 32); }
  static std::int64_t last(std::uint64_t r) { return static_cast<std::int64_t>(r & 0xffffffffu); }
  std::atomic<std::uint64_t>& share(int t) { return (heap_ ? heap_[static_cast<std::size_t>(t)] : inline_[static_cast<std::size_t>(t)]).range; }

  int threads_;
  std::array<Share, 16> inline_;
  std::unique_ptr<Share[]> heap_;
};

// What a thread of parallel_items takes its items with: claim(item) for one, claim(b, e, run) for
// [b, e): of its own share up to the next multiple of `run` (a row of items that share data), or
// one item taken from another share.
struct ItemClaim {
  ItemShares& shares;
  int thread;
  bool operator()(std::int64_t& item) {
    std::int64_t e;
    return shares.claim(thread, item, e);
  }
  bool operator()(std::int64_t& b, std::int64_t& e, std::int64_t run) { return shares.claim(thread, b, e, run); }
};

// Runs f(thread, claim) on each thread, where claim(item) hands out the items of [0, n), each to
// exactly one thread: first the thread's own share (contiguous, about equal total cost(i) >= 0, in
// order), then items taken from the back of the others' shares. So a thread that starts late or
// runs slow (another process on its core) does not hold the kernel up, while in the usual case
// every thread runs its own contiguous range. f keeps its per-thread state (what it has gathered)
// across the items it claims.
template <class C, class F>
void parallel_items(std::int64_t n, C&& cost, F&& f) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<std::int64_t>(pool().size(), n));
  ItemShares shares(n, threads, cost);
  pool().run(threads, [&](int t) {
    ItemClaim claim{shares, t};
    f(t, claim);
  });
}

template <class F>
void parallel_for(std::int64_t n, std::int64_t min_chunk, F&& f) {
  parallel_for_t(n, min_chunk, [&](int, std::int64_t b, std::int64_t e) { f(b, e); });
}

}  // namespace npusim::inline NPUSIM_ABI::cpu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/impl/parallel_inl.hpp"
#endif
