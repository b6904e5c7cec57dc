#include "collectives/compress/device_compressed_allreduce.hpp"

#include "collectives/nccl_context.hpp"
#include "kernels/device_array.hpp"
#include "kernels/device_compress.hpp"

namespace sb {

struct DeviceCompressedAllreduce::Buffers {
  size_t count = 0;
  DeviceArray<float> residual, corrected, sent;
  DeviceArray<unsigned char> payload, received;
};

DeviceCompressedAllreduce::DeviceCompressedAllreduce(const std::string& compressor, const CompressorParams& params,
                                                     bool error_feedback, NcclContext& nccl)
    : compressor_(make_device_compressor(compressor, params)),
      error_feedback_(error_feedback && !compressor_->layout().lossless()),
      nccl_(nccl),
      buffers_(std::make_unique<Buffers>()) {
  SB_NCCL_CHECK(ncclCommCount(nccl_.comm(), &nranks_));
}

DeviceCompressedAllreduce::~DeviceCompressedAllreduce() = default;

// Buffers for this count, made afresh when it changes (the residual starts at zero).
void DeviceCompressedAllreduce::ensure(size_t count) {
  if (buffers_->count == count && buffers_->payload.data()) return;
  auto fresh = std::make_unique<Buffers>();
  const Compressor& layout = compressor_->layout();
  fresh->count = count;
  if (error_feedback_) {
    fresh->residual.resize(count);
    SB_CUDA_CHECK(cudaMemsetAsync(fresh->residual.data(), 0, count * sizeof(float), nccl_.stream()));
    fresh->corrected.resize(count);
    fresh->sent.resize(count);
  }
  // Every round's payload fits in payload_bytes, the sum over the rounds.
  const size_t bytes = layout.payload_bytes(count);
  fresh->payload.resize(bytes);
  fresh->received.resize(layout.carrier() == Carrier::allgather ? bytes * static_cast<size_t>(nranks_) : bytes);
  buffers_ = std::move(fresh);
}

void DeviceCompressedAllreduce::exchange(size_t bytes) {
  Buffers& b = *buffers_;
  const Compressor& layout = compressor_->layout();
  if (layout.carrier() == Carrier::allgather) {
    SB_NCCL_CHECK(ncclAllGather(b.payload.data(), b.received.data(), bytes, ncclUint8, nccl_.comm(), nccl_.stream()));
    return;
  }
  const DataType type = layout.payload_type();
  SB_NCCL_CHECK(ncclAllReduce(b.payload.data(), b.received.data(), bytes / size_of(type), nccl_datatype(type), ncclSum,
                              nccl_.comm(), nccl_.stream()));
}

void DeviceCompressedAllreduce::run(float* gradient, size_t count, uint64_t step) {
  ensure(count);
  Buffers& b = *buffers_;
  cudaStream_t s = nccl_.stream();
  const Compressor& layout = compressor_->layout();
  const float* input = gradient;
  if (error_feedback_) {
    add_cuda(gradient, b.residual.data(), b.corrected.data(), count, s);
    input = b.corrected.data();
  }
  // Each round's payload from the aggregate of the one before (one round but for PowerSGD).
  size_t bytes = layout.round_payload_bytes(count, 0);
  compressor_->compress(input, count, step, b.payload.data(), s);
  exchange(bytes);
  for (int round = 1; round < layout.rounds(); ++round) {
    compressor_->next_round(input, count, round, b.received.data(), b.payload.data(), s);
    bytes = layout.round_payload_bytes(count, round);
    exchange(bytes);
  }
  if (error_feedback_) {  // what this rank's own payload missed
    SB_CUDA_CHECK(cudaMemsetAsync(b.sent.data(), 0, count * sizeof(float), s));
    compressor_->decompress_add(b.payload.data(), count, step, b.sent.data(), s);
    subtract_cuda(b.corrected.data(), b.sent.data(), b.residual.data(), count, s);
  }
  // Decoded in rank order (gathered payloads) or once (the sum), then combined.
  SB_CUDA_CHECK(cudaMemsetAsync(gradient, 0, count * sizeof(float), s));
  const int decodes = layout.carrier() == Carrier::allgather ? nranks_ : 1;
  for (int r = 0; r < decodes; ++r)
    compressor_->decompress_add(b.received.data() + static_cast<size_t>(r) * bytes, count, step, gradient, s);
  compressor_->combine(b.received.data(), count, nranks_, gradient, s);
}

// The stream is non-blocking: the plain copies below wait for its work explicitly.
std::vector<float> DeviceCompressedAllreduce::residual() const {
  if (!error_feedback_) return {};
  SB_CUDA_CHECK(cudaStreamSynchronize(nccl_.stream()));
  std::vector<float> host(buffers_->count);
  if (!host.empty()) nccl_.download(host.data(), buffers_->residual.data(), host.size() * sizeof(float));
  return host;
}

void DeviceCompressedAllreduce::restore_residual(const std::vector<float>& residual) {
  if (!error_feedback_) return;  // none kept, as on the host
  ensure(residual.size());
  SB_CUDA_CHECK(cudaStreamSynchronize(nccl_.stream()));  // ensure()'s zeroing first
  if (!residual.empty()) nccl_.upload(buffers_->residual.data(), residual.data(), residual.size() * sizeof(float));
}

}  // namespace sb
