#pragma once
// sb-compress --device: the compressed allreduce on GPU buffers (DeviceCompressedAllreduce)
// against ncclAllReduce + average of the uncompressed gradient, at the same size in the same run,
// one GPU per rank. Times are CUDA-event times of each call, the slowest rank's, median of iters.
#include <optional>
#include <string>
#include <vector>

#include "bench/compress/options.hpp"

namespace sb {

struct DeviceTimes {
  double compressed_us = 0, nccl_us = 0;
};

// Why --device cannot run here (built without CUDA, or a rank without a GPU), or empty. Collective.
std::string device_unavailable();
// Nothing in a build without CUDA. Collective. `tensors`: what the gradient is made of (for the
// compressors that work tensor by tensor).
std::optional<DeviceTimes> measure_on_device(const std::string& compressor, const std::vector<float>& gradient,
                                             const std::vector<TensorView>& tensors, const CompressOptions& o, int rank);

}  // namespace sb
