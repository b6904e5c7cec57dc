#pragma once
// A backend that times the ops of another backend, by kind (sb-train --profile-ops; and the op
// spans of sb-train --trace): while timing is on, each op is followed by a wait for the device,
// and the wall time from its call to the end of that wait is added to its kind ("conv 3x3
// backward-weights", "batchnorm backward", ...). Waiting after every op takes away the overlap
// of the host's launches with the device's work, so on a GPU the ops add up to more than an
// unprofiled step (by the launch latency the waits expose); what the profile is for is
// attributing a step's time to ops, on any backend. Convolutions are told apart by kernel and
// stride, so the 7x7 stem shows on its own.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/trace_events.hpp"
#include "models/backend.hpp"

namespace sb::models {

struct OpTime {
  std::string op;
  int64_t calls = 0;
  double seconds = 0;
};

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  Backend& inner() { return *inner_; }

  // On: waits for the device first, so that work queued before is not billed to the next op.
  void set_timing(bool on);
  // While `trace` is set (sb-train --trace; nullptr: off), each op is also recorded on its `track`
  // as a span from its call to its return, named by its kind. Tracing alone waits for nothing:
  // it is for the host backends, whose ops are done when they return.
  void set_trace(TraceRecorder* trace, int track) {
    trace_ = trace;
    trace_track_ = track;
  }
  // Every op kind timed so far, the most time first.
  std::vector<OpTime> profile() const;

  std::string name() const override { return inner_->name(); }
  Tensor allocate(Shape shape) override { return inner_->allocate(shape); }
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

  void keep_fp32_master(Tensor& tensor) override { inner_->keep_fp32_master(tensor); }
  float* host_fp32(const Tensor& tensor) override { return inner_->host_fp32(tensor); }
  HostMemory* input_memory() override { return inner_->input_memory(); }
  bool copies_ahead() const override { return inner_->copies_ahead(); }
  void prefetch(std::span<const float> nchw) override { inner_->prefetch(nchw); }
  std::string device_name() const override { return inner_->device_name(); }
  int64_t peak_device_bytes() override { return inner_->peak_device_bytes(); }
  void synchronize() override { inner_->synchronize(); }
  // Timing waits after each op, which a capture cannot hold: no capture through this backend.
  bool can_capture() const override { return false; }

 private:
  // Runs op; while timing, waits for the device after it and bills the time to `kind`; while
  // tracing, records it.
  template <class Op>
  auto timed(const std::string& kind, Op&& op) -> decltype(op());
  void bill(const std::string& kind, std::chrono::steady_clock::time_point start);

  std::unique_ptr<Backend> inner_;
  bool timing_ = false;
  TraceRecorder* trace_ = nullptr;
  int trace_track_ = 0;
  std::map<std::string, OpTime> ops_;
};

}  // namespace sb::models
