#include "collectives/transports/nccl_transport.hpp"

#include <algorithm>

#include "collectives/device_allreduce.hpp"
#include "collectives/schedule_allreduce.hpp"
#include "kernels/reduce.hpp"

namespace sb {

NcclTransport::~NcclTransport() {
  cudaFree(scratch_.data);
  cudaFree(staging_.data);
}

void NcclTransport::reserve(DeviceBuffer& buffer, size_t bytes) {
  if (buffer.bytes >= bytes) return;
  SB_CUDA_CHECK(cudaStreamSynchronize(context_.stream()));  // nothing queued still uses the old one
  SB_CUDA_CHECK(cudaFree(buffer.data));
  buffer.data = static_cast<unsigned char*>(context_.allocate(bytes));
  buffer.bytes = bytes;
}

void NcclTransport::enqueue(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op) {
  const size_t element = size_of(type);
  const ncclDataType_t nccl_type = nccl_datatype(type);
  cudaStream_t stream = context_.stream();
  size_t staging_bytes = 0;
  for (const Round& round : schedule.rounds) {
    size_t staged = 0;
    for (const Step& step : round.steps)
      if (step.kind == StepKind::recv_reduce) staged += step.dst.count * element;
    staging_bytes = std::max(staging_bytes, staged);
  }
  reserve(staging_, staging_bytes);
  reserve(scratch_, schedule.scratch_count * element);
  auto at = [&](const Chunk& chunk) {
    unsigned char* base = chunk.buffer == BufferId::work ? static_cast<unsigned char*>(work) : scratch_.data;
    return base + chunk.offset * element;
  };

  if (input != work)
    SB_CUDA_CHECK(cudaMemcpyAsync(work, input, schedule.count * element, cudaMemcpyDeviceToDevice, stream));
  for (const Round& round : schedule.rounds) {
    if (round.steps.empty()) continue;
    SB_NCCL_CHECK(ncclGroupStart());
    size_t offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind == StepKind::recv_copy) {
        SB_NCCL_CHECK(ncclRecv(at(step.dst), step.dst.count, nccl_type, step.peer, context_.comm(), stream));
      } else if (step.kind == StepKind::recv_reduce) {
        SB_NCCL_CHECK(ncclRecv(staging_.data + offset, step.dst.count, nccl_type, step.peer, context_.comm(), stream));
        offset += step.dst.count * element;
      } else if (step.kind == StepKind::send) {
        SB_NCCL_CHECK(ncclSend(at(step.src), step.src.count, nccl_type, step.peer, context_.comm(), stream));
      }
    }
    SB_NCCL_CHECK(ncclGroupEnd());

    offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce) continue;
      reduce_into_cuda(at(step.dst), staging_.data + offset, step.dst.count, type, op, stream);
      offset += step.dst.count * element;
    }
    for (const Step& step : round.steps) {
      if (step.kind == StepKind::reduce_local)
        reduce_into_cuda(at(step.dst), at(step.src), step.dst.count, type, op, stream);
      else if (step.kind == StepKind::copy_local)  // the verifier rules out overlapping local copies' ranges
        SB_CUDA_CHECK(cudaMemcpyAsync(at(step.dst), at(step.src), step.dst.count * element,
                                      cudaMemcpyDeviceToDevice, stream));
    }
  }
}

namespace {

// A schedule on device buffers over NCCL point-to-point, timed by CUDA events like ncclAllReduce.
class NcclScheduleAllreduce final : public DeviceAllreduce {
 public:
  NcclScheduleAllreduce(const AllreduceAlgorithm& algorithm, const AlgorithmParams& params, MPI_Comm comm)
      : DeviceAllreduce(comm), schedules_(algorithm, params, comm), transport_(context_) {}

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    const Schedule& schedule = schedules_.for_count(count);
    return context_.time([&] {
      transport_.enqueue(schedule, send, recv, type, op);
      if (op == RedOp::avg) divide_cuda(recv, count, type, schedules_.nranks(), context_.stream());
    });
  }

 private:
  ScheduleCache schedules_;
  NcclTransport transport_;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_nccl_schedule_allreduce(const AllreduceAlgorithm& algorithm,
                                                            const AlgorithmParams& params, MPI_Comm comm) {
  return std::make_unique<NcclScheduleAllreduce>(algorithm, params, comm);
}

}  // namespace sb
