#pragma once
// The GPU backend: convolutions through cuDNN, the fully-connected layer through cuBLAS, and the
// rest (batch norm with its ReLU and a residual add fused, pooling, loss, optimizer step,
// element-wise ops) through this project's kernels (models/gpu_kernels.hpp). CUDA builds only.
//
// Layout: every tensor is channels-last (N, H, W, C; convolution weights K, R, S, C), as tensor
// cores want it and as the oneDNN backend stores it, so activations are never reordered; NCHW
// data crosses only at write/read, reordered by a kernel (the host only copies).
//
// Precision (--precision):
// - fp32: fp32 storage, fp32 FMA math in cuDNN and cuBLAS (no TF32), the reference for the rest;
// - tf32: fp32 storage, tensor-core math on TF32-rounded inputs for convolutions and the FC layer;
// - fp16, bf16: tensors of more than one row (activations, weights, their gradients) are stored in
//   the 16-bit type and convolutions run on tensor cores with fp32 accumulation; per-channel
//   vectors (batch-norm parameters and statistics, the FC bias) stay fp32. A tensor the optimizer
//   updates (keep_fp32_master) gets an fp32 master copy that is authoritative: the optimizer step
//   runs on it in fp32 and refreshes the 16-bit copy, and write/read/sum_of_squares use it.
//
// Convolution algorithms: chosen once per shape and direction, by cuDNN's heuristics (the
// default) or by timing every candidate (search = timed), among those whose workspace fits the
// bound; the choice is cached. All work goes to one CUDA stream; host-returning calls wait on it.
#include <cstddef>
#include <memory>

#include "models/backend.hpp"
#include "models/gpu_kernels.hpp"

namespace sb::models {

struct CudnnState;  // handles, stream, algorithm cache: CUDA's types stay out of this header

struct CudnnOptions {
  Precision precision = Precision::fp32;
  int device = -1;                       // -1: the current device; else this index modulo the GPUs (a local rank)
  bool timed_search = false;             // time the algorithms instead of trusting the heuristics
  size_t workspace_limit = size_t{1} << 30;  // bytes of convolution workspace at most
};

class CudnnBackend final : public Backend {
 public:
  explicit CudnnBackend(const CudnnOptions& options = {});
  ~CudnnBackend() override;
  std::string name() const override { return "cudnn"; }
  Precision precision() const;

  Tensor allocate(Shape shape) override;
  void write(Tensor& tensor, std::span<const float> nchw) override;
  bool copies_ahead() const override { return true; }
  void prefetch(std::span<const float> nchw) override;
  void read(const Tensor& tensor, std::span<float> nchw) override;
  void fill(Tensor& tensor, float value) override;
  void copy(const Tensor& from, Tensor& to) override;
  void keep_fp32_master(Tensor& tensor) override;

  void conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) override;
  void conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) override;
  void conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) override;

  void batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                  Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                  const Tensor* residual) override;
  void batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   const Tensor& mean, const Tensor& variance, Tensor& y,
                                   float epsilon, bool relu,
                                  const Tensor* residual) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                          const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma,
                          Tensor& dbeta, float epsilon) override;

  void relu_forward(const Tensor& x, Tensor& y) override;
  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override;
  void maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) override;
  void maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) override;
  void global_avgpool_forward(const Tensor& x, Tensor& y) override;
  void global_avgpool_backward(const Tensor& dy, Tensor& dx) override;

  void fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override;
  void fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override;

  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void scale(Tensor& tensor, float factor) override;
  void scale_by(Tensor& tensor, const Tensor& factors, int64_t index) override;
  void axpby(float a, const Tensor& x, float b, Tensor& y) override;
  double sum_of_squares(const Tensor& tensor) override;
  std::vector<double> sums_of_squares(std::span<const Tensor* const> tensors) override;
  void sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) override;
  void all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index) override;
  void softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels, float label_smoothing,
                             Tensor& dlogits, Tensor& loss) override;
  void momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) override;

  void synchronize() override;
  HostMemory* input_memory() override;

  // CUDA graphs: a stream capture of the backend's stream, instantiated once and launched on it.
  bool can_capture() const override { return true; }
  void begin_capture() override;
  void end_capture(bool keep = true) override;
  void replay() override;
  bool capturing() const;

  // For device-side communication (models/device_gradient_exchange.hpp): a tensor's elements as
  // the kernels see them, and the stream every op of this backend runs on.
  gpu::Elements device_elements(const Tensor& tensor) const;
  gpu::ElementType compute_type() const;
  gpu::Stream stream() const;

  // "9.19.0", for the results' metadata.
  static std::string library_version();
  std::string device_name() const override;
  int64_t peak_device_bytes() override;

 private:
  std::unique_ptr<CudnnState> state_;
};

}  // namespace sb::models
