// PowerSGD on device memory, with its host twin's rounds and payloads (lowrank_compressors.cpp
// explains the method and powersgd.hpp the layout): the products through cuBLAS, a matrix at a
// time; the orthogonalisations of every P, and the copies of every tensor sent as it is, in one
// launch each; the warm-start Q's kept on the device between steps.
#include <cublas_v2.h>

#include <map>
#include <utility>
#include <vector>

#include "collectives/compress/device_compressors.hpp"
#include "collectives/compress/powersgd.hpp"
#include "common/cudnn_check.hpp"
#include "kernels/device_array.hpp"
#include "kernels/device_compress.hpp"
#include "kernels/lowrank.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

class DevicePowerSgd final : public DeviceCompressor {
 public:
  DevicePowerSgd(std::unique_ptr<Compressor> twin, int rank, uint64_t seed, std::vector<TensorView> tensors)
      : DeviceCompressor(std::move(twin)), layouts_(std::move(tensors), static_cast<size_t>(rank)), seed_(seed) {
    SB_CUBLAS_CHECK(cublasCreate(&cublas_));
    // Plain fp32 products, as on the host: the default math mode, which never uses TF32.
    SB_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  ~DevicePowerSgd() override { cublasDestroy(cublas_); }

  // Round 0: P_i = M_i Q for each matrix, from the warm-started Q's.
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    const PowerSgdLayout& l = layout(count);
    start_q(l, stream);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    float* p = reinterpret_cast<float*>(payload);
    for (const PowerSgdBlock& b : l.blocks)
      if (b.compressed())
        matmul_cuda(cublas_, matrix(values, b, stream), b.rows, b.cols, q_.data() + b.q_offset, b.r, p + b.p_offset);
  }
  // Round 1: each P = its orthonormalised sum of the P_i (all in one launch); Q_i = M_i^T P; then
  // the vectors (one launch).
  void next_round(const float* values, size_t count, int, const unsigned char* aggregate, unsigned char* payload,
                  cudaStream_t stream) override {
    const PowerSgdLayout& l = layout(count);
    const Tables& t = tables(count);
    p_.resize(l.p_floats);
    if (l.p_floats > 0)
      SB_CUDA_CHECK(cudaMemcpyAsync(p_.data(), aggregate, l.p_floats * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    orthonormalise_factors_cuda(p_.data(), t.factors.data(), t.factors.size(), stream);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    float* out = reinterpret_cast<float*>(payload);
    for (const PowerSgdBlock& b : l.blocks)
      if (b.compressed())
        matmul_transposed_cuda(cublas_, matrix(values, b, stream), b.rows, b.cols, p_.data() + b.p_offset, b.r,
                               out + b.q_offset);
    copy_runs_cuda(values, out, t.to_payload.data(), t.to_payload.size(), false, stream);
  }
  // out += P Q^T per matrix, and the vectors (one launch), for a round-1 payload (one rank's, or
  // their sum).
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    const PowerSgdLayout& l = layout(count);
    const Tables& t = tables(count);
    const float* in = reinterpret_cast<const float*>(payload);
    copy_runs_cuda(in, out, t.to_values.data(), t.to_values.size(), true, stream);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    for (const PowerSgdBlock& b : l.blocks) {
      if (!b.compressed()) continue;
      float* o = out + b.offset;
      if (!b.padded()) {
        add_outer_cuda(cublas_, p_.data() + b.p_offset, in + b.q_offset, b.rows, b.cols, b.r, o);
      } else {
        SB_CUDA_CHECK(cudaMemsetAsync(decoded_.data(), 0, b.rows * b.cols * sizeof(float), stream));
        add_outer_cuda(cublas_, p_.data() + b.p_offset, in + b.q_offset, b.rows, b.cols, b.r, decoded_.data());
        add_cuda(o, decoded_.data(), o, b.count, stream);
      }
    }
  }
  std::vector<float> carried() const override {
    std::vector<float> q(q_.size());
    SB_CUDA_CHECK(cudaDeviceSynchronize());  // combine() may still be writing it
    if (!q.empty()) SB_CUDA_CHECK(cudaMemcpy(q.data(), q_.data(), q.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return q;
  }
  void restore_carried(const std::vector<float>& state) override {
    q_.resize(state.size());
    if (!state.empty())
      SB_CUDA_CHECK(cudaMemcpy(q_.data(), state.data(), state.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  // The average, and the averaged Q's (divided, as the host does) kept as the next step's start.
  void combine(const unsigned char* payloads, size_t count, int nranks, float* out, cudaStream_t stream) override {
    DeviceCompressor::combine(payloads, count, nranks, out, stream);
    const size_t q_floats = layout(count).q_floats;
    if (q_floats == 0) return;
    SB_CUDA_CHECK(cudaMemcpyAsync(q_.data(), payloads, q_floats * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    divide_cuda(q_.data(), q_floats, DataType::float32, nranks, stream);
  }

 private:
  // The layout of `count` values, with the scratch of its largest padded matrix allocated (it only
  // grows, and only when the layout changes), so that no reallocation (a cudaFree) falls between
  // queued products.
  const PowerSgdLayout& layout(size_t count) {
    const PowerSgdLayout& l = layouts_.of(count);
    matrix_.reserve(l.largest_padded);
    decoded_.reserve(l.largest_padded);
    return l;
  }
  // The one-launch tables of a count's layout on the device (powersgd.hpp): made on its first
  // call; a bucket's count does not change from step to step.
  struct Tables {
    DeviceArray<FloatRun> to_payload, to_values;  // the blocks sent as they are, there and back
    DeviceArray<FactorView> factors;              // every P in round 0's payload
  };
  const Tables& tables(size_t count) {
    auto found = tables_.find(count);
    if (found != tables_.end()) return found->second;
    const PowerSgdLayout& l = layouts_.of(count);
    std::vector<FloatRun> runs = powersgd_uncompressed_runs(l);
    Tables& t = tables_[count];
    t.to_payload.assign(runs);
    for (FloatRun& run : runs) std::swap(run.from, run.to);
    t.to_values.assign(runs);
    t.factors.assign(powersgd_factors(l));
    return t;
  }
  // The first Q's of this layout: the host's standard normal values, uploaded.
  void start_q(const PowerSgdLayout& l, cudaStream_t stream) {
    if (q_.size() == l.q_floats) return;
    start_.resize(l.q_floats);
    standard_normal_cpu(start_.data(), start_.size(), powersgd_start_key(seed_, start_.size()));
    q_.resize(start_.size());
    if (!start_.empty())
      SB_CUDA_CHECK(cudaMemcpyAsync(q_.data(), start_.data(), start_.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  // A block's values as its matrix (a zero-padded copy when its shape was not known, in the scratch
  // layout() sized). The copy is reused by the next padded block: the stream orders the product
  // before the next overwrite.
  const float* matrix(const float* values, const PowerSgdBlock& b, cudaStream_t stream) {
    if (!b.padded()) return values + b.offset;
    SB_CUDA_CHECK(cudaMemcpyAsync(matrix_.data(), values + b.offset, b.count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    SB_CUDA_CHECK(cudaMemsetAsync(matrix_.data() + b.count, 0, (b.rows * b.cols - b.count) * sizeof(float), stream));
    return matrix_.data();
  }

  PowerSgdLayouts layouts_;
  uint64_t seed_;
  cublasHandle_t cublas_ = nullptr;
  std::vector<float> start_;                     // the first Q's on the host, kept while their upload is queued
  DeviceArray<float> q_, p_, matrix_, decoded_;  // q_: the warm starts, replaced by combine()
  std::map<size_t, Tables> tables_;               // by count
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_lowrank_compressor(std::unique_ptr<Compressor> twin,
                                                                 const CompressorParams& params) {
  return std::make_unique<DevicePowerSgd>(std::move(twin), params.rank, params.seed, params.tensors);
}

}  // namespace sb
