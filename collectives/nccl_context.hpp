#pragma once
// What every device implementation on NCCL needs (CUDA builds only): this rank's GPU, with its
// buffers and copies (LocalGpu); a stream; an NCCL communicator over the MPI one; and the NCCL
// names of the harness's types and ops. Shared by the ncclAllReduce baseline and the nccl
// transport, so that both measure on the same footing.
#include <mpi.h>

#include <string>

#include "collectives/local_gpu.hpp"
#include "common/cuda_check.hpp"
#include "kernels/dtype.hpp"

namespace sb {

class NcclContext : public LocalGpu {
 public:
  // Collective over `comm`: one GPU per rank on each node (nccl_unavailable() checks there are enough).
  explicit NcclContext(MPI_Comm comm);
  ~NcclContext();
  NcclContext(const NcclContext&) = delete;
  NcclContext& operator=(const NcclContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  ncclComm_t comm() const { return comm_; }

  // Seconds that the work `enqueue` puts on the stream takes, by CUDA events around it;
  // returns once that work is done.
  template <class Enqueue>
  double time(Enqueue&& enqueue) {
    SB_CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue();
    SB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    SB_CUDA_CHECK(cudaEventSynchronize(stop_));
    float milliseconds = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, stop_));
    return milliseconds * 1e-3;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

ncclDataType_t nccl_datatype(DataType type);
ncclRedOp_t nccl_redop(RedOp op);

}  // namespace sb
