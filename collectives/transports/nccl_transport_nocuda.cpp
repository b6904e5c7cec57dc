// CPU-only builds: the nccl transport does not exist. sb-allreduce refuses --transport nccl
// before it gets here (nccl_unavailable), so reaching this is a programming error.
#include "collectives/schedule_allreduce.hpp"
#include "common/check.hpp"

namespace sb {

std::unique_ptr<AllreduceImpl> make_nccl_schedule_allreduce(const AllreduceAlgorithm&, const AlgorithmParams&,
                                                            MPI_Comm) {
  die(__FILE__, __LINE__, "the nccl transport needs a CUDA build (make CUDA=1)");
}

}  // namespace sb
