// The quantisers on device memory, with their host twins' payloads: sign and efsign ([mean |x|]
// [sign bits], sign decoded by majority vote), onebit ([two means per chunk][bits]), qsgd and
// terngrad ([a scale per bucket, per tensor, or one][a signed byte per value], stochastically
// rounded from the rank's own stream).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "collectives/compress/byte_quantiser.hpp"
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
// |x| clipped at 2.5 standard deviations), with a scale per tensor where no buckets are asked for
// and several tensors are given (byte_quantiser.hpp). The scales go into the payload's head, where
// the rounding reads them. Norms are taken on the device (one bucket per tensor when per tensor);
// a single QSGD norm waits for the stream once, and each TernGrad scale's three reductions three
// times, the scales then copied into the payload.
class DeviceByteQuantiser final : public DeviceCompressor {
 public:
  DeviceByteQuantiser(std::unique_ptr<Compressor> twin, int levels, size_t bucket, std::vector<TensorView> tensors,
                      uint64_t stream)
      : DeviceCompressor(std::move(twin)), levels_(levels), bucket_(bucket), tensors_(std::move(tensors)), stream_(stream) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    SB_CHECK(reinterpret_cast<uintptr_t>(payload) % alignof(float) == 0, "device QSGD/TernGrad: unaligned payload");
    float* scales = reinterpret_cast<float*>(payload);
    const uint64_t key = random_key(stream_, static_cast<uint64_t>(levels_), step);
    if (scales_per_tensor(bucket_, tensors_)) {
      const std::vector<size_t> at = tensor_offsets(tensors_, count);
      const size_t tensors = tensors_.size();
      int8_t* level = reinterpret_cast<int8_t*>(payload + tensors * sizeof(float));
      if (qsgd()) {
        for (size_t t = 0; t < tensors; ++t)  // one bucket of the whole tensor
          bucket_norms_cuda(values + at[t], at[t + 1] - at[t], at[t + 1] - at[t], scales + t, stream);
      } else {
        host_scales_.resize(tensors);
        for (size_t t = 0; t < tensors; ++t) host_scales_[t] = terngrad_scale_cuda(values + at[t], at[t + 1] - at[t], stream);
        // From pageable memory the copy is staged before the call returns; host_scales_ outlives it anyway.
        SB_CUDA_CHECK(cudaMemcpyAsync(scales, host_scales_.data(), tensors * sizeof(float), cudaMemcpyHostToDevice, stream));
      }
      for (size_t t = 0; t < tensors; ++t)
        stochastic_levels_cuda(values + at[t], at[t + 1] - at[t], 0, scales + t, static_cast<float>(levels_),
                               tensor_rounding_key(key, t), level + at[t], stream);
      return;
    }
    const size_t span = scale_span(bucket_, count), scale_total = scale_count(bucket_, count);
    if (scale_total == 1) {
      host_scales_.assign(1, qsgd() ? static_cast<float>(std::sqrt(sum_of_squares_cuda(values, count, stream)))
                                    : terngrad_scale_cuda(values, count, stream));
      SB_CUDA_CHECK(cudaMemcpyAsync(scales, host_scales_.data(), sizeof(float), cudaMemcpyHostToDevice, stream));
    } else {
      bucket_norms_cuda(values, count, span, scales, stream);  // QSGD's buckets
    }
    stochastic_levels_cuda(values, count, span, scales, static_cast<float>(levels_), key,
                           reinterpret_cast<int8_t*>(payload + scale_total * sizeof(float)), stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    if (!scales_per_tensor(bucket_, tensors_)) return add_levels_cuda(payload, count, bucket_, static_cast<float>(levels_), out, stream);
    const std::vector<size_t> at = tensor_offsets(tensors_, count);
    const int8_t* level = reinterpret_cast<const int8_t*>(payload + tensors_.size() * sizeof(float));
    for (size_t t = 0; t < tensors_.size(); ++t)
      add_levels_cuda(payload + t * sizeof(float), level + at[t], at[t + 1] - at[t], 0, static_cast<float>(levels_),
                      out + at[t], stream);
  }

 private:
  bool qsgd() const { return layout().name() == "qsgd"; }
  // TernGrad's scale of one tensor: its sum, squares and max |x| reduced to the host.
  static float terngrad_scale_cuda(const float* values, size_t count, cudaStream_t stream) {
    return terngrad_scale(sum_cuda(values, count, stream), sum_of_squares_cuda(values, count, stream),
                          max_magnitude_cuda(values, count, stream), count);
  }

  int levels_;
  size_t bucket_;                   // QSGD's; 0 (a scale per tensor, or one) for TernGrad
  std::vector<TensorView> tensors_;
  uint64_t stream_;                 // this rank's random stream
  std::vector<float> host_scales_;  // the scales reduced to the host, kept while their copy is queued
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_quantised_compressor(std::unique_ptr<Compressor> twin,
                                                                   const CompressorParams& params) {
  const std::string_view name = twin->name();
  if (name == "sign" || name == "efsign") return std::make_unique<DeviceScaledSign>(std::move(twin));
  if (name == "onebit") return std::make_unique<DeviceOneBit>(std::move(twin));
  const bool qsgd = name == "qsgd";
  return std::make_unique<DeviceByteQuantiser>(std::move(twin), qsgd ? params.levels : 1, qsgd ? params.bucket : 0,
                                               params.tensors, params.stream);
}

}  // namespace sb
