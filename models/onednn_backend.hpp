#pragma once
// The CPU backend over oneDNN. Every tensor is stored channels-last (N, H, W, C; convolution
// weights O, H, W, I), the layout oneDNN's direct convolutions, batch norm and pooling run fastest
// in without blocking, and the one cuDNN prefers for tensor cores. So activations are never
// reordered between layers: NCHW data is converted only at the model's edges (write/read). A
// convolution whose primitive prefers blocked weights gets them by a reorder of the weights
// alone, once per call (weights are a small fraction of the traffic), into scratch that every
// call shares. Primitives are built once per shape and cached, the least recently used dropped
// past kPrimitivesKept (below). Threads: oneDNN's OpenMP pool, OMP_NUM_THREADS or the threads
// argument.
#include <memory>

#include "models/backend.hpp"

namespace sb::models {

struct OnednnState;  // engine, stream, primitive cache: oneDNN's types stay out of this header

class OnednnBackend final : public Backend {
 public:
  // threads > 0 sets the OpenMP pool size; 0 leaves OMP_NUM_THREADS (or all cores) in force.
  explicit OnednnBackend(int threads = 0);
  ~OnednnBackend() override;
  std::string name() const override { return "onednn"; }

  // The primitives are kept per op and shape, the least recently used dropped past this many
  // entries. Their shapes include the batch, so every new batch size adds a set of entries: 32 to
  // 61 for ResNet-18 to 152, holding about 60 MB (ResNet-50, 24 px, batch 2 to 5; 205 MB when
  // each set held three reordered copies of the weights, now in scratch_bytes). Unbounded, a run
  // whose batch sizes keep changing (--balance's shares, a batch ramp, files that fail to decode,
  // progressive resizing) kept every set to its end. 384 entries keep 6 sizes of the largest
  // model: an epoch comes back to at most 6 (training and its short last batch, each in two sizes
  // of --accumulate micro-batches when they do not divide evenly, evaluation and its short last
  // batch), which therefore never drop each other.
  static constexpr size_t kPrimitivesKept = 384;
  size_t cached_primitives() const;  // held now
  // The memory that calls share for what does not outlive them (the weights' reordered copy, an
  // unused fused-ReLU mask, max-pool backward's rerun): the largest each has needed, not a sum
  // over shapes.
  size_t scratch_bytes() const;

  Tensor allocate(Shape shape) override;
  void write(Tensor& tensor, std::span<const float> nchw) override;
  void read(const Tensor& tensor, std::span<float> nchw) override;
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

  float* host_fp32(const Tensor& tensor) override { return tensor.as<float>(); }

  // The FLOP rate of oneDNN's fp32 matmul on n x n x n, median of reps: the ceiling that a
  // training run's model FLOP rate is compared with.
  static double matmul_gflops(int64_t n = 2048, int reps = 5);
  // The oneDNN version, e.g. "2.6.3".
  static std::string library_version();

 private:
  void add_residual(Tensor& y, const Tensor& residual, bool relu);

  std::unique_ptr<OnednnState> state_;
};

}  // namespace sb::models
