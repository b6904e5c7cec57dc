#pragma once
// The naive reference backend, for tests only: NCHW, every element a double, plain loops that
// follow the definitions, double accumulation everywhere. Slow by design; it is what the oneDNN
// and cuDNN layers are checked against, and what the finite-difference gradient checks run on.
#include "models/backend.hpp"

namespace sb::models {

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }

  // Direct access to the doubles, for finite differences.
  static double* data(const Tensor& tensor) { return tensor.as<double>(); }

  Tensor allocate(Shape shape) override;
  void write(Tensor& tensor, std::span<const float> nchw) override;
  void read(const Tensor& tensor, std::span<float> nchw) override;
  double read_scalar(const Tensor& scalar) override;  // the double itself
  void sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) override;  // in double
  void fill(Tensor& tensor, float value) override;
  void copy(const Tensor& from, Tensor& to) override;

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
  void axpby(float a, const Tensor& x, float b, Tensor& y) override;
  double sum_of_squares(const Tensor& tensor) override;
  void softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels, float label_smoothing,
                             Tensor& dlogits, Tensor& loss) override;
  void momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) override;
};

}  // namespace sb::models
