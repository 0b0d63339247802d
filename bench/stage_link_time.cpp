// Transfer costs of pipeline stages (docs/scale-out.md): what a stage boundary costs per tensor.
//   host:  a copy of the tensor in host memory (what crossing partitions on one host costs at
//          least, and the host leg of device -> host -> device with --devices);
//   mpi:   runtime::MpiLink, the CLI's link between stages in two processes: a ping-pong of the
//          tensor between rank 0 and rank 1, half the round trip (header + bytes, MPI_Isend and
//          MPI_Recv as ProgramRunner sends them);
//   allreduce: MPI_Allreduce (sum, float32) of the tensor over the two ranks: what tensor
//          parallelism would pay twice per transformer layer (docs/scale-out.md); npusim has no
//          tensor parallelism, this is its price on this link.
// Sizes from 512 B (a tiny model's hidden state) to 32 MiB; median of 21 after 3 warm-ups.
// Built with MPI (bench/CMakeLists.txt, target stage_link_time); run:
//   mpirun -np 2 --oversubscribe build/bench/stage_link_time
// Prints one line per size: bytes, host copy us and GB/s, MPI one-way us and GB/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "npusim/runtime/mpi_link.hpp"

using namespace npusim;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  runtime::MpiSession session(argc, argv);
  runtime::MpiLink link;
  if (link.ranks() != 2) {
    if (link.rank() == 0) std::fprintf(stderr, "stage_link_time: run with mpirun -np 2 (found %d ranks)\n", link.ranks());
    return 2;
  }
  using clock = std::chrono::steady_clock;
  constexpr int warm = 3, reps = 21;
  if (link.rank() == 0)
    std::printf("%12s %12s %10s %12s %10s %14s\n", "bytes", "host_us", "host_GB/s", "mpi_us", "mpi_GB/s", "allreduce_us");
  for (std::int64_t n = 128; n <= (std::int64_t{16} << 20); n *= 4) {  // f32 elements: 512 B .. 64 MiB
    Tensor t = Tensor::zeros(DType::f32, {n});
    std::vector<double> host, mpi;
    if (link.rank() == 0) {
      Tensor dst = Tensor::empty(DType::f32, {n});
      for (int i = 0; i < warm + reps; ++i) {
        const auto t0 = clock::now();
        std::memcpy(dst.raw(), t.raw(), t.nbytes());
        const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
        if (i >= warm) host.push_back(us);
      }
    }
    for (int i = 0; i < warm + reps; ++i) {
      const auto t0 = clock::now();
      if (link.rank() == 0) {
        link.send(1, 0, t);
        link.finish_sends();
        t = link.receive(1, 0);
      } else {
        t = link.receive(0, 0);
        link.send(0, 0, t);
        link.finish_sends();
      }
      const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / 2;
      if (i >= warm) mpi.push_back(us);
    }
    std::vector<double> reduce;
    Tensor sum = Tensor::empty(DType::f32, {n});
    for (int i = 0; i < warm + reps; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = clock::now();
      runtime::mpi_detail::check(MPI_Allreduce(t.raw(), sum.raw(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
      if (i >= warm) reduce.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
    }
    if (link.rank() == 0) {
      const double bytes = static_cast<double>(t.nbytes()), h = median(host), m = median(mpi);
      std::printf("%12.0f %12.2f %10.2f %12.2f %10.2f %14.2f\n", bytes, h, bytes / h / 1e3, m, bytes / m / 1e3, median(reduce));
    }
  }
  return 0;
}
