#include "models/layers.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/check.hpp"
#include "kernels/random.hpp"

namespace sb::models {
namespace {

uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Parameter make_parameter(Backend& backend, std::string name, ParamKind kind, const Shape& shape) {
  return Parameter{std::move(name), kind, backend.allocate(shape), backend.allocate(shape)};
}

// An inference pass's output: the layer's training output when it has this shape (evaluating at
// the training batch then allocates nothing: the next training pass rewrites it anyway), else
// one from the pool.
Tensor inference_output(const Tensor& training_output, const Shape& shape, TensorPool& pool) {
  return !training_output.empty() && training_output.shape() == shape ? training_output : pool.take(shape);
}

}  // namespace

std::vector<float> Init::normal(const std::string& name, int64_t count, double stddev) const {
  const uint64_t key = random_key(seed, name_hash(name), 1);
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    // Box-Muller on two 24-bit uniforms; 1 - u keeps the logarithm finite.
    const double u1 = 1.0 - random_unit(key, 2 * static_cast<uint64_t>(i));
    const double u2 = random_unit(key, 2 * static_cast<uint64_t>(i) + 1);
    values[i] = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
  }
  return values;
}

std::vector<float> Init::uniform(const std::string& name, int64_t count, double bound) const {
  const uint64_t key = random_key(seed, name_hash(name), 2);
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(bound * (2.0 * random_unit(key, i) - 1.0));
  return values;
}

void ensure_shape(Backend& backend, Tensor& t, const Shape& shape) {
  if (t.empty() || !(t.shape() == shape)) t = backend.allocate(shape);
}

// ---- Conv2d ----------------------------------------------------------------------------------

Conv2d::Conv2d(Backend& backend, const Init& init, std::string name, int64_t in_channels, int64_t out_channels,
               int kernel, int stride, int pad)
    : weight_(make_parameter(backend, std::move(name), ParamKind::weight, {out_channels, in_channels, kernel, kernel})),
      geometry_{stride, pad} {
  const double fan_out = static_cast<double>(out_channels) * kernel * kernel;
  backend.write(weight_.value, init.normal(weight_.name, weight_.value.count(), std::sqrt(2.0 / fan_out)));
}

Shape Conv2d::output_shape(const Shape& x) const {
  const Shape& w = weight_.value.shape();
  return {x.n, w.n, window_output(x.h, static_cast<int>(w.h), geometry_.stride, geometry_.pad),
          window_output(x.w, static_cast<int>(w.w), geometry_.stride, geometry_.pad)};
}

int64_t Conv2d::flops_per_sample(const Shape& x) const {
  const Shape y = output_shape(x);
  const Shape& w = weight_.value.shape();
  return 2 * y.c * y.h * y.w * w.c * w.h * w.w;
}

const Tensor& Conv2d::forward(Backend& backend, const Tensor& x) {
  input_ = &x;
  ensure_shape(backend, y_, output_shape(x.shape()));
  backend.conv_forward(x, weight_.value, y_, geometry_);
  return y_;
}

Tensor Conv2d::infer(Backend& backend, const Tensor& x, TensorPool& pool) const {
  Tensor y = inference_output(y_, output_shape(x.shape()), pool);
  backend.conv_forward(x, weight_.value, y, geometry_);
  return y;
}

void Conv2d::release() {
  input_ = nullptr;
  y_ = Tensor();
}

Tensor Conv2d::backward(Backend& backend, const Tensor& dy, TensorPool& pool, bool need_input_grad) {
  backend.conv_backward_weights(*input_, dy, weight_.grad, geometry_);
  if (!need_input_grad) return Tensor();
  Tensor dx = pool.take(input_->shape());
  backend.conv_backward_data(dy, weight_.value, dx, geometry_);
  return dx;
}

// ---- BatchNorm2d -----------------------------------------------------------------------------

BatchNorm2d::BatchNorm2d(Backend& backend, std::string name, int64_t channels, bool relu, bool zero_gamma,
                         const BnSync* sync)
    : gamma_(make_parameter(backend, name + ".weight", ParamKind::bn_gamma, vector_shape(channels))),
      beta_(make_parameter(backend, name + ".bias", ParamKind::bn_beta, vector_shape(channels))),
      running_mean_{name + ".running_mean", backend.allocate(vector_shape(channels))},
      running_var_{name + ".running_var", backend.allocate(vector_shape(channels))},
      relu_(relu),
      sync_(sync),
      batch_mean_(backend.allocate(vector_shape(channels))),
      batch_var_(backend.allocate(vector_shape(channels))) {
  backend.fill(gamma_.value, zero_gamma ? 0.0f : 1.0f);
  backend.fill(running_var_.value, 1.0f);
  if (sync_) {
    for (Tensor* t : {&affine_scale_, &affine_shift_, &zeros_, &ones_}) *t = backend.allocate(vector_shape(channels));
    backend.fill(zeros_, 0.0f);
    // A batch norm with mean 0 and variance 1 - epsilon computes scale x + shift: the channel
    // affine map that adds the group's terms to dx, with no backend call of its own.
    backend.fill(ones_, 1.0f - kEpsilon);
  }
}

