// What a pipeline of stages in several processes needs from the transport (docs/scale-out.md): one
// process per stage (rank r runs stage r), tensors sent point to point, and a command from rank 0
// that says which program runs next. runtime/mpi_link.hpp implements it with MPI; the runtime never
// sees MPI. Rank 0 is the caller: it owns the program's inputs and outputs (prompts, sampling,
// printing); the other ranks serve (serve_stages) until rank 0 says stop.
#pragma once

#include <cstdint>

#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

class StageLink {
 public:
  virtual ~StageLink() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Starts sending `t` (host memory, contiguous; an undefined tensor says "no new value") to rank
  // `to` under `tag`; the link keeps `t` alive until finish_sends(). Messages of one tag between
  // two ranks arrive in the order they were sent.
  virtual void send(int to, int tag, const Tensor& t) = 0;
  // Receives what rank `from` sent under `tag` (an undefined tensor when it sent one).
  virtual Tensor receive(int from, int tag) = 0;
  // Waits until every send started has completed.
  virtual void finish_sends() = 0;
  // Rank 0 announces the next command (a program id >= 0, or stop_command); the other ranks
  // receive it. Every rank calls it once per command.
  virtual int command(int cmd) = 0;
  static constexpr int stop_command = -1;
  // Bytes sent and received by this rank so far (what `generate` reports per token).
  std::uint64_t bytes_sent = 0, bytes_received = 0;
};

}  // namespace npusim::inline NPUSIM_ABI::runtime
