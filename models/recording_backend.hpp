#pragma once
// A backend that records steps on the host the way a CUDA graph records them on a GPU, around any
// other backend ("recording:onednn"): between begin_capture() and end_capture() each op is kept,
// not run, with what a graph keeps of it (the tensors' storage, host spans by address, scalars by
// value), and replay() runs the kept ops again. It exists so that the trainer's --cuda-graph logic
// (when to record, when to record afresh) is tested on machines without a GPU:
// - a recording that outlives one of its tensors (freed by a reshape) fails at replay, where a
//   GPU would read freed memory;
// - what a GPU refuses while capturing (allocating, reading back, waiting) throws here too.
// Outside a capture every op goes straight to the wrapped backend.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/backend.hpp"

namespace sb::models {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }

  Tensor allocate(Shape shape) override;
  void write(Tensor& tensor, std::span<const float> nchw) override;
  void read(const Tensor& tensor, std::span<float> nchw) override;
  double read_scalar(const Tensor& scalar) override;
  void fill(Tensor& tensor, float value) override;
  void copy(const Tensor& from, Tensor& to) override;

  void conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) override;
  void conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) override;
  void conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) override;
  void batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                  Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                  const Tensor* residual) override;
  void batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                                   const Tensor& variance, Tensor& y, float epsilon, bool relu,
                                  const Tensor* residual) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                          const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                          float epsilon) override;
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

  void keep_fp32_master(Tensor& tensor) override;
  float* host_fp32(const Tensor& tensor) override { return inner_->host_fp32(tensor); }
  HostMemory* input_memory() override { return inner_->input_memory(); }
  bool copies_ahead() const override { return inner_->copies_ahead(); }
  void prefetch(std::span<const float> nchw) override { inner_->prefetch(nchw); }
  std::string device_name() const override { return inner_->device_name(); }
  int64_t peak_device_bytes() override { return inner_->peak_device_bytes(); }
  void synchronize() override;

  bool can_capture() const override { return true; }
  void begin_capture() override;
  void end_capture(bool keep = true) override;
  void replay() override;

 private:
  // A tensor as a recording holds it: its storage by address, not kept alive (a GPU graph keeps a
  // pointer, not the allocation). get() throws std::logic_error once the storage is gone.
  struct Held {
    Shape shape;
    std::weak_ptr<void> storage;
    Tensor get() const;
  };
  static Held hold(const Tensor& t) { return {t.shape(), t.storage()}; }
  // Runs op now, or keeps it for the replays while capturing.
  void run(std::function<void()> op);
  // Throws std::logic_error while capturing: what a GPU cannot record.
  void refuse_while_capturing(const char* what) const;

  std::unique_ptr<Backend> inner_;
  bool capturing_ = false;
  std::vector<std::function<void()>> pending_, recording_;
};

}  // namespace sb::models
