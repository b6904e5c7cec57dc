#include "models/reference_backend.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.hpp"
#include "models/loss_math.hpp"
#include "models/optimizer_math.hpp"

namespace sb::models {
namespace {

double* d(const Tensor& t) { return t.as<double>(); }

// Element (n, c, h, w) of an NCHW tensor.
int64_t at(const Shape& s, int64_t n, int64_t c, int64_t h, int64_t w) {
  return ((n * s.c + c) * s.h + h) * s.w + w;
}

void require_same(const Tensor& a, const Tensor& b, const char* what) {
  SB_CHECK(a.shape() == b.shape(), std::string(what) + ": " + a.shape().str() + " vs " + b.shape().str());
}

void require_conv_shapes(const Shape& x, const Shape& w, const Shape& y, ConvGeometry g) {
  SB_CHECK(x.c == w.c && y.c == w.n && y.n == x.n, "conv shapes " + x.str() + " " + w.str() + " " + y.str());
  SB_CHECK(y.h == window_output(x.h, static_cast<int>(w.h), g.stride, g.pad) &&
               y.w == window_output(x.w, static_cast<int>(w.w), g.stride, g.pad),
           "conv output " + y.str());
}

// Calls f(n, k, p, q, c, r, s, input h, input w) for every tap of the convolution that lands
// inside the input (padding contributes zero and is skipped).
template <class F>
void for_each_tap(const Shape& x, const Shape& w, const Shape& y, ConvGeometry g, F&& f) {
  for (int64_t n = 0; n < y.n; ++n)
    for (int64_t k = 0; k < y.c; ++k)
      for (int64_t p = 0; p < y.h; ++p)
        for (int64_t q = 0; q < y.w; ++q)
          for (int64_t c = 0; c < x.c; ++c)
            for (int64_t r = 0; r < w.h; ++r)
              for (int64_t s = 0; s < w.w; ++s) {
                const int64_t ih = p * g.stride - g.pad + r, iw = q * g.stride - g.pad + s;
                if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
                f(n, k, p, q, c, r, s, ih, iw);
              }
}

}  // namespace

Tensor ReferenceBackend::allocate(Shape shape) {
  SB_CHECK(shape.count() >= 0, "negative shape " + shape.str());
  std::shared_ptr<double[]> storage(new double[static_cast<size_t>(std::max<int64_t>(shape.count(), 1))]());
  return Tensor(shape, std::shared_ptr<void>(storage, storage.get()));
}

void ReferenceBackend::write(Tensor& t, std::span<const float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "write size");
  std::copy(nchw.begin(), nchw.end(), d(t));
}

void ReferenceBackend::read(const Tensor& t, std::span<float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "read size");
  for (int64_t i = 0; i < t.count(); ++i) nchw[i] = static_cast<float>(d(t)[i]);
}

double ReferenceBackend::read_scalar(const Tensor& t) {
  SB_CHECK(t.count() == 1, "read_scalar of a tensor of " + std::to_string(t.count()) + " elements");
  return *d(t);
}

void ReferenceBackend::fill(Tensor& t, float value) { std::fill(d(t), d(t) + t.count(), value); }

void ReferenceBackend::copy(const Tensor& from, Tensor& to) {
  require_same(from, to, "copy");
  std::copy(d(from), d(from) + from.count(), d(to));
}

void ReferenceBackend::conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) {
  require_conv_shapes(x.shape(), w.shape(), y.shape(), g);
  fill(y, 0);
  const Shape &xs = x.shape(), &ws = w.shape(), &ys = y.shape();
  for_each_tap(xs, ws, ys, g, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto s, auto ih, auto iw) {
    d(y)[at(ys, n, k, p, q)] += d(x)[at(xs, n, c, ih, iw)] * d(w)[at(ws, k, c, r, s)];
  });
}

void ReferenceBackend::conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) {
  require_conv_shapes(dx.shape(), w.shape(), dy.shape(), g);
  fill(dx, 0);
  const Shape &xs = dx.shape(), &ws = w.shape(), &ys = dy.shape();
  for_each_tap(xs, ws, ys, g, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto s, auto ih, auto iw) {
    d(dx)[at(xs, n, c, ih, iw)] += d(dy)[at(ys, n, k, p, q)] * d(w)[at(ws, k, c, r, s)];
  });
}

void ReferenceBackend::conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) {
  require_conv_shapes(x.shape(), dw.shape(), dy.shape(), g);
  fill(dw, 0);
  const Shape &xs = x.shape(), &ws = dw.shape(), &ys = dy.shape();
  for_each_tap(xs, ws, ys, g, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto s, auto ih, auto iw) {
    d(dw)[at(ws, k, c, r, s)] += d(dy)[at(ys, n, k, p, q)] * d(x)[at(xs, n, c, ih, iw)];
  });
}

