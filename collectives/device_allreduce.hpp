#pragma once
// The base of every implementation on device buffers (CUDA builds only): buffers, copies and the
// device's name come from its NcclContext; a subclass says only how it runs.
#include "collectives/allreduce_impl.hpp"
#include "collectives/nccl_context.hpp"

namespace sb {

class DeviceAllreduce : public AllreduceImpl {
 public:
  explicit DeviceAllreduce(MPI_Comm comm) : context_(comm) {}

  Memory memory() const override { return Memory::device; }
  void* allocate(size_t bytes) override { return context_.allocate(bytes); }
  void release(void* buffer) override { context_.release(buffer); }
  void upload(void* buffer, const void* host, size_t bytes) override { context_.upload(buffer, host, bytes); }
  void download(void* host, const void* buffer, size_t bytes) override { context_.download(host, buffer, bytes); }
  std::string device_name() const override { return context_.device_name(); }

 protected:
  NcclContext context_;
};

}  // namespace sb
