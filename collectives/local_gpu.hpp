#pragma once
// This rank's GPU, chosen by local rank (CUDA builds only), with device buffers and the copies
// to and from the host that the harness's device implementations need. The base of NcclContext;
// the CUDA-aware MPI baseline uses it alone, with no NCCL communicator.
#include <mpi.h>

#include <cstddef>
#include <string>

namespace sb {

class LocalGpu {
 public:
  // Collective over `comm` (it asks which ranks share a node). Selects GPU local rank mod the
  // GPUs visible; at least one must be.
  explicit LocalGpu(MPI_Comm comm);

  int device() const { return device_; }
  void* allocate(size_t bytes) const;
  void release(void* buffer) const;
  void upload(void* buffer, const void* host, size_t bytes) const;
  void download(void* host, const void* buffer, size_t bytes) const;
  std::string device_name() const;  // "cuda:N <name>"

 private:
  int device_ = 0;
};

}  // namespace sb
