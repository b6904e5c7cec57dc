// The quantisers on device memory, with their host twins' payloads: sign and efsign ([mean |x|]
// [sign bits], sign decoded by majority vote), onebit ([two means per chunk][bits]), qsgd and
// terngrad ([a scale per bucket, per tensor, or one][a signed byte per value], stochastically
// rounded from the rank's own stream).
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <vector>

#include "collectives/compress/byte_quantiser.hpp"
#include "collectives/compress/device_compressors.hpp"
#include "common/check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/device_array.hpp"
#include "kernels/device_compress.hpp"
#include "kernels/quantise.hpp"
#include "kernels/random.hpp"
#include "kernels/sign.hpp"
#include "kernels/tensor_chunks.hpp"

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
// the rounding reads them. Without buckets the buffer is cut into chunks within tensors
// (kernels/tensor_chunks.hpp): two launches reduce every tensor's scale and one rounds them all,
// with no wait for the host, however many tensors a bucket holds.
class DeviceByteQuantiser final : public DeviceCompressor {
 public:
  DeviceByteQuantiser(std::unique_ptr<Compressor> twin, int levels, size_t bucket, std::vector<TensorView> tensors,
                      uint64_t stream)
      : DeviceCompressor(std::move(twin)), levels_(levels), bucket_(bucket), tensors_(std::move(tensors)), stream_(stream) {}
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload, cudaStream_t stream) override {
    SB_CHECK(reinterpret_cast<uintptr_t>(payload) % alignof(float) == 0, "device QSGD/TernGrad: unaligned payload");
    float* scales = reinterpret_cast<float*>(payload);
    const uint64_t key = random_key(stream_, static_cast<uint64_t>(levels_), step);
    if (bucket_ > 0) {  // QSGD's buckets
      bucket_norms_cuda(values, count, bucket_, scales, stream);
      stochastic_levels_cuda(values, count, bucket_, scales, static_cast<float>(levels_), key,
                             reinterpret_cast<int8_t*>(payload + scale_count(bucket_, count) * sizeof(float)), stream);
      return;
    }
    const Chunks& chunks = chunks_for(count);
    const DeviceTensorChunks view = chunks.view();
    int8_t* level = reinterpret_cast<int8_t*>(payload + view.tensors * sizeof(float));
    tensor_scales_cuda(values, view, qsgd() ? TensorScale::l2_norm : TensorScale::terngrad, chunks.partials.data(), scales,
                       stream);
    tensor_levels_cuda(values, view, scales, static_cast<float>(levels_), key, per_tensor(), level, stream);
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    if (!per_tensor()) return add_levels_cuda(payload, count, bucket_, static_cast<float>(levels_), out, stream);
    const DeviceTensorChunks view = chunks_for(count).view();
    const int8_t* level = reinterpret_cast<const int8_t*>(payload + view.tensors * sizeof(float));
    tensor_add_levels_cuda(payload, level, view, static_cast<float>(levels_), out, stream);
  }

 private:
  // A buffer's chunk table on the device, with scratch for its reductions.
  struct Chunks {
    DeviceArray<uint64_t> begin;
    DeviceArray<uint32_t> tensor_of, first_chunk;
    DeviceArray<double> partials;  // 3 a chunk
    DeviceTensorChunks view() const {
      return {begin.data(), tensor_of.data(), first_chunk.data(), static_cast<uint32_t>(tensor_of.size()),
              static_cast<uint32_t>(first_chunk.size() - 1)};
    }
  };

  bool qsgd() const { return layout().name() == "qsgd"; }
  bool per_tensor() const { return scales_per_tensor(bucket_, tensors_); }

  // The chunks of a buffer of `count` values: of each tensor where the scales are per tensor,
  // else of one tensor of them all. Made and copied to the device on a count's first call; a
  // bucket's count does not change from step to step.
  const Chunks& chunks_for(size_t count) {
    auto found = chunks_.find(count);
    if (found != chunks_.end()) return found->second;
    const TensorChunks table =
        chunk_tensors(per_tensor() ? tensor_offsets(tensors_, count) : std::vector<size_t>{0, count});
    Chunks& chunks = chunks_[count];
    chunks.begin.assign(table.begin);
    chunks.tensor_of.assign(table.tensor_of);
    chunks.first_chunk.assign(table.first_chunk);
    chunks.partials.resize(3 * table.chunks());
    return chunks;
  }

  int levels_;
  size_t bucket_;  // QSGD's; 0 (a scale per tensor, or one) for TernGrad
  std::vector<TensorView> tensors_;
  uint64_t stream_;                  // this rank's random stream
  std::map<size_t, Chunks> chunks_;  // by buffer size
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
