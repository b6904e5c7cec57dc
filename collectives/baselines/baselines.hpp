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

// MPI_Allreduce on device buffers, for a CUDA-aware MPI (one GPU per rank by local rank, as
// nccl). Defined only in CUDA builds; mpi_cuda_unavailable() says why it cannot run (not built,
// no GPU, an MPI that is not CUDA-aware: mpi_not_cuda_aware()). MPI has no 16-bit float types:
// their reductions are user-defined ops that run on the host, which a CUDA-aware MPI need not
// allow on device buffers, so float16 and bfloat16 are refused (mpi_cuda_refuses_type).
std::unique_ptr<AllreduceImpl> make_mpi_cuda_allreduce(MPI_Comm comm);
std::string mpi_cuda_unavailable(const WorldLayout& layout);
std::string mpi_cuda_refuses_type(DataType type);
// Empty when this MPI takes device pointers: Open MPI's MPIX_Query_cuda_support, or
// SB_MPI_CUDA_AWARE=1 in the environment for an MPI that has no query; else why not.
std::string mpi_not_cuda_aware();

}  // namespace sb
