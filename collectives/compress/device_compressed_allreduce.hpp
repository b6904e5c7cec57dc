#pragma once
// The compressed allreduce on device buffers (CUDA builds only): the host CompressedAllreduce's
// algorithm (compressed_allreduce.hpp) with the payloads made, carried and decoded on the GPU —
// ncclAllReduce for none, fp16 and bf16, ncclAllGather for QSGD and TernGrad — and error
// feedback's residual kept on the device. The same arithmetic in the same order as the host
// compressors, so both give the same averages (QSGD's scale, a norm summed in another order,
// can differ in its last bit). Other compressors have no device form yet: UsageError.
#include <memory>
#include <string>

#include "collectives/compress/compressor.hpp"

namespace sb {

class NcclContext;

class DeviceCompressedAllreduce {
 public:
  static bool supports(const std::string& compressor);
  // params.stream seeds this rank's stochastic rounding, as on the host.
  DeviceCompressedAllreduce(const std::string& compressor, const CompressorParams& params, bool error_feedback,
                            NcclContext& nccl);
  ~DeviceCompressedAllreduce();
  DeviceCompressedAllreduce(const DeviceCompressedAllreduce&) = delete;
  DeviceCompressedAllreduce& operator=(const DeviceCompressedAllreduce&) = delete;

  // Collective, on nccl's stream (returns once queued): gradient (device, count fp32) <- the
  // average over ranks of their decoded payloads. `step` must be the same on every rank.
  void run(float* gradient, size_t count, uint64_t step);
  // The residual carried to the next step, copied to the host (waits).
  std::vector<float> residual() const;
  size_t payload_bytes(size_t count) const;

 private:
  struct Buffers;
  void ensure(size_t count);

  std::string name_;
  CompressorParams params_;
  bool error_feedback_;
  NcclContext& nccl_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace sb
