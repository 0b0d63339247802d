// The CPU target's thread pool: every region runs each of its threads exactly once, whatever the
// width of the region before it. A worker left out of a narrow region used to read the next
// region's width under the old generation and run the next job twice (a hang, or run() returning
// while a worker still ran the job: a use after free). It showed on a 16-core machine, as a hang
// or segfault of ResNet-18 about one run in 20; here eight threads share whatever cores there are.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include <gtest/gtest.h>

#include "npusim/target/cpu/parallel.hpp"

namespace {

// In a child process, so that a hang is a failure (SIGALRM) rather than a stuck test run.
// Exit 0: every region ran right; 1: a thread ran the wrong number of times.
int run_regions(int threads, int regions) {
  npusim::cpu::ThreadPool pool(threads);
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(threads));
  for (int r = 0; r < regions; ++r) {
    // wide, then narrow regions of every width
    const int n = r % 3 == 0 ? threads : 1 + r % threads;
    for (auto& h : hits) h.store(0);
    pool.run(n, [&](int t) { hits[static_cast<std::size_t>(t)].fetch_add(1); });
    for (int t = 0; t < threads; ++t)
      if (hits[static_cast<std::size_t>(t)].load() != (t < n ? 1 : 0)) {
        std::fprintf(stderr, "region %d of width %d: thread %d ran %d times\n", r, n, t, hits[static_cast<std::size_t>(t)].load());
        return 1;
      }
  }
  return 0;
}

}  // namespace

TEST(ThreadPool, EveryRegionRunsEachOfItsThreadsOnceWhateverTheWidthBefore) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);
    ::_exit(run_regions(8, 15000));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "the child was killed by signal " << WTERMSIG(status)
                                    << (WTERMSIG(status) == SIGALRM ? " (hung: a region never finished)" : "");
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a thread ran a region the wrong number of times (stderr says which)";
}
