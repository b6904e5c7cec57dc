#pragma once
// Executes schedules on host buffers with MPI point-to-point. Per round, every receive and send
// is posted at once (MPI_Irecv/MPI_Isend), cut into segments (--segment elements); each
// received piece is reduced as soon as it lands (MPI_Waitany), while the later pieces are still
// in flight, out of a staging slot small enough to stay in cache. Then the
// local steps, following the round semantics of collectives/schedule.hpp.
#include <mpi.h>

#include <vector>

#include "collectives/schedule.hpp"
#include "kernels/dtype.hpp"

namespace sb {

class MpiTransport {
 public:
  // Messages are cut into segments of `segment` elements (both sides cut the same way, by count).
  MpiTransport(MPI_Comm comm, size_t segment);
  ~MpiTransport();
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  // Runs `schedule` with `input` as this rank's contribution (== work: in place) and the result
  // in `work`; both host buffers of schedule.count elements of `type`.
  void execute(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op);

 private:
  struct PendingReduce {
    unsigned char* into;
    const unsigned char* staged;
    size_t count;      // 0 for a receive by copy, which lands in place
    bool after_sends;  // the range is also sent this round: reduce once the sends complete
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  size_t segment_ = 1;
  std::vector<unsigned char> scratch_, staging_;
  std::vector<MPI_Request> receives_, sends_;
  std::vector<PendingReduce> reduces_;  // by receive request
};

}  // namespace sb
