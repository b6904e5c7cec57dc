#include "collectives/schedule_allreduce.hpp"

#include <cstring>
#include <optional>

#include "collectives/transports/mpi_transport.hpp"
#include "collectives/transports/shm_transport.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

class ScheduleAllreduceMpi final : public AllreduceImpl {
 public:
  ScheduleAllreduceMpi(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm)
      : algorithm_(algorithm), params_(params), transport_(comm) {
    SB_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(comm, &nranks_));
  }

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    if (!schedule_ || schedule_->count != count) schedule_ = algorithm_.build(rank_, nranks_, count, params_);
    const double start = MPI_Wtime();
    // Schedules work in place on the receive buffer, which starts as this rank's input.
    if (send != recv) std::memcpy(recv, send, count * size_of(type));
    transport_.execute(*schedule_, recv, type, op);
    if (op == RedOp::avg) divide_cpu(recv, count, type, nranks_);
    return MPI_Wtime() - start;
  }

 private:
  const AllreduceAlgorithm& algorithm_;
  AlgorithmParams params_;
  MpiTransport transport_;
  int rank_ = 0, nranks_ = 1;
  std::optional<Schedule> schedule_;
};

// The same on the shm transport: its buffers are in shared windows, so that the ranks of a node
// reduce straight out of each other's.
class ScheduleAllreduceShm final : public AllreduceImpl {
 public:
  ScheduleAllreduceShm(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm)
      : algorithm_(algorithm), params_(params), transport_(comm) {
    SB_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(comm, &nranks_));
  }

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    if (!schedule_ || schedule_->count != count) schedule_ = algorithm_.build(rank_, nranks_, count, params_);
    const double start = MPI_Wtime();
    if (send != recv) std::memcpy(recv, send, count * size_of(type));
    transport_.execute(*schedule_, recv, type, op);
    if (op == RedOp::avg) divide_cpu(recv, count, type, nranks_);
    return MPI_Wtime() - start;
  }
  void* allocate(size_t bytes) override { return transport_.allocate(bytes); }
  void release(void* buffer) override { transport_.release(buffer); }

 private:
  const AllreduceAlgorithm& algorithm_;
  AlgorithmParams params_;
  ShmTransport transport_;
  int rank_ = 0, nranks_ = 1;
  std::optional<Schedule> schedule_;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_schedule_allreduce(const AllreduceAlgorithm& algorithm,
                                                       const AlgorithmParams& params, Transport transport,
                                                       MPI_Comm comm) {
  if (transport == Transport::shm) return std::make_unique<ScheduleAllreduceShm>(algorithm, params, comm);
  return make_schedule_allreduce_mpi(algorithm, params, comm);
}

std::unique_ptr<AllreduceImpl> make_schedule_allreduce_mpi(const AllreduceAlgorithm& algorithm,
                                                           const AlgorithmParams& params, MPI_Comm comm) {
  return std::make_unique<ScheduleAllreduceMpi>(algorithm, params, comm);
}

}  // namespace sb
