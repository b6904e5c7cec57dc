#pragma once
// Executes schedules with the ranks of a node reading each other's memory directly: input and
// working buffers live in MPI-3 shared windows (MPI_Win_allocate_shared), so a receive is one
// copy or one reduction straight out of the peer's buffer instead of a send and a receive. Steps
// whose peer is on another node go over MPI point-to-point, as in the mpi transport.
//
// Ranks synchronise through two counters each, in a shared window of flags, instead of barriers:
// `ready` (the rank's buffers are as at the start of round r) and `read_done` (it has finished
// reading its peers in round r). A round is:
//   1. fill what the plan says from the input (shm_plan.hpp), then ready = r;
//   2. post the off-node receives and sends;
//   3. for each on-node receive, wait until the peer is ready for r, then copy or reduce its chunk
//      straight into place, or into staging when this rank also sends that range this round;
//   4. wait for the MPI requests, then read_done = r + 1;
//   5. wait until every peer that reads this rank's working buffer this round has read_done r + 1,
//      then apply what was staged.
// Nobody waits for more than the peers it exchanges with, and no rank returns while a peer may
// still read its buffers. Counters carry the call's number in their high half, so no reset is needed.
// Small allreduces send through per-rank outboxes (shm_plan.hpp) and skip the waits of step 5.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "collectives/schedule.hpp"
#include "collectives/transports/shm_plan.hpp"
#include "kernels/dtype.hpp"

namespace sb {

class ShmTransport {
 public:
  // Collective over `comm`. The ranks that share memory form a node; node_size > 0 splits them
  // further into nodes of node_size consecutive ranks (which tests the off-node path on one host).
  ShmTransport(MPI_Comm comm, int node_size);
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Collective over the communicator: a buffer in a shared window, which execute() can use as
  // its input and working buffers.
  void* allocate(size_t bytes);
  void release(void* buffer);

  // Runs `schedule` with `input` as this rank's contribution (== work: in place) and the result
  // in `work`, which must come from allocate(). Collective: every rank calls it with the same
  // kind of call (in place or not) and buffers allocated in the same order.
  void execute(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op);

 private:
  struct Window {
    MPI_Win win = MPI_WIN_NULL;
    unsigned char* mine = nullptr;
    std::vector<unsigned char*> peers;  // by rank; null for ranks on other nodes
  };
  // One rank's counters, each on its own cache line.
  struct alignas(64) Flags {
    uint64_t ready;
    char pad_[56];
    uint64_t read_done;
  };

  // Bytes of each half of a rank's outbox: small allreduces, whose on-node sends fit, use it.
  static constexpr size_t kOutboxBytes = 32 << 10;

  const Window* window_of(const void* buffer) const;
  Window map_window(size_t bytes);
  // The plan for this schedule, worked out (collectively over the node) on first use.
  const ShmPlan& plan_for(const Schedule& schedule, bool in_place, size_t element);

  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::vector<int> node_rank_of_;   // rank -> rank in node_, or -1 when on another node
  std::vector<int> rank_of_node_rank_;
  std::vector<Window> windows_;
  Window outbox_;  // two halves of kOutboxBytes, used by alternate calls
  MPI_Win flags_win_ = MPI_WIN_NULL;
  Flags* my_flags_ = nullptr;
  std::vector<Flags*> peer_flags_;  // by rank; null for ranks on other nodes
  uint64_t calls_ = 0;
  std::map<std::tuple<size_t, bool, size_t>, ShmPlan> plans_;  // by (count, in place, element size)
  std::vector<unsigned char> staging_;
  std::vector<unsigned char*> staged_at_;  // per receive of the round: its staging slot, or null
  std::vector<MPI_Request> requests_;
};

}  // namespace sb
