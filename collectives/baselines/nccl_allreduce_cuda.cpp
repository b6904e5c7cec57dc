// NCCL's own ncclAllReduce on device buffers: the baseline every device schedule is compared
// with. One GPU per rank, by local rank. NCCL's algorithm and protocol can be forced with
// NCCL_ALGO and NCCL_PROTO. Built only with CUDA (SB_HAVE_CUDA).
#include "collectives/baselines/baselines.hpp"
#include "collectives/device_allreduce.hpp"

namespace sb {
namespace {

class NcclAllreduce final : public DeviceAllreduce {
 public:
  using DeviceAllreduce::DeviceAllreduce;

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    return context_.time([&] {
      SB_NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_datatype(type), nccl_redop(op), context_.comm(),
                                  context_.stream()));
    });
  }
};

}  // namespace

std::string nccl_unavailable(const WorldLayout& layout) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return "no GPU is visible to this process (NCCL needs one GPU per rank)";
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
