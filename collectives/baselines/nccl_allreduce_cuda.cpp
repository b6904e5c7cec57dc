// NCCL's own ncclAllReduce on device buffers: the baseline every device schedule is compared
// with. One GPU per rank, by local rank. NCCL's algorithm and protocol can be forced with
// NCCL_ALGO and NCCL_PROTO. Built only with CUDA (SB_HAVE_CUDA).
#include "collectives/baselines/baselines.hpp"

#include "common/cuda_check.hpp"
#include "common/mpi_env.hpp"

namespace sb {
namespace {

ncclDataType_t nccl_datatype(DataType type) {
  switch (type) {
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
    case DataType::int32: return ncclInt32;
    case DataType::int8: return ncclInt8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_redop(RedOp op) {
  switch (op) {
    case RedOp::sum: return ncclSum;
    case RedOp::prod: return ncclProd;
    case RedOp::max: return ncclMax;
    case RedOp::min: return ncclMin;
    case RedOp::avg: return ncclAvg;
  }
  return ncclSum;
}

class NcclAllreduce final : public AllreduceImpl {
 public:
  explicit NcclAllreduce(MPI_Comm comm) {
    int rank = 0, nranks = 1;
    SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
    MPI_Comm node = MPI_COMM_NULL;
    int local_rank = 0;
    SB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    SB_MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    SB_MPI_CHECK(MPI_Comm_free(&node));

    int devices = 0;
    SB_CUDA_CHECK(cudaGetDeviceCount(&devices));
    device_ = local_rank % devices;  // nccl_unavailable() has made sure there are enough
    SB_CUDA_CHECK(cudaSetDevice(device_));
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SB_CUDA_CHECK(cudaEventCreate(&start_));
    SB_CUDA_CHECK(cudaEventCreate(&stop_));

    ncclUniqueId id{};
    if (rank == 0) SB_NCCL_CHECK(ncclGetUniqueId(&id));
    SB_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    SB_NCCL_CHECK(ncclCommInitRank(&comm_, nranks, id, rank));
  }

  ~NcclAllreduce() override {
    ncclCommDestroy(comm_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  Memory memory() const override { return Memory::device; }

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    SB_CUDA_CHECK(cudaEventRecord(start_, stream_));
    SB_NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_datatype(type), nccl_redop(op), comm_,
                                stream_));
    SB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    SB_CUDA_CHECK(cudaEventSynchronize(stop_));
    float milliseconds = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, stop_));
    return milliseconds * 1e-3;
  }

  void* allocate(size_t bytes) override {
    void* buffer = nullptr;
    SB_CUDA_CHECK(cudaMalloc(&buffer, bytes ? bytes : 1));
    return buffer;
  }
  void release(void* buffer) override { cudaFree(buffer); }
  void upload(void* buffer, const void* host, size_t bytes) override {
    SB_CUDA_CHECK(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* host, const void* buffer, size_t bytes) override {
    SB_CUDA_CHECK(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost));
  }

  std::string device_name() const override {
    cudaDeviceProp prop{};
    SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    return "cuda:" + std::to_string(device_) + " " + prop.name;
  }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::string nccl_unavailable(const WorldLayout& layout) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return "no GPU is visible to this process (ncclAllReduce needs one GPU per rank)";
  // NCCL refuses two ranks of one communicator on the same GPU.
  if (layout.local_size > devices)
    return std::to_string(layout.local_size) + " ranks on this node but " +
           std::to_string(devices) + " GPU(s): NCCL needs one GPU per rank";
  return {};
}

std::unique_ptr<AllreduceImpl> make_nccl_allreduce(MPI_Comm comm) {
  return std::make_unique<NcclAllreduce>(comm);
}

}  // namespace sb
