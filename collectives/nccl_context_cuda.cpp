#include "collectives/nccl_context.hpp"

namespace sb {

NcclContext::NcclContext(MPI_Comm comm) {
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
  device_ = local_rank % devices;
  SB_CUDA_CHECK(cudaSetDevice(device_));
  SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SB_CUDA_CHECK(cudaEventCreate(&start_));
  SB_CUDA_CHECK(cudaEventCreate(&stop_));

  ncclUniqueId id{};
  if (rank == 0) SB_NCCL_CHECK(ncclGetUniqueId(&id));
  SB_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
  SB_NCCL_CHECK(ncclCommInitRank(&comm_, nranks, id, rank));
}

NcclContext::~NcclContext() {
  ncclCommDestroy(comm_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

void* NcclContext::allocate(size_t bytes) const {
  void* buffer = nullptr;
  SB_CUDA_CHECK(cudaMalloc(&buffer, bytes ? bytes : 1));
  return buffer;
}

void NcclContext::release(void* buffer) const { cudaFree(buffer); }

void NcclContext::upload(void* buffer, const void* host, size_t bytes) const {
  SB_CUDA_CHECK(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice));
}

void NcclContext::download(void* host, const void* buffer, size_t bytes) const {
  SB_CUDA_CHECK(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost));
}

std::string NcclContext::device_name() const {
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  return "cuda:" + std::to_string(device_) + " " + prop.name;
}

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

}  // namespace sb
