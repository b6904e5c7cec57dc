#include "collectives/schedule_allreduce.hpp"

#include <cstring>

#include "collectives/transports/mpi_transport.hpp"
#include "collectives/transports/shm_transport.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

// A transport that places the working buffers itself (shm: in shared windows, so that the ranks
// of a node reduce straight out of each other's) rather than in plain host memory.
template <class T>
concept AllocatesBuffers = requires(T transport, size_t bytes, void* buffer) {
  transport.allocate(bytes);
  transport.release(buffer);
};

template <class TransportT>
class ScheduleAllreduce final : public AllreduceImpl {
 public:
  template <class... TransportArgs>
  ScheduleAllreduce(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm,
                    TransportArgs... transport_args)
      : schedules_(algorithm, params, comm), transport_(comm, transport_args...) {}

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    const Schedule& schedule = schedules_.for_count(count);
    const double start = MPI_Wtime();
    // Schedules work in place on the receive buffer; the transport starts it from `send`.
    transport_.execute(schedule, send, recv, type, op);
    if (op == RedOp::avg) divide_cpu(recv, count, type, schedules_.nranks());
    return MPI_Wtime() - start;
  }

  void* allocate(size_t bytes) override {
    if constexpr (AllocatesBuffers<TransportT>) return transport_.allocate(bytes);
    else return AllreduceImpl::allocate(bytes);
  }
  void release(void* buffer) override {
    if constexpr (AllocatesBuffers<TransportT>) transport_.release(buffer);
    else AllreduceImpl::release(buffer);
  }

 private:
  ScheduleCache schedules_;
  TransportT transport_;
};

}  // namespace

ScheduleCache::ScheduleCache(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm)
    : algorithm_(algorithm), params_(params) {
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks_));
}

const Schedule& ScheduleCache::for_count(size_t count) {
  if (!schedule_ || schedule_->count != count) schedule_ = algorithm_.build(rank_, nranks_, count, params_);
  return *schedule_;
}

std::unique_ptr<AllreduceImpl> make_schedule_allreduce(const AllreduceAlgorithm& algorithm,
                                                       const AlgorithmParams& params, Transport transport,
                                                       MPI_Comm comm) {
  if (transport == Transport::nccl) return make_nccl_schedule_allreduce(algorithm, params, comm);
  // shm's nodes are hier's: --node-size splits the ranks that share memory into smaller ones.
  if (transport == Transport::shm)
    return std::make_unique<ScheduleAllreduce<ShmTransport>>(algorithm, params, comm, params.node_size);
  return std::make_unique<ScheduleAllreduce<MpiTransport>>(algorithm, params, comm, params.segment);
}

}  // namespace sb
