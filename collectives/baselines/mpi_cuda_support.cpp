// Whether the MPI library takes device pointers (is "CUDA-aware"). Handing device buffers to one
// that does not is a crash, so the answer must be yes before the mpi-cuda baseline runs: Open MPI
// says so at build and run time (its mpi-ext.h extension); other MPIs (MPICH, MVAPICH2-GDR, Cray
// MPICH with MPICH_GPU_SUPPORT_ENABLED=1) have no common query, so the user vouches for them.
#include "collectives/baselines/baselines.hpp"

#include <cstdlib>
#include <string>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace sb {

std::string mpi_not_cuda_aware() {
  if (const char* vouched = std::getenv("SB_MPI_CUDA_AWARE")) {
    if (std::string(vouched) == "1") return {};
    return "SB_MPI_CUDA_AWARE=" + std::string(vouched) + " (1 says this MPI takes device buffers)";
  }
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (MPIX_Query_cuda_support() == 1) return {};
  return "this Open MPI was built with CUDA support but has it off at run time (MPIX_Query_cuda_support)";
#elif defined(OMPI_HAVE_MPI_EXT_CUDA)
  return "this Open MPI was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT is 0)";
#else
  return "this MPI has no query for CUDA support; set SB_MPI_CUDA_AWARE=1 if it takes device buffers";
#endif
}

std::string mpi_cuda_refuses_type(DataType type) {
  if (type != DataType::float16 && type != DataType::bfloat16) return {};
  return "MPI has no " + std::string(name_of(type)) +
         " type: its reduction is a user-defined op that runs on the host, which a CUDA-aware MPI need not allow on "
         "device buffers";
}

}  // namespace sb