void ReferenceBackend::batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                  Tensor& y, Tensor& mean, Tensor& variance,
                                                  float epsilon, bool relu, const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  const Shape& s = x.shape();
  const double m = static_cast<double>(s.n * s.h * s.w);
  for (int64_t c = 0; c < s.c; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.h * s.w; ++i) sum += d(x)[(n * s.c + c) * s.h * s.w + i];
    const double mu = sum / m;
    double squares = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.h * s.w; ++i) {
        const double e = d(x)[(n * s.c + c) * s.h * s.w + i] - mu;
        squares += e * e;
      }
    d(mean)[c] = mu;
    d(variance)[c] = squares / m;
  }
  batchnorm_forward_inference(x, gamma, beta, mean, variance, y, epsilon, relu, residual);
}

void ReferenceBackend::batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                   const Tensor& mean, const Tensor& variance, Tensor& y,
                                                   float epsilon, bool relu, const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  if (residual) require_same(x, *residual, "batchnorm residual");
  const Shape& s = x.shape();
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      const double inv_std = 1.0 / std::sqrt(d(variance)[c] + epsilon);
      for (int64_t i = 0; i < s.h * s.w; ++i) {
        const int64_t e = (n * s.c + c) * s.h * s.w + i;
        const double v = d(gamma)[c] * (d(x)[e] - d(mean)[c]) * inv_std + d(beta)[c] + (residual ? d(*residual)[e] : 0);
        d(y)[e] = relu ? std::max(v, 0.0) : v;
      }
    }
}

void ReferenceBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                          const Tensor& mean, const Tensor& variance, const Tensor* y,
                                          Tensor& dx, Tensor& dgamma, Tensor& dbeta, float epsilon) {
  require_same(x, dy, "batchnorm dy");
  require_same(x, dx, "batchnorm dx");
  const Shape& s = x.shape();
  const int64_t plane = s.h * s.w;
  const double m = static_cast<double>(s.n * plane);
  auto grad_out = [&](int64_t e) { return (y && d(*y)[e] <= 0) ? 0.0 : d(dy)[e]; };
  for (int64_t c = 0; c < s.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(d(variance)[c] + epsilon);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < plane; ++i) {
        const int64_t e = (n * s.c + c) * plane + i;
        const double g = grad_out(e);
        sum_dy += g;
        sum_dy_xhat += g * (d(x)[e] - d(mean)[c]) * inv_std;
      }
    d(dgamma)[c] = sum_dy_xhat;
    d(dbeta)[c] = sum_dy;
    // dx = gamma * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat))
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < plane; ++i) {
        const int64_t e = (n * s.c + c) * plane + i;
        const double xhat = (d(x)[e] - d(mean)[c]) * inv_std;
        d(dx)[e] = d(gamma)[c] * inv_std * (grad_out(e) - sum_dy / m - xhat * sum_dy_xhat / m);
      }
  }
}

void ReferenceBackend::relu_forward(const Tensor& x, Tensor& y) {
  require_same(x, y, "relu");
  for (int64_t i = 0; i < x.count(); ++i) d(y)[i] = std::max(d(x)[i], 0.0);
}

void ReferenceBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  require_same(y, dy, "relu dy");
  require_same(y, dx, "relu dx");
  for (int64_t i = 0; i < y.count(); ++i) d(dx)[i] = d(y)[i] > 0 ? d(dy)[i] : 0.0;
}

namespace {
// Index into x of the first maximum of y's window (n, c, p, q).
int64_t window_argmax(const Tensor& x, const Shape& ys, int64_t n, int64_t c, int64_t p, int64_t q, PoolGeometry g) {
  const Shape& xs = x.shape();
  int64_t best = -1;
  double best_value = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < g.kernel; ++r)
    for (int s = 0; s < g.kernel; ++s) {
      const int64_t ih = p * g.stride - g.pad + r, iw = q * g.stride - g.pad + s;
      if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;
      const int64_t e = at(xs, n, c, ih, iw);
      if (best < 0 || d(x)[e] > best_value) best = e, best_value = d(x)[e];
    }
  (void)ys;
  return best;
}
}  // namespace

void ReferenceBackend::maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) {
  const Shape &xs = x.shape(), &ys = y.shape();
  SB_CHECK(ys.n == xs.n && ys.c == xs.c && ys.h == window_output(xs.h, g.kernel, g.stride, g.pad) &&
               ys.w == window_output(xs.w, g.kernel, g.stride, g.pad),
           "maxpool shapes");
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t c = 0; c < ys.c; ++c)
      for (int64_t p = 0; p < ys.h; ++p)
        for (int64_t q = 0; q < ys.w; ++q) d(y)[at(ys, n, c, p, q)] = d(x)[window_argmax(x, ys, n, c, p, q, g)];
}

void ReferenceBackend::maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) {
  require_same(x, dx, "maxpool dx");
  const Shape& ys = dy.shape();
  fill(dx, 0);
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t c = 0; c < ys.c; ++c)
      for (int64_t p = 0; p < ys.h; ++p)
        for (int64_t q = 0; q < ys.w; ++q)
          d(dx)[window_argmax(x, ys, n, c, p, q, g)] += d(dy)[at(ys, n, c, p, q)];
}

