#pragma once
// The bases of the implementations on device buffers (CUDA builds only). GpuBuffersAllreduce
// takes buffers, copies and the device's name from this rank's GPU (LocalGpu), so a subclass
// says only which GPU and how it runs: DeviceAllreduce's GPU is its NcclContext's, for the
// implementations on NCCL; the CUDA-aware MPI baseline holds a LocalGpu alone.
#include "collectives/allreduce_impl.hpp"
#include "collectives/local_gpu.hpp"
#include "collectives/nccl_context.hpp"

namespace sb {

class GpuBuffersAllreduce : public AllreduceImpl {
 public:
  Memory memory() const override { return Memory::device; }
  void* allocate(size_t bytes) override { return gpu().allocate(bytes); }
  void release(void* buffer) override { gpu().release(buffer); }
  void upload(void* buffer, const void* host, size_t bytes) override { gpu().upload(buffer, host, bytes); }
  void download(void* host, const void* buffer, size_t bytes) override { gpu().download(host, buffer, bytes); }
  std::string device_name() const override { return gpu().device_name(); }

 protected:
  virtual const LocalGpu& gpu() const = 0;
};

class DeviceAllreduce : public GpuBuffersAllreduce {
 public:
  explicit DeviceAllreduce(MPI_Comm comm) : context_(comm) {}

 protected:
  const LocalGpu& gpu() const override { return context_; }
  NcclContext context_;
};

}  // namespace sb
