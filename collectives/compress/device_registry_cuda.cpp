#include <cuda_runtime.h>

#include "collectives/compress/device_compressors.hpp"
#include "kernels/device_compress.hpp"

namespace sb {

void DeviceCompressor::combine(const unsigned char*, size_t count, int nranks, float* out, cudaStream_t stream) {
  scale_cuda(out, count, 1.0f / static_cast<float>(nranks), stream);
}

std::unique_ptr<DeviceCompressor> make_device_compressor(std::string_view name, const CompressorParams& params) {
  std::unique_ptr<Compressor> twin = make_compressor(name, params);  // the parameter checks
  const std::string_view n = twin->name();
  if (n == "none" || n == "fp16" || n == "bf16") return make_device_dense_compressor(std::move(twin));
  if (n == "topk" || n == "threshold" || n == "randomk") return make_device_sparse_compressor(std::move(twin), params);
  if (n == "powersgd") return make_device_lowrank_compressor(std::move(twin), params);
  return make_device_quantised_compressor(std::move(twin), params);
}

}  // namespace sb
