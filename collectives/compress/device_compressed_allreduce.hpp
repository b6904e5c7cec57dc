#pragma once
// The compressed allreduce on device buffers (CUDA builds only): the host CompressedAllreduce's
// algorithm (compressed_allreduce.hpp) with every compressor's device form
// (device_compressor.hpp): payloads made, carried and decoded on the GPU — ncclAllReduce for the
// payloads that add up, ncclAllGather for the others — and error feedback's residual kept on the
// device. The same payloads and the same order of decoding as on the host, so both give the same
// averages but for last-bit differences where a device sum runs in another order (a norm, a
// mean, a cuBLAS product).
#include <memory>
#include <string>
#include <vector>

#include "collectives/compress/device_compressor.hpp"

namespace sb {

class NcclContext;

class DeviceCompressedAllreduce {
 public:
  // params.stream seeds this rank's stochastic rounding, as on the host. UsageError for an
  // unknown compressor or a parameter out of range. A lossless compressor (none) runs without
  // error feedback, as on the host.
  DeviceCompressedAllreduce(const std::string& compressor, const CompressorParams& params, bool error_feedback,
                            NcclContext& nccl);
  ~DeviceCompressedAllreduce();
  DeviceCompressedAllreduce(const DeviceCompressedAllreduce&) = delete;
  DeviceCompressedAllreduce& operator=(const DeviceCompressedAllreduce&) = delete;

  // Collective, on nccl's stream (returns once queued, but for the compressors that wait on it):
  // gradient (device, count fp32) <- the average over ranks of their decoded payloads. `step`
  // must be the same on every rank.
  void run(float* gradient, size_t count, uint64_t step);
  // The residual carried to the next step, copied to the host (waits); empty before the first
  // run and without error feedback. restore_residual() sets it from a checkpoint (count values).
  std::vector<float> residual() const;
  void restore_residual(const std::vector<float>& residual);
  bool error_feedback() const { return error_feedback_; }
  DeviceCompressor& compressor() { return *compressor_; }
  size_t payload_bytes(size_t count) const { return compressor_->layout().payload_bytes(count); }

 private:
  struct Buffers;
  void ensure(size_t count);
  void exchange(size_t bytes);  // payload -> received, by the compressor's carrier

  std::unique_ptr<DeviceCompressor> compressor_;
  bool error_feedback_;
  NcclContext& nccl_;
  int nranks_ = 1;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace sb