void ReferenceBackend::global_avgpool_forward(const Tensor& x, Tensor& y) {
  const Shape& s = x.shape();
  SB_CHECK(y.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool y");
  for (int64_t i = 0; i < s.n * s.c; ++i) {
    double sum = 0;
    for (int64_t e = 0; e < s.h * s.w; ++e) sum += d(x)[i * s.h * s.w + e];
    d(y)[i] = sum / static_cast<double>(s.h * s.w);
  }
}

void ReferenceBackend::global_avgpool_backward(const Tensor& dy, Tensor& dx) {
  const Shape& s = dx.shape();
  SB_CHECK(dy.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool dy");
  for (int64_t i = 0; i < s.n * s.c; ++i)
    for (int64_t e = 0; e < s.h * s.w; ++e) d(dx)[i * s.h * s.w + e] = d(dy)[i] / static_cast<double>(s.h * s.w);
}

void ReferenceBackend::fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const int64_t batch = x.shape().n, inputs = x.count() / batch, outputs = w.shape().n;
  SB_CHECK(w.count() == outputs * inputs && b.count() == outputs && y.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < outputs; ++o) {
      double sum = d(b)[o];
      for (int64_t i = 0; i < inputs; ++i) sum += d(x)[n * inputs + i] * d(w)[o * inputs + i];
      d(y)[n * outputs + o] = sum;
    }
}

void ReferenceBackend::fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const int64_t batch = dx.shape().n, inputs = dx.count() / batch, outputs = w.shape().n;
  SB_CHECK(dy.count() == batch * outputs && w.count() == outputs * inputs, "fc shapes");
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < inputs; ++i) {
      double sum = 0;
      for (int64_t o = 0; o < outputs; ++o) sum += d(dy)[n * outputs + o] * d(w)[o * inputs + i];
      d(dx)[n * inputs + i] = sum;
    }
}

void ReferenceBackend::fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  const int64_t batch = x.shape().n, inputs = x.count() / batch, outputs = dw.shape().n;
  SB_CHECK(dy.count() == batch * outputs && dw.count() == outputs * inputs && db.count() == outputs, "fc shapes");
  for (int64_t o = 0; o < outputs; ++o) {
    double bias = 0;
    for (int64_t n = 0; n < batch; ++n) bias += d(dy)[n * outputs + o];
    d(db)[o] = bias;
    for (int64_t i = 0; i < inputs; ++i) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n) sum += d(dy)[n * outputs + o] * d(x)[n * inputs + i];
      d(dw)[o * inputs + i] = sum;
    }
  }
}

void ReferenceBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  require_same(a, b, "add");
  require_same(a, y, "add");
  for (int64_t i = 0; i < a.count(); ++i) d(y)[i] = d(a)[i] + d(b)[i];
}

void ReferenceBackend::scale(Tensor& t, float factor) {
  for (int64_t i = 0; i < t.count(); ++i) d(t)[i] *= factor;
}

void ReferenceBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  require_same(x, y, "axpby");
  for (int64_t i = 0; i < x.count(); ++i) d(y)[i] = static_cast<double>(a) * d(x)[i] + static_cast<double>(b) * d(y)[i];
}

double ReferenceBackend::sum_of_squares(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.count(); ++i) sum += d(t)[i] * d(t)[i];
  return sum;
}

void ReferenceBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                             float label_smoothing, Tensor& dlogits, Tensor& loss) {
  require_same(logits, dlogits, "cross entropy");
  const int64_t batch = logits.shape().n, classes = logits.count() / batch;
  SB_CHECK(static_cast<int64_t>(labels.size()) == batch, "one label per sample");
  SB_CHECK(loss.count() == 1, "the loss is one element");
  *d(loss) = softmax_cross_entropy_rows(d(logits), labels.data(), batch, classes, label_smoothing, d(dlogits));
}

void ReferenceBackend::sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) {
  SB_CHECK(sums.count() == static_cast<int64_t>(tensors.size()), "one sum per tensor");
  for (size_t i = 0; i < tensors.size(); ++i) d(sums)[i] = sum_of_squares(*tensors[i]);
}

void ReferenceBackend::momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) {
  require_same(w, g, "update");
  require_same(w, v, "update");
  // Rates from a tensor come as the fp32 values a device would hold.
  if (step.rates && d(*step.rates)[step_rate::apply] == 0) return;
  float lr = step.rates ? static_cast<float>(d(*step.rates)[step_rate::lr]) : step.lr;
  const float grad_scale = step.rates ? static_cast<float>(d(*step.rates)[step_rate::grad_scale]) : step.grad_scale;
  const float momentum_scale =
      step.rates ? static_cast<float>(d(*step.rates)[step_rate::momentum_scale]) : step.momentum_scale;
  if (const Tensor* norms = step.trust_norms)
    lr = lars_rate(lr, d(*norms)[step.trust_index], d(*norms)[step.trust_index + 1], grad_scale, step.trust_eta,
                   step.weight_decay);
  for (int64_t i = 0; i < w.count(); ++i)
    momentum_element<double>(d(w)[i], d(g)[i] * grad_scale, d(v)[i], lr, step.momentum, momentum_scale,
                             step.weight_decay, step.nesterov);
}

}  // namespace sb::models
