#pragma once
// A compressor's device form (CUDA builds only): its host twin's payload (compressor.hpp), byte
// for byte, made and decoded in device memory on a stream. The layout — carrier, payload type and
// sizes, rounds — is the twin's, so the compressed allreduce on GPU buffers
// (device_compressed_allreduce.hpp) is the host algorithm with the work moved, and a payload made
// on one side decodes on the other. The calls queue work on `stream`; a few wait for it where the
// host must decide (QSGD's and TernGrad's scale, the threshold's candidate count).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "collectives/compress/compressor.hpp"

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb {

class DeviceCompressor {
 public:
  explicit DeviceCompressor(std::unique_ptr<Compressor> twin) : twin_(std::move(twin)) {}
  virtual ~DeviceCompressor() = default;
  DeviceCompressor(const DeviceCompressor&) = delete;
  DeviceCompressor& operator=(const DeviceCompressor&) = delete;

  // The host twin: name, carrier, payload type and sizes, rounds.
  const Compressor& layout() const { return *twin_; }

  // As Compressor's, with every pointer in device memory; decompress_add always with weight 1
  // (the device exchange decodes its own payload into a copy, not in place: error feedback there
  // still takes the corrected gradient, its decoding and their difference as three arrays).
  virtual void compress(const float* values, size_t count, uint64_t step, unsigned char* payload,
                        CUstream_st* stream) = 0;
  virtual void decompress_add(const unsigned char* payload, size_t count, uint64_t step, float* out,
                              CUstream_st* stream) = 0;
  virtual void next_round(const float* /*values*/, size_t /*count*/, int /*round*/, const unsigned char* /*aggregate*/,
                          unsigned char* /*payload*/, CUstream_st* /*stream*/) {}
  // By default the average: out *= 1 / nranks (after every payload was decoded into out; the
  // host's Compressor::aggregate does both).
  virtual void combine(const unsigned char* payloads, size_t count, int nranks, float* out, CUstream_st* stream);
  // As Compressor's, copied from and to the device (these wait for the device).
  virtual std::vector<float> carried() const { return {}; }
  virtual void restore_carried(const std::vector<float>& /*state*/) {}

 private:
  std::unique_ptr<Compressor> twin_;
};

// Every compressor of compressor_names() by name, with the host's parameter checks (UsageError).
std::unique_ptr<DeviceCompressor> make_device_compressor(std::string_view name, const CompressorParams& params);

}  // namespace sb
