// The CLI in several processes (processes.hpp). MPI itself is behind runtime/mpi_link.hpp, built
// when CMake found MPI (NPUSIM_WITH_MPI).
#include "processes.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "npusim/core/error.hpp"
#ifdef NPUSIM_WITH_MPI
#include "npusim/runtime/mpi_link.hpp"
#endif

namespace npusim::cli {

namespace {
#ifdef NPUSIM_WITH_MPI
std::unique_ptr<runtime::MpiSession> session;
std::unique_ptr<runtime::MpiLink> link;
#endif
}  // namespace

bool launched_by_mpi() {
  // A launcher that started one process (srun of one task, mpirun -np 1) changes nothing.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n && std::atoi(n) > 1) return true;
  return false;
}

void start_processes([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv, const std::string& command) {
  if (!launched_by_mpi()) return;
  if (command != "run" && command != "generate")
    throw Error(ErrorCode::unsupported, "under mpirun, npusim runs `run` and `generate` (one pipeline stage per process)",
                {.expected = "run or generate", .found = command});
#ifndef NPUSIM_WITH_MPI
  throw Error(ErrorCode::unsupported, "started by mpirun, but this npusim was built without MPI (CMake did not find it: install "
                                      "openmpi-bin and libopenmpi-dev, then reconfigure)",
              {.expected = "a build with MPI (`npusim targets` says whether it has one)", .found = "a build without MPI"});
#else
  session = std::make_unique<runtime::MpiSession>(argc, argv);
  link = std::make_unique<runtime::MpiLink>();
  if (link->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    throw Error(ErrorCode::io, "cannot silence the standard output of rank " + std::to_string(link->rank()));
#endif
}

void stop_processes() {
#ifdef NPUSIM_WITH_MPI
  if (!link) return;
  if (link->rank() == 0) link->command(runtime::StageLink::stop_command);
  link->finish_sends();
  link.reset();
  session.reset();
#endif
}

[[noreturn]] void abort_processes(int rc) {
#ifdef NPUSIM_WITH_MPI
  if (link && link->ranks() > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    runtime::MpiSession::abort(rc);
  }
#endif
  std::exit(rc);
}

runtime::StageLink* stage_link() {
#ifdef NPUSIM_WITH_MPI
  return link.get();
#else
  return nullptr;
#endif
}

bool serving() { return stage_link() && stage_link()->rank() != 0; }

bool built_with_mpi() {
#ifdef NPUSIM_WITH_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace npusim::cli
