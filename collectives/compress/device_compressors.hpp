#pragma once
// The device compressors' constructors, one family per file as on the host; each takes its host
// twin (already checked by make_compressor) and make_device_compressor (device_registry_cuda.cpp)
// picks the family by name. CUDA builds only.
#include <memory>

#include "collectives/compress/device_compressor.hpp"

namespace sb {

// none, fp16, bf16 (device_dense_compressors_cuda.cpp)
std::unique_ptr<DeviceCompressor> make_device_dense_compressor(std::unique_ptr<Compressor> twin);
// topk, threshold, randomk (device_sparse_compressors_cuda.cpp)
std::unique_ptr<DeviceCompressor> make_device_sparse_compressor(std::unique_ptr<Compressor> twin,
                                                                const CompressorParams& params);
// sign, efsign, onebit, qsgd, terngrad (device_quantised_compressors_cuda.cpp)
std::unique_ptr<DeviceCompressor> make_device_quantised_compressor(std::unique_ptr<Compressor> twin,
                                                                   const CompressorParams& params);
// powersgd (device_lowrank_compressors_cuda.cpp)
std::unique_ptr<DeviceCompressor> make_device_lowrank_compressor(std::unique_ptr<Compressor> twin,
                                                                 const CompressorParams& params);

}  // namespace sb
