// Every operation of the oneDNN backend against the naive reference backend (double accumulation)
// on random shapes and data: forward and every backward output. The tolerance is a relative
// error, max |onednn - reference| / max |reference|, stated per op below: fp32 accumulation over
// at most a few thousand terms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "models/onednn_backend.hpp"
#include "models/reference_backend.hpp"

namespace sb::models {
namespace {

constexpr double kTolerance = 2e-5;

struct Pair {
  OnednnBackend onednn{0};
  ReferenceBackend reference;
  std::mt19937 random{12345};

  // The same random tensor in both backends.
  std::pair<Tensor, Tensor> random_tensor(Shape shape, float low = -1, float high = 1) {
    std::uniform_real_distribution<float> dist(low, high);
    std::vector<float> host(static_cast<size_t>(shape.count()));
    for (float& v : host) v = dist(random);
    return from_host(shape, host);
  }
  std::pair<Tensor, Tensor> from_host(Shape shape, const std::vector<float>& host) {
    Tensor a = onednn.allocate(shape), b = reference.allocate(shape);
    onednn.write(a, host);
    reference.write(b, host);
    return {a, b};
  }
  std::pair<Tensor, Tensor> zeros(Shape shape) { return {onednn.allocate(shape), reference.allocate(shape)}; }
};

// max |a - b| / max |b|, with the reference b read in float.
double relative_error(Pair& p, const std::pair<Tensor, Tensor>& t) {
  const std::vector<float> a = read_all(p.onednn, t.first), b = read_all(p.reference, t.second);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

struct ConvCase {
  Shape x;
  int out_channels, kernel, stride, pad;
};

TEST(BackendLayers, ConvolutionForwardAndBackwardMatchReference) {
  Pair p;
  // The ResNet shapes (3x3/1, 3x3/2, 1x1/1, 1x1/2 projections, the 7x7/2 stem), then random ones.
  std::vector<ConvCase> cases = {
      {{2, 3, 9, 9}, 8, 3, 1, 1},   {{3, 16, 8, 8}, 16, 3, 2, 1}, {{2, 8, 7, 7}, 32, 1, 1, 0},
      {{2, 32, 6, 6}, 16, 1, 2, 0}, {{1, 3, 23, 23}, 8, 7, 2, 3}, {{4, 5, 5, 5}, 6, 3, 1, 0},
  };
  std::mt19937 shapes(2026);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(shapes); };
  while (cases.size() < 14) {
    const int kernel = 2 * pick(0, 3) + 1, stride = pick(1, 2), pad = pick(0, kernel / 2);
    ConvCase c{{pick(1, 3), pick(1, 19), pick(kernel, 13), pick(kernel, 13)}, pick(1, 21), kernel, stride, pad};
    cases.push_back(c);
  }
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.x.str() + " k" + std::to_string(c.out_channels) + " r" + std::to_string(c.kernel) + " s" +
                 std::to_string(c.stride));
    const ConvGeometry g{c.stride, c.pad};
    const Shape ws{c.out_channels, c.x.c, c.kernel, c.kernel};
    const Shape ys{c.x.n, c.out_channels, window_output(c.x.h, c.kernel, c.stride, c.pad),
                   window_output(c.x.w, c.kernel, c.stride, c.pad)};
    auto x = p.random_tensor(c.x), w = p.random_tensor(ws), dy = p.random_tensor(ys);
    auto y = p.zeros(ys), dx = p.zeros(c.x), dw = p.zeros(ws);
    p.onednn.conv_forward(x.first, w.first, y.first, g);
    p.reference.conv_forward(x.second, w.second, y.second, g);
    EXPECT_LT(relative_error(p, y), kTolerance) << "forward";
    p.onednn.conv_backward_data(dy.first, w.first, dx.first, g);
    p.reference.conv_backward_data(dy.second, w.second, dx.second, g);
    EXPECT_LT(relative_error(p, dx), kTolerance) << "backward data";
    p.onednn.conv_backward_weights(x.first, dy.first, dw.first, g);
    p.reference.conv_backward_weights(x.second, dy.second, dw.second, g);
    EXPECT_LT(relative_error(p, dw), kTolerance) << "backward weights";
  }
}

