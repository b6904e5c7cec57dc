// The quantisers on device memory, with their host twins' payloads: sign and efsign ([mean |x|]
// [sign bits], sign decoded by majority vote), onebit ([two means per chunk][bits]), qsgd and
// terngrad ([a scale per bucket, or one][a signed byte per value], stochastically rounded from the
// rank's own stream).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "collectives/compress/device_compressors.hpp"
#include "common/check.hpp"
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

// QSGD (levels s, scaled by ||x||_2 per bucket of values) and TernGrad (one level, scaled by max
// |x| clipped at 2.5 standard deviations, per tensor). The scales go into the payload's head,
// where the rounding reads them. A single scale is reduced to the host (QSGD's one norm waits for
// the stream once, TernGrad's three reductions three times) and copied back; bucket norms stay on
// the device.
class DeviceByteQuantiser final : public DeviceCompressor {
 public:
  DeviceByteQuantiser(std::unique_ptr<Compressor> twin, int levels, size_t bucket, uint64_t stream)
      : DeviceCompressor(std::move(twin)), levels_(levels), bucket_(bucket), stream_(stream) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    SB_CHECK(reinterpret_cast<uintptr_t>(payload) % alignof(float) == 0, "device QSGD/TernGrad: unaligned payload");
    float* scales = reinterpret_cast<float*>(payload);
    const size_t span = scale_span(bucket_, count), scale_total = scale_count(bucket_, count);
    if (scale_total == 1) {
      const double squares = sum_of_squares_cuda(values, count, stream);
      scale_ = layout().name() == "qsgd" ? static_cast<float>(std::sqrt(squares))
                                         : terngrad_scale(sum_cuda(values, count, stream), squares,
                                                          max_magnitude_cuda(values, count, stream), count);
      // From pageable memory the copy is staged before the call returns; scale_ outlives it anyway.
      SB_CUDA_CHECK(cudaMemcpyAsync(scales, &scale_, sizeof scale_, cudaMemcpyHostToDevice, stream));
    } else {
      bucket_norms_cuda(values, count, span, scales, stream);  // QSGD's buckets (TernGrad has one scale)
    }
    stochastic_levels_cuda(values, count, span, scales, static_cast<float>(levels_),
                           random_key(stream_, static_cast<uint64_t>(levels_), step),
                           reinterpret_cast<int8_t*>(payload + scale_total * sizeof(float)), stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    add_levels_cuda(payload, count, bucket_, static_cast<float>(levels_), out, stream);
  }

 private:
  int levels_;
  size_t bucket_;    // QSGD's; 0 (one scale) for TernGrad
  uint64_t stream_;  // this rank's random stream
  float scale_ = 0;
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_quantised_compressor(std::unique_ptr<Compressor> twin,
                                                                   const CompressorParams& params) {
  const std::string_view name = twin->name();
  if (name == "sign" || name == "efsign") return std::make_unique<DeviceScaledSign>(std::move(twin));
  if (name == "onebit") return std::make_unique<DeviceOneBit>(std::move(twin));
  const bool qsgd = name == "qsgd";
  return std::make_unique<DeviceByteQuantiser>(std::move(twin), qsgd ? params.levels : 1, qsgd ? params.bucket : 0,
                                               params.stream);
}

}  // namespace sb
