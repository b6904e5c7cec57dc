#pragma once
// Executes schedules on device buffers (CUDA builds only): each round's receives and sends as one
// ncclGroupStart / ncclRecv... ncclSend... / ncclGroupEnd on the context's stream, then the
// round's reductions as CUDA kernels on the same stream (kernels/reduce_cuda.cu: the element
// functions the CPU transports use). Stream order keeps the round semantics of schedule.hpp: a
// kernel that reduces into a range runs after the group that sent it.
#include "collectives/nccl_context.hpp"
#include "collectives/schedule.hpp"

namespace sb {

class NcclTransport {
 public:
  explicit NcclTransport(NcclContext& context) : context_(context) {}
  ~NcclTransport();
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  // Enqueues `schedule` on the stream, with `input` as this rank's contribution (== work: in
  // place) and the result in `work`, both device buffers of schedule.count elements.
  void enqueue(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op);

 private:
  // A device buffer of at least `bytes`, grown (between schedules, never inside one) on demand.
  struct DeviceBuffer {
    unsigned char* data = nullptr;
    size_t bytes = 0;
  };
  void reserve(DeviceBuffer& buffer, size_t bytes);

  NcclContext& context_;
  DeviceBuffer scratch_, staging_;
};

}  // namespace sb