TEST(BackendLayers, BatchnormTrainingInferenceAndBackwardMatchReference) {
  Pair p;
  const float epsilon = 1e-5f;
  std::mt19937 shapes(77);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(shapes); };
  std::vector<Shape> cases = {Shape{4, 3, 5, 5}, Shape{2, 16, 4, 4}, Shape{8, 10, 1, 1}};
  for (int i = 0; i < 3; ++i) cases.push_back(Shape{pick(1, 6), pick(1, 40), pick(1, 9), pick(1, 9)});
  for (const Shape s : cases) {
    if (s.n * s.h * s.w < 2) continue;  // a batch variance needs two values
    // Plain, with the ReLU fused, and with a residual added before it (a residual block's last BN).
    for (int variant = 0; variant < 3; ++variant) {
      const bool relu = variant > 0, with_residual = variant == 2;
      SCOPED_TRACE(s.str() + (relu ? " relu" : "") + (with_residual ? " residual" : ""));
      const Shape v = vector_shape(s.c);
      auto x = p.random_tensor(s, -2, 3), gamma = p.random_tensor(v, 0.5, 1.5), beta = p.random_tensor(v);
      auto dy = p.random_tensor(s), residual = p.random_tensor(s, -1, 1);
      const Tensor* residual_onednn = with_residual ? &residual.first : nullptr;
      const Tensor* residual_reference = with_residual ? &residual.second : nullptr;
      auto y = p.zeros(s), mean = p.zeros(v), variance = p.zeros(v);
      p.onednn.batchnorm_forward_training(x.first, gamma.first, beta.first, y.first, mean.first, variance.first,
                                          epsilon, relu, residual_onednn);
      p.reference.batchnorm_forward_training(x.second, gamma.second, beta.second, y.second, mean.second, variance.second,
                                             epsilon, relu, residual_reference);
      EXPECT_LT(relative_error(p, y), kTolerance) << "training forward";
      EXPECT_LT(relative_error(p, mean), kTolerance) << "batch mean";
      EXPECT_LT(relative_error(p, variance), kTolerance) << "batch variance";
      if (with_residual) {  // the reference's own meaning: max(0, bn(x) + residual)
        auto plain = p.zeros(s), scratch_mean = p.zeros(v), scratch_variance = p.zeros(v);
        p.reference.batchnorm_forward_training(x.second, gamma.second, beta.second, plain.second, scratch_mean.second,
                                               scratch_variance.second, epsilon, false, nullptr);
        const std::vector<float> fused = read_all(p.reference, y.second), bn = read_all(p.reference, plain.second),
                                 r = read_all(p.reference, residual.second);
        for (size_t i = 0; i < fused.size(); ++i) ASSERT_NEAR(fused[i], std::max(bn[i] + r[i], 0.0f), 1e-6) << i;
      }

      // With a residual the block masks dy itself: the BN's backward takes no y.
      const bool mask = relu && !with_residual;
      auto dx = p.zeros(s), dgamma = p.zeros(v), dbeta = p.zeros(v);
      p.onednn.batchnorm_backward(x.first, dy.first, gamma.first, mean.first, variance.first, mask ? &y.first : nullptr,
                                  dx.first, dgamma.first, dbeta.first, epsilon);
      p.reference.batchnorm_backward(x.second, dy.second, gamma.second, mean.second, variance.second,
                                     mask ? &y.second : nullptr, dx.second, dgamma.second, dbeta.second, epsilon);
      EXPECT_LT(relative_error(p, dx), 1e-4) << "backward data";
      EXPECT_LT(relative_error(p, dgamma), kTolerance) << "backward gamma";
      EXPECT_LT(relative_error(p, dbeta), kTolerance) << "backward beta";

      auto running_mean = p.random_tensor(v), running_var = p.random_tensor(v, 0.5, 2);
      auto z = p.zeros(s);
      p.onednn.batchnorm_forward_inference(x.first, gamma.first, beta.first, running_mean.first, running_var.first,
                                           z.first, epsilon, relu, residual_onednn);
      p.reference.batchnorm_forward_inference(x.second, gamma.second, beta.second, running_mean.second,
                                              running_var.second, z.second, epsilon, relu, residual_reference);
      EXPECT_LT(relative_error(p, z), kTolerance) << "inference forward";
    }
  }
}

