// PowerSGD on device memory, with its host twin's rounds and payloads (lowrank_compressors.cpp
// explains the method): the products through cuBLAS, the orthogonalisation by one kernel, the
// warm-start Q kept on the device between steps.
#include <cublas_v2.h>

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
  DevicePowerSgd(std::unique_ptr<Compressor> twin, int rank, uint64_t seed)
      : DeviceCompressor(std::move(twin)), rank_(static_cast<size_t>(rank)), seed_(seed) {
    SB_CUBLAS_CHECK(cublasCreate(&cublas_));
    // Plain fp32 products, as on the host: the default math mode, which never uses TF32.
    SB_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  ~DevicePowerSgd() override { cublasDestroy(cublas_); }

  // Round 0: P_i = M_i Q, from the warm-started Q.
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload, cudaStream_t stream) override {
    const PowerSgdShape s = powersgd_shape(count, rank_);
    start_q(s, stream);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    matmul_cuda(cublas_, padded(values, count, s, stream), s.rows, s.cols, q_.data(), s.r,
                reinterpret_cast<float*>(payload));
  }
  // Round 1: P = orthonormalised sum of the P_i; Q_i = M_i^T P.
  void next_round(const float* values, size_t count, int, const unsigned char* aggregate, unsigned char* payload,
                  cudaStream_t stream) override {
    const PowerSgdShape s = powersgd_shape(count, rank_);
    p_.resize(s.rows * s.r);
    SB_CUDA_CHECK(cudaMemcpyAsync(p_.data(), aggregate, p_.size() * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    orthonormalise_columns_cuda(p_.data(), s.rows, s.r, stream);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    matmul_transposed_cuda(cublas_, padded(values, count, s, stream), s.rows, s.cols, p_.data(), s.r,
                           reinterpret_cast<float*>(payload));
  }
  // out += P Q^T for a round-1 payload (one rank's Q_i, or their sum).
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out, cudaStream_t stream) override {
    const PowerSgdShape s = powersgd_shape(count, rank_);
    const float* q = reinterpret_cast<const float*>(payload);
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    if (s.rows * s.cols == count) return add_outer_cuda(cublas_, p_.data(), q, s.rows, s.cols, s.r, out);
    decoded_.resize(s.rows * s.cols);
    SB_CUDA_CHECK(cudaMemsetAsync(decoded_.data(), 0, decoded_.size() * sizeof(float), stream));
    add_outer_cuda(cublas_, p_.data(), q, s.rows, s.cols, s.r, decoded_.data());
    add_cuda(out, decoded_.data(), out, count, stream);
  }
  std::vector<float> carried() const override {
    std::vector<float> q(q_.size());
    SB_CUDA_CHECK(cudaDeviceSynchronize());  // combine() may still be writing it
    SB_CUDA_CHECK(cudaMemcpy(q.data(), q_.data(), q.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return q;
  }
  void restore_carried(const std::vector<float>& state) override {
    q_.resize(state.size());
    SB_CUDA_CHECK(cudaMemcpy(q_.data(), state.data(), state.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  // The average, and the averaged Q (divided, as the host does) kept as the next step's start.
  void combine(const unsigned char* payloads, size_t count, int nranks, float* out, cudaStream_t stream) override {
    DeviceCompressor::combine(payloads, count, nranks, out, stream);
    const PowerSgdShape s = powersgd_shape(count, rank_);
    SB_CUDA_CHECK(cudaMemcpyAsync(q_.data(), payloads, s.cols * s.r * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    divide_cuda(q_.data(), s.cols * s.r, DataType::float32, nranks, stream);
  }

 private:
  // The first Q of this shape: the host's standard normal values, uploaded.
  void start_q(const PowerSgdShape& s, cudaStream_t stream) {
    if (q_.size() == s.cols * s.r) return;
    start_.resize(s.cols * s.r);
    standard_normal_cpu(start_.data(), start_.size(), powersgd_start_key(seed_, start_.size()));
    q_.resize(start_.size());
    SB_CUDA_CHECK(cudaMemcpyAsync(q_.data(), start_.data(), start_.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  // The values as the zero-padded matrix (no copy when count fills it).
  const float* padded(const float* values, size_t count, const PowerSgdShape& s, cudaStream_t stream) {
    if (s.rows * s.cols == count) return values;
    matrix_.resize(s.rows * s.cols);
    SB_CUDA_CHECK(cudaMemcpyAsync(matrix_.data(), values, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    SB_CUDA_CHECK(cudaMemsetAsync(matrix_.data() + count, 0, (matrix_.size() - count) * sizeof(float), stream));
    return matrix_.data();
  }

  size_t rank_;
  uint64_t seed_;
  cublasHandle_t cublas_ = nullptr;
  std::vector<float> start_;                  // the first Q on the host, kept while its upload is queued
  DeviceArray<float> q_, p_, matrix_, decoded_;  // q_: the warm start, replaced by combine()
};

}  // namespace

std::unique_ptr<DeviceCompressor> make_device_lowrank_compressor(std::unique_ptr<Compressor> twin,
                                                                 const CompressorParams& params) {
  return std::make_unique<DevicePowerSgd>(std::move(twin), params.rank, params.seed);
}

}  // namespace sb
