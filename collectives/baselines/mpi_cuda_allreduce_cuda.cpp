// The MPI library's own MPI_Allreduce on device buffers, for a CUDA-aware MPI: what an OSU user
// measures with osu_allreduce -d cuda, beside ncclAllReduce on the same GPUs. The library moves
// (and, in Open MPI's coll/cuda, stages through the host) whatever it likes; the time is the
// host's clock around the call, which returns with the result in device memory. No NCCL here.
#include "collectives/baselines/baselines.hpp"

#include "collectives/device_allreduce.hpp"
#include "collectives/local_gpu.hpp"
#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

class MpiCudaAllreduce final : public GpuBuffersAllreduce {
 public:
  explicit MpiCudaAllreduce(MPI_Comm comm) : gpu_(comm) {
    SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
  }
  ~MpiCudaAllreduce() override { MPI_Comm_free(&comm_); }

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    const double start = MPI_Wtime();
    SB_MPI_CHECK(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                               mpi_datatype(type), mpi_op(type, op), comm_));
    // As for host buffers, the average is the sum divided here, and timed with it.
    if (op == RedOp::avg) {
      divide_cuda(recv, count, type, nranks_, nullptr);
      SB_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    }
    return MPI_Wtime() - start;
  }

 private:
  const LocalGpu& gpu() const override { return gpu_; }

  LocalGpu gpu_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int nranks_ = 1;
};

}  // namespace

std::string mpi_cuda_unavailable(const WorldLayout&) {
  int devices = 0;
  const bool no_gpu = cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0;
  const std::string not_aware = mpi_not_cuda_aware();
  if (no_gpu) return "no GPU is visible to this process" + (not_aware.empty() ? "" : "; and " + not_aware);
  return not_aware;
}

std::unique_ptr<AllreduceImpl> make_mpi_cuda_allreduce(MPI_Comm comm) {
  return std::make_unique<MpiCudaAllreduce>(comm);
}

}  // namespace sb
