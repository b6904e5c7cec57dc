#pragma once
// gpu_on_every_rank(): whether every rank has a GPU of its own (CUDA builds), so that the device
// tests run where they can and skip, on every rank alike, where they cannot. Collective.
#include <mpi.h>

#include "collectives/allreduce_impl.hpp"
#include "common/mpi_env.hpp"

namespace sb {

inline bool gpu_on_every_rank() {
  const AllreduceImplInfo* nccl = find_allreduce_impl("nccl");
  int missing = nccl && nccl->unavailable(discover_world_layout()).empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&missing, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 0;
}

}  // namespace sb
