// StageLink over MPI (runtime/stage_link.hpp): tensors as a small header (dtype, rank, dims) and
// the bytes, sent with MPI_Isend and received with MPI_Recv on MPI_COMM_WORLD; the command is an
// MPI_Bcast from rank 0. The only npusim header that includes <mpi.h>: programs that use it link
// npusim::mpi (CMake finds MPI; NPUSIM_WITH_MPI is then defined), nothing else sees MPI.
//
// MpiSession calls MPI_Init_thread (MPI_THREAD_FUNNELED: only the main thread calls MPI; the
// target's worker threads never do) and MPI_Finalize.
#pragma once

#include <mpi.h>

#include <climits>
#include <deque>
#include <string>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/runtime/stage_link.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

namespace mpi_detail {
inline void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(ErrorCode::runtime, std::string("MPI: ") + what + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
}
// Sends of more than INT_MAX bytes go in pieces of 1 GiB (MPI counts are int).
inline constexpr std::size_t piece = std::size_t{1} << 30;
}  // namespace mpi_detail

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv) {
    int provided = 0;
    mpi_detail::check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // A failure on one rank: end every rank (the others wait in a receive otherwise).
  [[noreturn]] static void abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
  }
};

class MpiLink final : public StageLink {
 public:
  MpiLink() {
    mpi_detail::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    mpi_detail::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks_), "MPI_Comm_size");
  }
  ~MpiLink() override {
    try {
      finish_sends();
    } catch (...) {
    }
  }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  void send(int to, int tag, const Tensor& t) override {
    Pending& p = pending_.emplace_back();
    p.tensor = t;
    p.head.push_back(t.defined() ? static_cast<std::int64_t>(t.dtype()) : -1);
    p.head.push_back(static_cast<std::int64_t>(t.shape().size()));
    for (auto d : t.shape()) p.head.push_back(d);
    p.requests.emplace_back();
    mpi_detail::check(MPI_Isend(p.head.data(), static_cast<int>(p.head.size()), MPI_INT64_T, to, 2 * tag, MPI_COMM_WORLD, &p.requests.back()),
                      "MPI_Isend (header)");
    if (!t.defined()) return;
    const auto* bytes = static_cast<const char*>(t.raw());
    for (std::size_t off = 0, n = t.nbytes(); off < n; off += mpi_detail::piece) {
      p.requests.emplace_back();
      mpi_detail::check(MPI_Isend(bytes + off, static_cast<int>(std::min(mpi_detail::piece, n - off)), MPI_BYTE, to, 2 * tag + 1, MPI_COMM_WORLD,
                                  &p.requests.back()),
                        "MPI_Isend");
    }
    bytes_sent += t.nbytes();
  }

  Tensor receive(int from, int tag) override {
    std::int64_t head[2 + 16];
    MPI_Status st;
    mpi_detail::check(MPI_Recv(head, 18, MPI_INT64_T, from, 2 * tag, MPI_COMM_WORLD, &st), "MPI_Recv (header)");
    int count = 0;
    MPI_Get_count(&st, MPI_INT64_T, &count);
    if (count < 2 || head[1] < 0 || head[1] > 16 || count != 2 + head[1])
      throw Error(ErrorCode::runtime, "MPI: malformed tensor header from rank " + std::to_string(from), {.expected = "2 + rank values", .found = std::to_string(count)});
    if (head[0] < 0) return Tensor();
    if (head[0] >= static_cast<std::int64_t>(std::size(all_dtypes)))
      throw Error(ErrorCode::runtime, "MPI: tensor header names no dtype", {.found = std::to_string(head[0])});
    Shape shape(head + 2, head + 2 + head[1]);
    Tensor t = Tensor::empty(static_cast<DType>(head[0]), shape);
    auto* bytes = static_cast<char*>(t.raw());
    for (std::size_t off = 0, n = t.nbytes(); off < n; off += mpi_detail::piece)
      mpi_detail::check(MPI_Recv(bytes + off, static_cast<int>(std::min(mpi_detail::piece, n - off)), MPI_BYTE, from, 2 * tag + 1, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE),
                        "MPI_Recv");
    bytes_received += t.nbytes();
    return t;
  }

  void finish_sends() override {
    for (Pending& p : pending_)
      mpi_detail::check(MPI_Waitall(static_cast<int>(p.requests.size()), p.requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    pending_.clear();
  }

  int command(int cmd) override {
    mpi_detail::check(MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return cmd;
  }

 private:
  struct Pending {
    Tensor tensor;  // kept alive until the send completes
    std::vector<std::int64_t> head;
    std::vector<MPI_Request> requests;
  };
  int rank_ = 0, ranks_ = 1;
  std::deque<Pending> pending_;  // stable addresses: MPI holds pointers into head
};

}  // namespace npusim::inline NPUSIM_ABI::runtime
