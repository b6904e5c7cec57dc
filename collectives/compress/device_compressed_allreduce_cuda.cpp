#include "collectives/compress/device_compressed_allreduce.hpp"

#include <cmath>
#include <vector>

#include "collectives/nccl_context.hpp"
#include "common/usage_error.hpp"
#include "kernels/convert.hpp"
#include "kernels/device_compress.hpp"
#include "kernels/quantise.hpp"
#include "kernels/random.hpp"

namespace sb {

struct DeviceCompressedAllreduce::Buffers {
  explicit Buffers(NcclContext& n) : nccl(n) {}
  ~Buffers() {
    for (void* p : {static_cast<void*>(residual), static_cast<void*>(corrected), static_cast<void*>(sent), payload, received})
      if (p) nccl.release(p);
  }
  NcclContext& nccl;
  size_t count = 0;
  float *residual = nullptr, *corrected = nullptr, *sent = nullptr;
  void *payload = nullptr, *received = nullptr;
};

namespace {
bool quantiser(const std::string& name) { return name == "qsgd" || name == "terngrad"; }
}  // namespace

bool DeviceCompressedAllreduce::supports(const std::string& c) {
  return c == "none" || c == "fp16" || c == "bf16" || quantiser(c);
}

DeviceCompressedAllreduce::DeviceCompressedAllreduce(const std::string& compressor, const CompressorParams& params,
                                                     bool error_feedback, NcclContext& nccl)
    : name_(compressor), params_(params), error_feedback_(error_feedback), nccl_(nccl),
      buffers_(std::make_unique<Buffers>(nccl)) {
  if (!supports(compressor))
    throw UsageError("compressor '" + compressor + "' has no device form yet (none, fp16, bf16, qsgd, terngrad)");
  make_compressor(compressor, params);  // the same parameter checks as on the host
}

DeviceCompressedAllreduce::~DeviceCompressedAllreduce() = default;

size_t DeviceCompressedAllreduce::payload_bytes(size_t count) const {
  if (name_ == "none") return count * sizeof(float);
  if (name_ == "fp16" || name_ == "bf16") return count * 2;
  return sizeof(float) + count;  // the quantisers: scale and a signed byte per value
}

// Buffers for this count, made afresh when it changes (the old ones are freed with their holder).
void DeviceCompressedAllreduce::ensure(size_t count) {
  if (buffers_->count == count && buffers_->payload) return;
  auto fresh = std::make_unique<Buffers>(nccl_);
  int nranks = 1;
  SB_NCCL_CHECK(ncclCommCount(nccl_.comm(), &nranks));
  fresh->count = count;
  fresh->residual = static_cast<float*>(nccl_.allocate(count * sizeof(float)));
  SB_CUDA_CHECK(cudaMemsetAsync(fresh->residual, 0, count * sizeof(float), nccl_.stream()));
  fresh->corrected = static_cast<float*>(nccl_.allocate(count * sizeof(float)));
  fresh->sent = static_cast<float*>(nccl_.allocate(count * sizeof(float)));
  fresh->payload = nccl_.allocate(payload_bytes(count));
  fresh->received = nccl_.allocate(payload_bytes(count) * (quantiser(name_) ? static_cast<size_t>(nranks) : 1));
  buffers_ = std::move(fresh);
}

void DeviceCompressedAllreduce::run(float* gradient, size_t count, uint64_t step) {
  ensure(count);
  Buffers& b = *buffers_;
  cudaStream_t s = nccl_.stream();
  int nranks = 1;
  SB_NCCL_CHECK(ncclCommCount(nccl_.comm(), &nranks));
  const float average = 1.0f / static_cast<float>(nranks);
  const float* input = gradient;
  if (error_feedback_) {
    add_cuda(gradient, b.residual, b.corrected, count, s);
    input = b.corrected;
  }
  const size_t bytes = payload_bytes(count);

  if (!quantiser(name_)) {
    // Dense payloads add up: one ncclAllReduce of the payload type, widened and averaged.
    if (name_ == "none") SB_CUDA_CHECK(cudaMemcpyAsync(b.payload, input, bytes, cudaMemcpyDeviceToDevice, s));
    else if (name_ == "fp16") to_float16_cuda(input, static_cast<float16*>(b.payload), count, s);
    else to_bfloat16_cuda(input, static_cast<bfloat16*>(b.payload), count, s);
    if (error_feedback_) {
      if (name_ == "none") SB_CUDA_CHECK(cudaMemcpyAsync(b.sent, b.payload, bytes, cudaMemcpyDeviceToDevice, s));
      else if (name_ == "fp16") to_float_cuda(static_cast<const float16*>(b.payload), b.sent, count, s);
      else to_float_cuda(static_cast<const bfloat16*>(b.payload), b.sent, count, s);
      subtract_cuda(b.corrected, b.sent, b.residual, count, s);
    }
    const ncclDataType_t type = name_ == "none" ? ncclFloat32 : name_ == "fp16" ? ncclFloat16 : ncclBfloat16;
    SB_NCCL_CHECK(ncclAllReduce(b.payload, b.received, count, type, ncclSum, nccl_.comm(), s));
    if (name_ == "none") SB_CUDA_CHECK(cudaMemcpyAsync(gradient, b.received, bytes, cudaMemcpyDeviceToDevice, s));
    else if (name_ == "fp16") to_float_cuda(static_cast<const float16*>(b.received), gradient, count, s);
    else to_float_cuda(static_cast<const bfloat16*>(b.received), gradient, count, s);
    scale_cuda(gradient, count, average, s);
    return;
  }

  // QSGD / TernGrad: the scale (the host needs it for the rounding's unit), the levels, then every
  // rank's payload gathered and decoded in rank order.
  const int levels = name_ == "qsgd" ? params_.levels : 1;
  const float scale = name_ == "qsgd" ? static_cast<float>(std::sqrt(sum_of_squares_cuda(input, count, s)))
                                      : max_magnitude_cuda(input, count, s);
  const float s_levels = static_cast<float>(levels);
  // From pageable memory the copy is staged before the call returns, so `scale` may go.
  SB_CUDA_CHECK(cudaMemcpyAsync(b.payload, &scale, sizeof scale, cudaMemcpyHostToDevice, s));
  stochastic_levels_cuda(input, count, scale > 0 ? s_levels / scale : 0.0f, s_levels,
                         random_key(params_.stream, static_cast<uint64_t>(levels), step),
                         static_cast<int8_t*>(b.payload) + sizeof(float), s);
  if (error_feedback_) {
    decode_levels_cuda(static_cast<const unsigned char*>(b.payload), 1, bytes, count, s_levels, 1.0f, b.sent, s);
    subtract_cuda(b.corrected, b.sent, b.residual, count, s);
  }
  SB_NCCL_CHECK(ncclAllGather(b.payload, b.received, bytes, ncclUint8, nccl_.comm(), s));
  decode_levels_cuda(static_cast<const unsigned char*>(b.received), nranks, bytes, count, s_levels, average, gradient, s);
}

std::vector<float> DeviceCompressedAllreduce::residual() const {
  std::vector<float> host(buffers_->count);
  if (!host.empty()) nccl_.download(host.data(), buffers_->residual, host.size() * sizeof(float));
  return host;
}

}  // namespace sb
