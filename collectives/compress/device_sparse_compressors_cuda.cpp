// top-k, threshold (DGC) and random-k on device memory, with their host twins' payloads: k uint32
// indices then k fp32 values (top-k, threshold), or k values at indices every rank draws alike
// (random-k). The selections are the host's exactly: top-k by the same radix select rule, the
// threshold from the same sample and the same retries, random-k's indices drawn on the host.
#include <cuda_runtime.h>

#include <vector>

#include "collectives/compress/device_compressors.hpp"
#include "kernels/device_array.hpp"
#include "kernels/randomk.hpp"
#include "kernels/sparse.hpp"
#include "kernels/threshold.hpp"
#include "kernels/topk.hpp"

namespace sb {
namespace {

// The [k indices][k values] payload of top-k and threshold, decoded by a scatter that skips
// empty slots.
class DeviceIndexedValues : public DeviceCompressor {
 public:
  DeviceIndexedValues(std::unique_ptr<Compressor> twin, double ratio) : DeviceCompressor(std::move(twin)), ratio_(ratio) {}
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    const size_t k = sparse_k(ratio_, count);
    scatter_add_cuda(reinterpret_cast<const uint32_t*>(payload),
                     reinterpret_cast<const float*>(payload + k * sizeof(uint32_t)), k, out, stream);
  }

 protected:
  double ratio_;
};

class DeviceTopK final : public DeviceIndexedValues {
 public:
  using DeviceIndexedValues::DeviceIndexedValues;
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    const size_t k = sparse_k(ratio_, count);
    uint32_t* indices = reinterpret_cast<uint32_t*>(payload);
    topk_cuda(values, count, k, indices, stream);
    gather_cuda(values, indices, k, reinterpret_cast<float*>(payload + k * sizeof(uint32_t)), stream);
  }
};

class DeviceThreshold final : public DeviceIndexedValues {
 public:
  DeviceThreshold(std::unique_ptr<Compressor> twin, double ratio, uint64_t seed)
      : DeviceIndexedValues(std::move(twin), ratio), seed_(seed) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    const size_t k = sparse_k(ratio_, count);
    if (k == 0) return;
    uint32_t* indices = reinterpret_cast<uint32_t*>(payload);
    float* sent = reinterpret_cast<float*>(payload + k * sizeof(uint32_t));
    const ThresholdSampling sampling = dgc_sampling(count, ratio_, seed_, step);
    const float threshold = sampled_threshold_cuda(values, count, sampling.ratio, sampling.samples, sampling.key, stream);
    candidates_.reserve(count);
    size_t taken = select_with_retries(threshold, k, [&](float t) {
      return select_at_least_cuda(values, count, t, candidates_.data(), stream);
    });
    if (taken > k) {  // exact top-k among the candidates
      gathered_.reserve(taken);
      chosen_.reserve(k);
      gather_cuda(values, candidates_.data(), taken, gathered_.data(), stream);
      topk_cuda(gathered_.data(), taken, k, chosen_.data(), stream);
      gather_cuda(candidates_.data(), chosen_.data(), k, indices, stream);
      taken = k;
    } else {
      SB_CUDA_CHECK(cudaMemcpyAsync(indices, candidates_.data(), taken * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream));
      SB_CUDA_CHECK(cudaMemsetAsync(indices + taken, 0xff, (k - taken) * sizeof(uint32_t), stream));  // kNoIndex
    }
    gather_cuda(values, indices, taken, sent, stream);
    SB_CUDA_CHECK(cudaMemsetAsync(sent + taken, 0, (k - taken) * sizeof(float), stream));
  }

 private:
  uint64_t seed_;
  DeviceArray<uint32_t> candidates_, chosen_;
  DeviceArray<float> gathered_;
};
static_assert(kNoIndex == 0xffffffffu, "the empty slots are written by a memset of 0xff bytes");

class DeviceRandomK final : public DeviceCompressor {
 public:
  DeviceRandomK(std::unique_ptr<Compressor> twin, double ratio, uint64_t seed)
      : DeviceCompressor(std::move(twin)), ratio_(ratio), seed_(seed) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    const uint32_t* indices = indices_for(count, step, stream);
    gather_cuda(values, indices, sparse_k(ratio_, count), reinterpret_cast<float*>(payload), stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t step, float* out, cudaStream_t stream) override {
    const uint32_t* indices = indices_for(count, step, stream);
    scatter_add_cuda(indices, reinterpret_cast<const float*>(payload), sparse_k(ratio_, count), out, stream);
  }

 private:
  // The draw for (count, step), uploaded once: compress and every decompress of a step use it.
  const uint32_t* indices_for(size_t count, uint64_t step, cudaStream_t stream) {
    if (cached_count_ != count || cached_step_ != step) {
      host_ = randomk_indices(count, sparse_k(ratio_, count), seed_, step);
      device_.reserve(host_.size());
      // host_ stays as it is until the next draw, so the copy may still be in flight.
      SB_CUDA_CHECK(cudaMemcpyAsync(device_.data(), host_.data(), host_.size() * sizeof(uint32_t),
                                    cudaMemcpyHostToDevice, stream));
      cached_count_ = count;
      cached_step_ = step;
    }
    return device_.data();
  }

  double ratio_;
  uint64_t seed_;
  std::vector<uint32_t> host_;
  DeviceArray<uint32_t> device_;
  size_t cached_count_ = SIZE_MAX;
  uint64_t cached_step_ = 0;
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_sparse_compressor(std::unique_ptr<Compressor> twin,
                                                                const CompressorParams& params) {
  const std::string_view name = twin->name();
  if (name == "topk") return std::make_unique<DeviceTopK>(std::move(twin), params.ratio);
  if (name == "threshold") return std::make_unique<DeviceThreshold>(std::move(twin), params.ratio, params.seed);
  return std::make_unique<DeviceRandomK>(std::move(twin), params.ratio, params.seed);
}

}  // namespace sb
