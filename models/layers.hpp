#pragma once
// The layers a ResNet is made of, each a small object over the Backend: it owns its parameters
// and its output, keeps what its backward pass needs from the forward pass, and reallocates its
// output only when the training batch's shape changes. backward() returns the input gradient in
// a tensor from a TensorPool: it is needed only until the layer before has read it. infer() is
// the forward pass of evaluation: it keeps nothing, and writes its output into the layer's
// training output when the shapes match, else into a tensor from a TensorPool. release() lets
// go of the output (before an evaluation at another batch size).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/backend.hpp"
#include "models/parameter.hpp"
#include "models/tensor_pool.hpp"

namespace sb::models {

// Initialisation drawn from (seed, tensor name, element index) only, so a tensor's initial
// values do not depend on the order layers are built in, or on the backend.
struct Init {
  uint64_t seed = 0;
  // Normal(0, stddev) values for a tensor of count elements.
  std::vector<float> normal(const std::string& name, int64_t count, double stddev) const;
  std::vector<float> uniform(const std::string& name, int64_t count, double bound) const;
};

// (Re)allocates t when its shape is not `shape`.
void ensure_shape(Backend& backend, Tensor& t, const Shape& shape);

class Conv2d {
 public:
  // He (fan-out) normal initialisation, as torchvision's ResNet does.
  Conv2d(Backend& backend, const Init& init, std::string name, int64_t in_channels, int64_t out_channels,
         int kernel, int stride, int pad);
  Shape output_shape(const Shape& x) const;
  const Tensor& forward(Backend& backend, const Tensor& x);
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const;
  void release();
  // Returns dx; with need_input_grad false (the first layer) only the weight gradient is made.
  Tensor backward(Backend& backend, const Tensor& dy, TensorPool& pool, bool need_input_grad = true);
  Parameter& weight() { return weight_; }
  int64_t flops_per_sample(const Shape& x) const;  // multiply-adds x 2, forward only

 private:
  Parameter weight_;
  ConvGeometry geometry_;
  const Tensor* input_ = nullptr;
  Tensor y_;
};

// Synchronised batch norm (--bn-span): the sum of a few doubles over the ranks of a BN group.
// Without one, batch norm is local to each rank.
struct BnSync {
  std::function<void(std::vector<double>&)> allreduce_sum;
};

class BatchNorm2d {
 public:
  // relu: the ReLU that follows is fused into this layer (y = max(0, bn(x))). sync: normalise
  // over the whole group's batch (forward statistics and backward sums), or nullptr.
  BatchNorm2d(Backend& backend, std::string name, int64_t channels, bool relu, bool zero_gamma = false,
              const BnSync* sync = nullptr);
  // Normalises by the batch's statistics (the group's under sync) and updates the running ones.
  // With a residual (x's shape): y = max(0, bn(x) + residual), a residual block's add and ReLU
  // fused into its last BN (built without a ReLU of its own). backward() then takes dy already
  // masked by that ReLU: the block masks it once for both of its branches.
  const Tensor& forward(Backend& backend, const Tensor& x, const Tensor* residual = nullptr);
  // Normalises by the running statistics.
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool, const Tensor* residual = nullptr) const;
  void release();
  Tensor backward(Backend& backend, const Tensor& dy, TensorPool& pool);
  Parameter& gamma() { return gamma_; }
  Parameter& beta() { return beta_; }
  Buffer& running_mean() { return running_mean_; }
  Buffer& running_var() { return running_var_; }

  static constexpr float kEpsilon = 1e-5f;
  static constexpr float kMomentum = 0.1f;  // running = (1 - m) running + m batch, as PyTorch

 private:
  // The group's statistics in place of this rank's (forward), and the group's terms added to
  // this rank's dx (backward).
  void synchronise_statistics(Backend& backend, const Shape& x);
  void add_group_terms(Backend& backend, const Tensor& x, Tensor& dx, TensorPool& pool);

  Parameter gamma_, beta_;
  Buffer running_mean_, running_var_;
  bool relu_;
  const BnSync* sync_;
  const Tensor* input_ = nullptr;
  Tensor y_, batch_mean_, batch_var_;
  double local_count_ = 0, group_count_ = 0;  // values per channel in this rank's batch, the group's
  Tensor affine_scale_, affine_shift_, zeros_, ones_;  // sync only: dx's group terms
};

class MaxPool2d {
 public:
  explicit MaxPool2d(PoolGeometry geometry) : geometry_(geometry) {}
  Shape output_shape(const Shape& x) const;
  const Tensor& forward(Backend& backend, const Tensor& x);
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const;
  void release();
  Tensor backward(Backend& backend, const Tensor& dy, TensorPool& pool);

 private:
  PoolGeometry geometry_;
  const Tensor* input_ = nullptr;
  Tensor y_;
};

class GlobalAvgPool {
 public:
  const Tensor& forward(Backend& backend, const Tensor& x);
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const;
  void release();
  Tensor backward(Backend& backend, const Tensor& dy, TensorPool& pool);

 private:
  Shape input_shape_;
  Tensor y_;
};

class Linear {
 public:
  // PyTorch's default: weight and bias uniform in +-1/sqrt(inputs).
  Linear(Backend& backend, const Init& init, std::string name, int64_t inputs, int64_t outputs);
  const Tensor& forward(Backend& backend, const Tensor& x);
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const;
  void release();
  Tensor backward(Backend& backend, const Tensor& dy, TensorPool& pool);
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  Parameter weight_, bias_;
  const Tensor* input_ = nullptr;
  Tensor y_;
};

}  // namespace sb::models
