#pragma once
// The libraries' own allreduces, behind the harness's interface.
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/allreduce_impl.hpp"

namespace sb {

std::unique_ptr<AllreduceImpl> make_mpi_allreduce(MPI_Comm comm);

// ncclAllReduce on device buffers, one GPU per rank chosen by local rank. Defined only in CUDA
// builds; nccl_unavailable() says why it cannot run (not built, no GPU visible).
std::unique_ptr<AllreduceImpl> make_nccl_allreduce(MPI_Comm comm);
std::string nccl_unavailable(const WorldLayout& layout);

}  // namespace sb
