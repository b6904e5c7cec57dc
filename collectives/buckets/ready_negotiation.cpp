#include "collectives/buckets/ready_negotiation.hpp"

#include "common/check.hpp"

namespace sb {

double ReadyNegotiation::agree(MPI_Comm comm, int ranks) {
  if (ranks == 1) {
    everywhere_ = mine_;
    return 0;
  }
  const double start = MPI_Wtime();
  SB_MPI_CHECK(MPI_Allreduce(mine_.data(), everywhere_.data(), static_cast<int>(mine_.size()), MPI_UINT64_T, MPI_BAND,
                             comm));
  return MPI_Wtime() - start;
}

}  // namespace sb
