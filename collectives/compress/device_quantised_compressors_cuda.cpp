// The quantisers on device memory, with their host twins' payloads: sign and efsign ([mean |x|]
// [sign bits], sign decoded by majority vote), onebit ([two means per chunk][bits]), qsgd and
// terngrad ([scale][a signed byte per value], stochastically rounded from the rank's own stream).
#include <cuda_runtime.h>

#include <cmath>

#include "collectives/compress/device_compressors.hpp"
#include "common/cuda_check.hpp"
#include "kernels/device_compress.hpp"
#include "kernels/quantise.hpp"
#include "kernels/random.hpp"
#include "kernels/sign.hpp"

namespace sb {
namespace {

class DeviceScaledSign final : public DeviceCompressor {
 public:
  using DeviceCompressor::DeviceCompressor;
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    scaled_sign_cuda(values, count, payload, stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    add_scaled_sign_cuda(payload, count, out, stream);
  }
  void combine(const unsigned char* payloads, size_t count, int nranks, float* out, cudaStream_t stream) override {
    if (layout().name() != "sign") return DeviceCompressor::combine(payloads, count, nranks, out, stream);
    majority_vote_cuda(payloads, nranks, layout().payload_bytes(count), count, out, stream);
  }
};

class DeviceOneBit final : public DeviceCompressor {
 public:
  using DeviceCompressor::DeviceCompressor;
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    onebit_cuda(values, count, payload, stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    add_onebit_cuda(payload, count, out, stream);
  }
};

// QSGD (levels s, scaled by ||x||_2) and TernGrad (one level, scaled by max |x|). The scale is
// needed on the host to set the rounding's unit, so compress waits for the stream once.
class DeviceByteQuantiser final : public DeviceCompressor {
 public:
  DeviceByteQuantiser(std::unique_ptr<Compressor> twin, int levels, uint64_t stream)
      : DeviceCompressor(std::move(twin)), levels_(levels), stream_(stream) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    scale_ = layout().name() == "qsgd" ? static_cast<float>(std::sqrt(sum_of_squares_cuda(values, count, stream)))
                                       : max_magnitude_cuda(values, count, stream);
    // From pageable memory the copy is staged before the call returns; scale_ outlives it anyway.
    SB_CUDA_CHECK(cudaMemcpyAsync(payload, &scale_, sizeof scale_, cudaMemcpyHostToDevice, stream));
    const float s = static_cast<float>(levels_);
    stochastic_levels_cuda(values, count, scale_ > 0 ? s / scale_ : 0.0f, s,
                           random_key(stream_, static_cast<uint64_t>(levels_), step),
                           reinterpret_cast<int8_t*>(payload + sizeof(float)), stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    add_levels_cuda(payload, count, static_cast<float>(levels_), out, stream);
  }

 private:
  int levels_;
  uint64_t stream_;  // this rank's random stream
  float scale_ = 0;
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_quantised_compressor(std::unique_ptr<Compressor> twin,
                                                                   const CompressorParams& params) {
  const std::string_view name = twin->name();
  if (name == "sign" || name == "efsign") return std::make_unique<DeviceScaledSign>(std::move(twin));
  if (name == "onebit") return std::make_unique<DeviceOneBit>(std::move(twin));
  const int levels = name == "qsgd" ? params.levels : 1;
  return std::make_unique<DeviceByteQuantiser>(std::move(twin), levels, params.stream);
}

}  // namespace sb
