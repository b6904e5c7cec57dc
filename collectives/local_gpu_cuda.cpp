#include "collectives/local_gpu.hpp"

#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "common/mpi_env.hpp"

namespace sb {

LocalGpu::LocalGpu(MPI_Comm comm) {
  const int local_rank = local_rank_in(comm);
  int devices = 0;
  SB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  device_ = local_rank % devices;
  SB_CUDA_CHECK(cudaSetDevice(device_));
}

void* LocalGpu::allocate(size_t bytes) const {
  void* buffer = nullptr;
  SB_CUDA_CHECK(cudaMalloc(&buffer, bytes ? bytes : 1));
  return buffer;
}

void LocalGpu::release(void* buffer) const { cudaFree(buffer); }

void LocalGpu::upload(void* buffer, const void* host, size_t bytes) const {
  SB_CUDA_CHECK(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice));
}

void LocalGpu::download(void* host, const void* buffer, size_t bytes) const {
  SB_CUDA_CHECK(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost));
}

std::string LocalGpu::device_name() const {
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  return "cuda:" + std::to_string(device_) + " " + prop.name;
}

}  // namespace sb
