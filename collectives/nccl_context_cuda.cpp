#include "collectives/nccl_context.hpp"

namespace sb {

NcclContext::NcclContext(MPI_Comm comm) : LocalGpu(comm) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
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