TEST(BackendLayers, PoolingReluAddMatchReference) {
  Pair p;
  const Shape xs{2, 6, 9, 9};
  const PoolGeometry g{3, 2, 1};
  const Shape ys{2, 6, window_output(9, 3, 2, 1), window_output(9, 3, 2, 1)};
  auto x = p.random_tensor(xs), dy = p.random_tensor(ys);
  auto y = p.zeros(ys), dx = p.zeros(xs);
  p.onednn.maxpool_forward(x.first, y.first, g);
  p.reference.maxpool_forward(x.second, y.second, g);
  EXPECT_EQ(relative_error(p, y), 0) << "max pool forward";
  p.onednn.maxpool_backward(x.first, dy.first, dx.first, g);
  p.reference.maxpool_backward(x.second, dy.second, dx.second, g);
  EXPECT_LT(relative_error(p, dx), 1e-6) << "max pool backward";

  const Shape pooled{2, 6, 1, 1};
  auto avg = p.zeros(pooled), davg = p.random_tensor(pooled), dx2 = p.zeros(xs);
  p.onednn.global_avgpool_forward(x.first, avg.first);
  p.reference.global_avgpool_forward(x.second, avg.second);
  EXPECT_LT(relative_error(p, avg), kTolerance) << "average pool forward";
  p.onednn.global_avgpool_backward(davg.first, dx2.first);
  p.reference.global_avgpool_backward(davg.second, dx2.second);
  EXPECT_LT(relative_error(p, dx2), kTolerance) << "average pool backward";

  auto r = p.zeros(xs), dr = p.zeros(xs);
  p.onednn.relu_forward(x.first, r.first);
  p.reference.relu_forward(x.second, r.second);
  EXPECT_EQ(relative_error(p, r), 0) << "relu forward";
  auto grad = p.random_tensor(xs);
  p.onednn.relu_backward(r.first, grad.first, dr.first);
  p.reference.relu_backward(r.second, grad.second, dr.second);
  EXPECT_EQ(relative_error(p, dr), 0) << "relu backward";

  auto sum = p.zeros(xs);
  p.onednn.add(x.first, grad.first, sum.first);
  p.reference.add(x.second, grad.second, sum.second);
  EXPECT_EQ(relative_error(p, sum), 0) << "add";
  p.onednn.axpby(0.5f, x.first, -2.0f, sum.first);
  p.reference.axpby(0.5f, x.second, -2.0f, sum.second);
  EXPECT_LT(relative_error(p, sum), 1e-7) << "axpby";
  EXPECT_NEAR(p.onednn.sum_of_squares(x.first), p.reference.sum_of_squares(x.second),
              1e-6 * p.reference.sum_of_squares(x.second));
}

TEST(BackendLayers, FullyConnectedAndLossMatchReference) {
  Pair p;
  const int64_t batch = 5, inputs = 37, outputs = 11;
  auto x = p.random_tensor({batch, inputs, 1, 1}), w = p.random_tensor({outputs, inputs, 1, 1});
  auto b = p.random_tensor(vector_shape(outputs)), y = p.zeros({batch, outputs, 1, 1});
  p.onednn.fc_forward(x.first, w.first, b.first, y.first);
  p.reference.fc_forward(x.second, w.second, b.second, y.second);
  EXPECT_LT(relative_error(p, y), kTolerance) << "fc forward";

  const std::vector<int32_t> labels = {0, 3, 10, 7, 3};
  auto dy = p.zeros({batch, outputs, 1, 1});
  const double loss = softmax_cross_entropy_now(p.onednn, y.first, labels, 0.1f, dy.first);
  const double reference_loss = softmax_cross_entropy_now(p.reference, y.second, labels, 0.1f, dy.second);
  EXPECT_NEAR(loss, reference_loss, 1e-5 * reference_loss);
  EXPECT_LT(relative_error(p, dy), kTolerance) << "loss gradient";

  auto dx = p.zeros({batch, inputs, 1, 1}), dw = p.zeros({outputs, inputs, 1, 1}), db = p.zeros(vector_shape(outputs));
  p.onednn.fc_backward_data(dy.first, w.first, dx.first);
  p.reference.fc_backward_data(dy.second, w.second, dx.second);
  EXPECT_LT(relative_error(p, dx), kTolerance) << "fc backward data";
  p.onednn.fc_backward_weights(x.first, dy.first, dw.first, db.first);
  p.reference.fc_backward_weights(x.second, dy.second, dw.second, db.second);
  EXPECT_LT(relative_error(p, dw), kTolerance) << "fc backward weights";
  EXPECT_LT(relative_error(p, db), kTolerance) << "fc backward bias";
}

TEST(BackendLayers, LossOfUniformLogitsIsLogClasses) {
  ReferenceBackend r;
  Tensor logits = r.allocate({2, 10, 1, 1}), grad = r.allocate({2, 10, 1, 1});
  const std::vector<int32_t> labels = {4, 9};
  EXPECT_NEAR(softmax_cross_entropy_now(r, logits, labels, 0.0f, grad), std::log(10.0), 1e-12);
  // Gradient of the mean: (1/10 - onehot) / batch.
  EXPECT_NEAR(ReferenceBackend::data(grad)[4], (0.1 - 1) / 2, 1e-12);
  EXPECT_NEAR(ReferenceBackend::data(grad)[5], 0.1 / 2, 1e-12);
}

TEST(BackendLayers, LayoutRoundTripsThroughWriteAndRead) {
  OnednnBackend b;
  const Shape s{2, 3, 4, 5};
  std::vector<float> in(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  Tensor t = b.allocate(s);
  b.write(t, in);
  // Channels-last inside: element (n=0, c=1, h=0, w=0) is the second float in memory.
  EXPECT_EQ(t.as<float>()[1], in[20]);
  std::vector<float> out(in.size());
  b.read(t, out);
  EXPECT_EQ(in, out);
}

}  // namespace
}  // namespace sb::models
