// The CLI in several processes (docs/scale-out.md): under mpirun, `run` and `generate` put one
// pipeline stage in each process (--stages N with mpirun -np N). Rank 0 does what one process
// does (reads prompts and inputs, samples, prints); the other ranks compile the same program, bind
// their own stage's weights, and serve rank 0 until it says stop. Without mpirun nothing changes.
#pragma once

#include <string>

#include "npusim/runtime/stage_link.hpp"

namespace npusim::cli {

// True when an MPI launcher started this process among several (Open MPI's OMPI_COMM_WORLD_SIZE or
// MPICH's PMI_SIZE above 1); one process under a launcher runs as without it.
bool launched_by_mpi();
// Under mpirun: starts MPI (an error naming the build when it has no MPI) and silences stdout on
// ranks other than 0. `command` is the subcommand: only run and generate run in several processes.
void start_processes(int& argc, char**& argv, const std::string& command);
// Rank 0: tells the serving ranks to stop. Every rank: ends MPI.
void stop_processes();
// A failure on any rank ends them all (the others would wait for it).
[[noreturn]] void abort_processes(int rc);
// The link between the stages' processes; null in one process.
runtime::StageLink* stage_link();
// A rank other than 0: it serves its stage (and prints nothing).
bool serving();
// Whether this build has MPI (`npusim targets` says).
bool built_with_mpi();

}  // namespace npusim::cli