const Tensor& BatchNorm2d::forward(Backend& backend, const Tensor& x, const Tensor* residual) {
  SB_CHECK(!(relu_ && residual), "a residual goes into a batch norm without a ReLU of its own");
  input_ = &x;
  ensure_shape(backend, y_, x.shape());
  const bool relu = relu_ || residual != nullptr;
  backend.batchnorm_forward_training(x, gamma_.value, beta_.value, y_, batch_mean_, batch_var_, kEpsilon, relu,
                                     residual);
  local_count_ = group_count_ = static_cast<double>(x.shape().n * x.shape().h * x.shape().w);
  if (sync_) {
    synchronise_statistics(backend, x.shape());
    backend.batchnorm_forward_inference(x, gamma_.value, beta_.value, batch_mean_, batch_var_, y_, kEpsilon, relu,
                                        residual);
  }
  // The running variance is the unbiased estimate, as PyTorch keeps it.
  const double m = group_count_;
  const float unbiased = m > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
  backend.axpby(kMomentum, batch_mean_, 1 - kMomentum, running_mean_.value);
  backend.axpby(kMomentum * unbiased, batch_var_, 1 - kMomentum, running_var_.value);
  return y_;
}

Tensor BatchNorm2d::infer(Backend& backend, const Tensor& x, TensorPool& pool, const Tensor* residual) const {
  SB_CHECK(!(relu_ && residual), "a residual goes into a batch norm without a ReLU of its own");
  Tensor y = inference_output(y_, x.shape(), pool);
  backend.batchnorm_forward_inference(x, gamma_.value, beta_.value, running_mean_.value, running_var_.value, y,
                                      kEpsilon, relu_ || residual != nullptr, residual);
  return y;
}

void BatchNorm2d::release() {
  input_ = nullptr;
  y_ = Tensor();
}

Tensor BatchNorm2d::backward(Backend& backend, const Tensor& dy, TensorPool& pool) {
  Tensor dx = pool.take(input_->shape());
  backend.batchnorm_backward(*input_, dy, gamma_.value, batch_mean_, batch_var_, relu_ ? &y_ : nullptr, dx,
                             gamma_.grad, beta_.grad, kEpsilon);
  if (sync_) add_group_terms(backend, *input_, dx, pool);
  return dx;
}

// The group's mean and (biased) variance from every rank's count, mean and mean of squares.
void BatchNorm2d::synchronise_statistics(Backend& backend, const Shape& x) {
  const size_t c = static_cast<size_t>(x.c);
  std::vector<float> mean(c), var(c);
  backend.read(batch_mean_, mean);
  backend.read(batch_var_, var);
  std::vector<double> sums(2 * c + 1);
  for (size_t i = 0; i < c; ++i) {
    sums[i] = local_count_ * mean[i];
    sums[c + i] = local_count_ * (static_cast<double>(var[i]) + static_cast<double>(mean[i]) * mean[i]);
  }
  sums[2 * c] = local_count_;
  sync_->allreduce_sum(sums);
  group_count_ = sums[2 * c];
  for (size_t i = 0; i < c; ++i) {
    const double group_mean = sums[i] / group_count_;
    mean[i] = static_cast<float>(group_mean);
    var[i] = static_cast<float>(std::max(sums[c + i] / group_count_ - group_mean * group_mean, 0.0));
  }
  backend.write(batch_mean_, mean);
  backend.write(batch_var_, var);
}

