#include "models/profiling_backend.hpp"

#include <algorithm>
#include <type_traits>

namespace sb::models {

namespace {

using Clock = std::chrono::steady_clock;

// "conv 3x3 forward", "conv 1x1 stride 2 backward-data": the kinds a ResNet's time divides into.
std::string conv_kind(const Tensor& w, ConvGeometry g, const char* direction) {
  std::string kind = "conv " + std::to_string(w.shape().h) + "x" + std::to_string(w.shape().w);
  if (g.stride != 1) kind += " stride " + std::to_string(g.stride);
  return kind + " " + direction;
}

std::string batchnorm_kind(bool relu, const Tensor* residual, const char* pass) {
  return std::string("batchnorm") + (residual ? "+add" : "") + (relu ? "+relu" : "") + " " + pass;
}

}  // namespace

void ProfilingBackend::set_timing(bool on) {
  if (on && !timing_) inner_->synchronize();
  timing_ = on;
}

std::vector<OpTime> ProfilingBackend::profile() const {
  std::vector<OpTime> ops;
  for (const auto& [kind, time] : ops_) ops.push_back(time);
  std::stable_sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  return ops;
}

void ProfilingBackend::bill(const std::string& kind, std::chrono::steady_clock::time_point start) {
  OpTime& entry = ops_[kind];
  entry.op = kind;
  ++entry.calls;
  entry.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

template <class Op>
auto ProfilingBackend::timed(const std::string& kind, Op&& op) -> decltype(op()) {
  if (!timing_ && !trace_) return op();
  const Clock::time_point start = Clock::now();
  const auto done = [&] {
    if (timing_) {
      inner_->synchronize();
      bill(kind, start);
    }
    if (trace_) trace_->span(trace_track_, kind, "op", start, Clock::now());
  };
  if constexpr (std::is_void_v<decltype(op())>) {
    op();
    done();
  } else {
    auto value = op();
    done();
    return value;
  }
}

void ProfilingBackend::write(Tensor& t, std::span<const float> nchw) {
  timed("write (from the host)", [&] { inner_->write(t, nchw); });
}
void ProfilingBackend::read(const Tensor& t, std::span<float> nchw) {
  timed("read (to the host)", [&] { inner_->read(t, nchw); });
}
double ProfilingBackend::read_scalar(const Tensor& scalar) {
  return timed("read (to the host)", [&] { return inner_->read_scalar(scalar); });
}
void ProfilingBackend::fill(Tensor& t, float value) {
  timed("fill", [&] { inner_->fill(t, value); });
}
void ProfilingBackend::copy(const Tensor& from, Tensor& to) {
  timed("copy", [&] { inner_->copy(from, to); });
}

void ProfilingBackend::conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) {
  timed(conv_kind(w, g, "forward"), [&] { inner_->conv_forward(x, w, y, g); });
}
void ProfilingBackend::conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) {
  timed(conv_kind(w, g, "backward-data"), [&] { inner_->conv_backward_data(dy, w, dx, g); });
}
void ProfilingBackend::conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) {
  timed(conv_kind(dw, g, "backward-weights"), [&] { inner_->conv_backward_weights(x, dy, dw, g); });
}

void ProfilingBackend::batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                                  Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                                  const Tensor* residual) {
  timed(batchnorm_kind(relu, residual, "forward"), [&] {
    inner_->batchnorm_forward_training(x, gamma, beta, y, mean, variance, epsilon, relu, residual);
  });
}
void ProfilingBackend::batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                   const Tensor& mean, const Tensor& variance, Tensor& y,
                                                   float epsilon, bool relu, const Tensor* residual) {
  timed(batchnorm_kind(relu, residual, "inference"), [&] {
    inner_->batchnorm_forward_inference(x, gamma, beta, mean, variance, y, epsilon, relu, residual);
  });
}
void ProfilingBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma,
                                          Tensor& dbeta, float epsilon) {
  timed(y ? "batchnorm+relu backward" : "batchnorm backward", [&] {
    inner_->batchnorm_backward(x, dy, gamma, mean, variance, y, dx, dgamma, dbeta, epsilon);
  });
}

void ProfilingBackend::relu_forward(const Tensor& x, Tensor& y) {
  timed("relu forward", [&] { inner_->relu_forward(x, y); });
}
void ProfilingBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  timed("relu backward", [&] { inner_->relu_backward(y, dy, dx); });
}
void ProfilingBackend::maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) {
  timed("maxpool forward", [&] { inner_->maxpool_forward(x, y, g); });
}
void ProfilingBackend::maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) {
  timed("maxpool backward", [&] { inner_->maxpool_backward(x, dy, dx, g); });
}
void ProfilingBackend::global_avgpool_forward(const Tensor& x, Tensor& y) {
  timed("avgpool forward", [&] { inner_->global_avgpool_forward(x, y); });
}
void ProfilingBackend::global_avgpool_backward(const Tensor& dy, Tensor& dx) {
  timed("avgpool backward", [&] { inner_->global_avgpool_backward(dy, dx); });
}
void ProfilingBackend::fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  timed("fc forward", [&] { inner_->fc_forward(x, w, b, y); });
}
void ProfilingBackend::fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  timed("fc backward-data", [&] { inner_->fc_backward_data(dy, w, dx); });
}
void ProfilingBackend::fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  timed("fc backward-weights", [&] { inner_->fc_backward_weights(x, dy, dw, db); });
}

void ProfilingBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  timed("add", [&] { inner_->add(a, b, y); });
}
void ProfilingBackend::scale(Tensor& t, float factor) {
  timed("scale", [&] { inner_->scale(t, factor); });
}
void ProfilingBackend::scale_by(Tensor& t, const Tensor& factors, int64_t index) {
  timed("scale", [&] { inner_->scale_by(t, factors, index); });
}
void ProfilingBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  timed("axpby", [&] { inner_->axpby(a, x, b, y); });
}
double ProfilingBackend::sum_of_squares(const Tensor& t) {
  return timed("sums of squares", [&] { return inner_->sum_of_squares(t); });
}
std::vector<double> ProfilingBackend::sums_of_squares(std::span<const Tensor* const> tensors) {
  return timed("sums of squares", [&] { return inner_->sums_of_squares(tensors); });
}
void ProfilingBackend::sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) {
  timed("sums of squares", [&] { inner_->sums_of_squares_into(tensors, sums); });
}
void ProfilingBackend::all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index) {
  timed("overflow check", [&] { inner_->all_finite_into(tensors, flags, index); });
}
void ProfilingBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                             float label_smoothing, Tensor& dlogits, Tensor& loss) {
  timed("softmax cross-entropy",
        [&] { inner_->softmax_cross_entropy(logits, labels, label_smoothing, dlogits, loss); });
}
void ProfilingBackend::momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) {
  timed("optimizer update", [&] { inner_->momentum_update(w, g, v, step); });
}

}  // namespace sb::models
