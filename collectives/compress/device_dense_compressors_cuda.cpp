// none, fp16 and bf16 on device memory: the payload is the gradient as it is or rounded to
// nearest even by the conversion kernels, and decodes by widening it into the gradient.
#include <cuda_runtime.h>

#include "collectives/compress/device_compressors.hpp"
#include "common/cuda_check.hpp"
#include "kernels/convert.hpp"
#include "kernels/device_compress.hpp"

namespace sb {
namespace {

class DeviceDense final : public DeviceCompressor {
 public:
  using DeviceCompressor::DeviceCompressor;
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    switch (layout().payload_type()) {
      case DataType::float16: return to_float16_cuda(values, reinterpret_cast<float16*>(payload), count, stream);
      case DataType::bfloat16: return to_bfloat16_cuda(values, reinterpret_cast<bfloat16*>(payload), count, stream);
      default:
        SB_CUDA_CHECK(cudaMemcpyAsync(payload, values, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    add_widened_cuda(payload, layout().payload_type(), count, out, stream);
  }
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_dense_compressor(std::unique_ptr<Compressor> twin) {
  return std::make_unique<DeviceDense>(std::move(twin));
}

}  // namespace sb