// The backward above used the group's statistics but this rank's sums: dx_local = g / s (dy -
// sum dy / m - xhat sum(dy xhat) / m), with s = sqrt(var + eps). The group's dx has the group's sums
// over its count M instead, so dx = dx_local + g / s (k1 + xhat k2) with k1 = dbeta / m - Dbeta / M
// and k2 = dgamma / m - Dgamma / M: per channel, scale x + shift with scale = g k2 / s^2 and
// shift = g k1 / s - scale mean. The weights' own gradients stay this rank's sums, as in PyTorch's
// SyncBatchNorm; the gradient exchange then averages them over the ranks.
void BatchNorm2d::add_group_terms(Backend& backend, const Tensor& x, Tensor& dx, TensorPool& pool) {
  const size_t c = static_cast<size_t>(x.shape().c);
  std::vector<float> dgamma(c), dbeta(c), gamma(c), mean(c), var(c);
  backend.read(gamma_.grad, dgamma);
  backend.read(beta_.grad, dbeta);
  backend.read(gamma_.value, gamma);
  backend.read(batch_mean_, mean);
  backend.read(batch_var_, var);
  std::vector<double> sums(2 * c);
  for (size_t i = 0; i < c; ++i) sums[i] = dbeta[i], sums[c + i] = dgamma[i];
  sync_->allreduce_sum(sums);
  std::vector<float> scale(c), shift(c);
  for (size_t i = 0; i < c; ++i) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[i]) + kEpsilon);
    const double k1 = dbeta[i] / local_count_ - sums[i] / group_count_;
    const double k2 = dgamma[i] / local_count_ - sums[c + i] / group_count_;
    const double a = gamma[i] * k2 * inv_std * inv_std;
    scale[i] = static_cast<float>(a);
    shift[i] = static_cast<float>(gamma[i] * k1 * inv_std - a * mean[i]);
  }
  backend.write(affine_scale_, scale);
  backend.write(affine_shift_, shift);
  Tensor correction = pool.take(x.shape());
  backend.batchnorm_forward_inference(x, affine_scale_, affine_shift_, zeros_, ones_, correction, kEpsilon, false,
                                      nullptr);
  backend.add(dx, correction, dx);
}

// ---- pooling ---------------------------------------------------------------------------------

Shape MaxPool2d::output_shape(const Shape& x) const {
  return {x.n, x.c, window_output(x.h, geometry_.kernel, geometry_.stride, geometry_.pad),
          window_output(x.w, geometry_.kernel, geometry_.stride, geometry_.pad)};
}

const Tensor& MaxPool2d::forward(Backend& backend, const Tensor& x) {
  input_ = &x;
  ensure_shape(backend, y_, output_shape(x.shape()));
  backend.maxpool_forward(x, y_, geometry_);
  return y_;
}

Tensor MaxPool2d::infer(Backend& backend, const Tensor& x, TensorPool& pool) const {
  Tensor y = inference_output(y_, output_shape(x.shape()), pool);
  backend.maxpool_forward(x, y, geometry_);
  return y;
}

void MaxPool2d::release() {
  input_ = nullptr;
  y_ = Tensor();
}

Tensor MaxPool2d::backward(Backend& backend, const Tensor& dy, TensorPool& pool) {
  Tensor dx = pool.take(input_->shape());
  backend.maxpool_backward(*input_, dy, dx, geometry_);
  return dx;
}

const Tensor& GlobalAvgPool::forward(Backend& backend, const Tensor& x) {
  input_shape_ = x.shape();
  ensure_shape(backend, y_, {x.shape().n, x.shape().c, 1, 1});
  backend.global_avgpool_forward(x, y_);
  return y_;
}

Tensor GlobalAvgPool::infer(Backend& backend, const Tensor& x, TensorPool& pool) const {
  Tensor y = inference_output(y_, {x.shape().n, x.shape().c, 1, 1}, pool);
  backend.global_avgpool_forward(x, y);
  return y;
}

void GlobalAvgPool::release() { y_ = Tensor(); }

Tensor GlobalAvgPool::backward(Backend& backend, const Tensor& dy, TensorPool& pool) {
  Tensor dx = pool.take(input_shape_);
  backend.global_avgpool_backward(dy, dx);
  return dx;
}

// ---- Linear ----------------------------------------------------------------------------------

Linear::Linear(Backend& backend, const Init& init, std::string name, int64_t inputs, int64_t outputs)
    : weight_(make_parameter(backend, name + ".weight", ParamKind::weight, {outputs, inputs, 1, 1})),
      bias_(make_parameter(backend, name + ".bias", ParamKind::bias, vector_shape(outputs))) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(inputs));
  backend.write(weight_.value, init.uniform(weight_.name, weight_.value.count(), bound));
  backend.write(bias_.value, init.uniform(bias_.name, bias_.value.count(), bound));
}

const Tensor& Linear::forward(Backend& backend, const Tensor& x) {
  input_ = &x;
  ensure_shape(backend, y_, {x.shape().n, weight_.value.shape().n, 1, 1});
  backend.fc_forward(x, weight_.value, bias_.value, y_);
  return y_;
}

Tensor Linear::infer(Backend& backend, const Tensor& x, TensorPool& pool) const {
  Tensor y = inference_output(y_, {x.shape().n, weight_.value.shape().n, 1, 1}, pool);
  backend.fc_forward(x, weight_.value, bias_.value, y);
  return y;
}

void Linear::release() {
  input_ = nullptr;
  y_ = Tensor();
}

Tensor Linear::backward(Backend& backend, const Tensor& dy, TensorPool& pool) {
  backend.fc_backward_weights(*input_, dy, weight_.grad, bias_.grad);
  Tensor dx = pool.take(input_->shape());
  backend.fc_backward_data(dy, weight_.value, dx);
  return dx;
}

}  // namespace sb::models
