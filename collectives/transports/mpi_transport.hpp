#pragma once
// Executes schedules on host buffers with MPI point-to-point: per round, every receive and send
// posted at once (MPI_Irecv/MPI_Isend), one MPI_Waitall, then the reductions of what arrived,
// then the local steps, following the round semantics of collectives/schedule.hpp.
#include <mpi.h>

#include <vector>

#include "collectives/schedule.hpp"
#include "kernels/dtype.hpp"

namespace sb {

class MpiTransport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport();
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  // Runs `schedule` on `work`, a host buffer of schedule.count elements of `type`.
  void execute(const Schedule& schedule, void* work, DataType type, RedOp op);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<unsigned char> scratch_, staging_;
  std::vector<MPI_Request> requests_;
};

}  // namespace sb
