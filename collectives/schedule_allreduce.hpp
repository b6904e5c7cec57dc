#pragma once
// An allreduce algorithm of collectives/algorithms run on a transport, as a harness
// implementation: the schedule is built once per count and reused.
#include <memory>
#include <optional>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/allreduce_impl.hpp"

namespace sb {

// This rank's schedule of an algorithm, built on first use of each count and kept until the
// count changes (the harness runs every count many times in a row).
class ScheduleCache {
 public:
  ScheduleCache(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm);
  const Schedule& for_count(size_t count);
  int nranks() const { return nranks_; }

 private:
  const AllreduceAlgorithm& algorithm_;
  AlgorithmParams params_;
  int rank_ = 0, nranks_ = 1;
  std::optional<Schedule> schedule_;
};

// The algorithm parameters an ImplConfig asks for (segment in elements of its type).
AlgorithmParams algorithm_params(const ImplConfig& config);

// The schedule on device buffers over the nccl transport (CUDA builds; see nccl_transport.hpp).
std::unique_ptr<AllreduceImpl> make_nccl_schedule_allreduce(const AllreduceAlgorithm& algorithm,
                                                            const AlgorithmParams& params, MPI_Comm comm);

// The schedule on the transport asked for.
std::unique_ptr<AllreduceImpl> make_schedule_allreduce(const AllreduceAlgorithm& algorithm,
                                                       const AlgorithmParams& params, Transport transport,
                                                       MPI_Comm comm);

}  // namespace sb
