#pragma once
// Executes schedules with the ranks of a node reading each other's memory directly: working
// buffers live in MPI-3 shared windows (MPI_Win_allocate_shared), so a receive is one copy (or
// one reduction) straight out of the peer's buffer instead of a send and a receive. Steps whose
// peer is on another node go over MPI point-to-point, as in the mpi transport.
//
// A round is: node barrier (every peer's chunk is as of the start of the round); posts of the
// inter-node receives and sends; every intra-node receive read from the peer's window, straight
// into place when that range is not one this rank sends in the round, else into staging; node
// barrier (nobody reads any more); staged and inter-node results applied; local steps.
#include <mpi.h>

#include <vector>

#include "collectives/schedule.hpp"
#include "kernels/dtype.hpp"

namespace sb {

class ShmTransport {
 public:
  explicit ShmTransport(MPI_Comm comm);
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Collective over the communicator: a buffer in a shared window, which execute() can use as
  // its working buffer.
  void* allocate(size_t bytes);
  void release(void* buffer);

  // Runs `schedule` on `work`, which must come from allocate().
  void execute(const Schedule& schedule, void* work, DataType type, RedOp op);

 private:
  struct Window {
    MPI_Win win = MPI_WIN_NULL;
    unsigned char* mine = nullptr;
    std::vector<unsigned char*> peers;  // by world rank; null for ranks on other nodes
  };
  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  std::vector<int> node_rank_of_;  // world rank -> rank in node_, or -1 when on another node
  std::vector<Window> windows_;
  std::vector<unsigned char> staging_;
  std::vector<MPI_Request> requests_;
};

}  // namespace sb
