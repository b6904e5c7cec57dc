// Every backend against a reference backend on the same inputs, one suite for all of them: each
// layer forward and backward, the element-wise ops and sums, the optimizer's update, the layout
// and prefetch paths of write(), and two training steps of a small ResNet. The pairs:
//   Host/...:  oneDNN against the naive reference backend (double accumulation);
//   Cudnn/...: cuDNN at fp32, tf32, fp16 and bf16 against oneDNN (CUDA builds with a GPU;
//              skipped otherwise; gpu-check's unit stage runs them by the name Cudnn).
// So the tests the GPU runs are the ones that run here on every build, with only the tolerance
// changed. The error measure is max |candidate - reference| / max |reference|. A pair's tolerance
// is what its rounding allows for one layer (oneDNN: fp32 accumulation over a few thousand terms;
// cuDNN fp32: accumulation order; tf32: 10-bit products; fp16/bf16: 11/8-bit storage of every
// input and output), far below the O(1) error of a wrong index or formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "models/backend.hpp"
#include "models/data/host_memory.hpp"
#include "models/onednn_backend.hpp"
#include "models/optimizer.hpp"
#include "models/reference_backend.hpp"
#include "models/resnet.hpp"
#include "tests/unit/gpu_skip.hpp"

namespace sb::models {
namespace {

struct BackendPair {
  const char* name;       // the test name's suffix
  const char* candidate;  // make_backend's names
  const char* reference;
  Precision precision;  // the candidate's
  double tolerance;     // one layer's relative error
  // Batch norm's input gradient subtracts two sums from dy: it loses more than the other layers.
  double batchnorm_dx_tolerance;
  bool on_gpu;  // the candidate needs a GPU (and copies batches ahead)
};

// `count` values drawn uniformly from [low, high).
std::vector<float> uniform_values(int64_t count, std::mt19937& random, float low, float high) {
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = dist(random);
  return values;
}

// Whether the candidate stores activations in fp32: then copies, max, ReLU and additions are
// exact, and sums of a few dozen terms agree to fp32's rounding.
bool fp32_storage(const BackendPair& pair) {
  return pair.precision == Precision::fp32 || pair.precision == Precision::tf32;
}

class BackendConformance : public ::testing::TestWithParam<BackendPair> {
 protected:
  void SetUp() override {
    if (GetParam().on_gpu) SB_SKIP_WITHOUT_GPU();
    candidate = make_backend(GetParam().candidate, {0, GetParam().precision});
    reference = make_backend(GetParam().reference, {0, Precision::fp32});
  }

  // The same random tensor in both backends: first the candidate's, second the reference's.
  std::pair<Tensor, Tensor> random_tensor(Shape shape, float low = -1, float high = 1) {
    return from_host(shape, uniform_values(shape.count(), random, low, high));
  }
  std::pair<Tensor, Tensor> from_host(Shape shape, const std::vector<float>& host) {
    Tensor a = candidate->allocate(shape), b = reference->allocate(shape);
    candidate->write(a, host);
    reference->write(b, host);
    return {a, b};
  }
  std::pair<Tensor, Tensor> zeros(Shape shape) { return {candidate->allocate(shape), reference->allocate(shape)}; }

  // max |candidate - reference| / max |reference|, infinite where the candidate is not finite.
  double relative_error(const std::pair<Tensor, Tensor>& t) {
    const std::vector<float> a = read_all(*candidate, t.first), b = read_all(*reference, t.second);
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(a[i])) return INFINITY;
      diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    }
    return scale > 0 ? diff / scale : diff;
  }

  double tol() const { return GetParam().tolerance; }
  // An op with no accumulation (copy, max, ReLU, add): exact in fp32 storage.
  double exact_or_tol() const { return fp32_storage(GetParam()) ? 0 : tol(); }
  // A short sum or one fused multiply-add per element: fp32's rounding in fp32 storage.
  double rounding_or_tol() const { return fp32_storage(GetParam()) ? 1e-6 : tol(); }

  std::unique_ptr<Backend> candidate, reference;
  std::mt19937 random{4321};
};

struct ConvCase {
  Shape x;
  int out_channels, kernel, stride, pad;
};

TEST_P(BackendConformance, ConvolutionForwardAndBackward) {
  // The ResNet shapes (3x3/1, 3x3/2, 1x1/1, 1x1/2, the 7x7/2 stem), a single-output filter (an
  // fp32 vector under 16-bit precision), ragged ones, and random ones.
  std::vector<ConvCase> cases = {
      {{2, 3, 9, 9}, 8, 3, 1, 1},   {{3, 16, 8, 8}, 16, 3, 2, 1}, {{2, 8, 7, 7}, 32, 1, 1, 0},
      {{2, 32, 6, 6}, 16, 1, 2, 0}, {{2, 3, 23, 23}, 8, 7, 2, 3}, {{2, 5, 5, 5}, 1, 1, 1, 0},
      {{4, 5, 11, 7}, 6, 3, 1, 0},  {{4, 5, 5, 5}, 6, 3, 1, 0},
  };
  std::mt19937 shapes(2026);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(shapes); };
  while (cases.size() < 16) {
    const int kernel = 2 * pick(0, 3) + 1, stride = pick(1, 2), pad = pick(0, kernel / 2);
    cases.push_back({{pick(1, 3), pick(1, 19), pick(kernel, 13), pick(kernel, 13)}, pick(1, 21), kernel, stride, pad});
  }
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.x.str() + " k" + std::to_string(c.out_channels) + " r" + std::to_string(c.kernel) + " s" +
                 std::to_string(c.stride) + " p" + std::to_string(c.pad));
    const ConvGeometry g{c.stride, c.pad};
    const Shape ws{c.out_channels, c.x.c, c.kernel, c.kernel};
    const Shape ys{c.x.n, c.out_channels, window_output(c.x.h, c.kernel, c.stride, c.pad),
                   window_output(c.x.w, c.kernel, c.stride, c.pad)};
    auto x = random_tensor(c.x), w = random_tensor(ws), dy = random_tensor(ys);
    auto y = zeros(ys), dx = zeros(c.x), dw = zeros(ws);
    candidate->conv_forward(x.first, w.first, y.first, g);
    reference->conv_forward(x.second, w.second, y.second, g);
    EXPECT_LT(relative_error(y), tol()) << "forward";
    candidate->conv_backward_data(dy.first, w.first, dx.first, g);
    reference->conv_backward_data(dy.second, w.second, dx.second, g);
    EXPECT_LT(relative_error(dx), tol()) << "backward data";
    candidate->conv_backward_weights(x.first, dy.first, dw.first, g);
    reference->conv_backward_weights(x.second, dy.second, dw.second, g);
    EXPECT_LT(relative_error(dw), tol()) << "backward weights";
  }
}

TEST_P(BackendConformance, BatchnormTrainingInferenceAndBackward) {
  const float epsilon = 1e-5f;
  std::mt19937 shapes(77);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(shapes); };
  // 70 channels: three column blocks of the GPU's per-channel reduction, the last one ragged.
  std::vector<Shape> cases = {Shape{4, 3, 5, 5}, Shape{2, 16, 4, 4}, Shape{2, 70, 6, 6}, Shape{8, 10, 1, 1}};
  for (int i = 0; i < 3; ++i) cases.push_back(Shape{pick(1, 6), pick(1, 40), pick(1, 9), pick(1, 9)});
  for (const Shape s : cases) {
    if (s.n * s.h * s.w < 2) continue;  // a batch variance needs two values
    // Plain, with the ReLU fused, and with a residual added before it (a residual block's last BN).
    for (int variant = 0; variant < 3; ++variant) {
      const bool relu = variant > 0, with_residual = variant == 2;
      SCOPED_TRACE(s.str() + (relu ? " relu" : "") + (with_residual ? " residual" : ""));
      const Shape v = vector_shape(s.c);
      auto x = random_tensor(s, -2, 3), gamma = random_tensor(v, 0.5, 1.5), beta = random_tensor(v);
      auto dy = random_tensor(s), residual = random_tensor(s, -1, 1);
      const Tensor* candidate_residual = with_residual ? &residual.first : nullptr;
      const Tensor* reference_residual = with_residual ? &residual.second : nullptr;
      auto y = zeros(s), mean = zeros(v), variance = zeros(v);
      candidate->batchnorm_forward_training(x.first, gamma.first, beta.first, y.first, mean.first, variance.first,
                                            epsilon, relu, candidate_residual);
      reference->batchnorm_forward_training(x.second, gamma.second, beta.second, y.second, mean.second,
                                            variance.second, epsilon, relu, reference_residual);
      EXPECT_LT(relative_error(y), tol()) << "training forward";
      EXPECT_LT(relative_error(mean), tol()) << "batch mean";
      EXPECT_LT(relative_error(variance), tol()) << "batch variance";

      // With a residual the block masks dy itself: the BN's backward takes no y.
      const bool mask = relu && !with_residual;
      auto dx = zeros(s), dgamma = zeros(v), dbeta = zeros(v);
      candidate->batchnorm_backward(x.first, dy.first, gamma.first, mean.first, variance.first,
                                    mask ? &y.first : nullptr, dx.first, dgamma.first, dbeta.first, epsilon);
      reference->batchnorm_backward(x.second, dy.second, gamma.second, mean.second, variance.second,
                                    mask ? &y.second : nullptr, dx.second, dgamma.second, dbeta.second, epsilon);
      EXPECT_LT(relative_error(dx), GetParam().batchnorm_dx_tolerance) << "backward data";
      EXPECT_LT(relative_error(dgamma), tol()) << "backward gamma";
      EXPECT_LT(relative_error(dbeta), tol()) << "backward beta";

      auto running_mean = random_tensor(v), running_var = random_tensor(v, 0.5, 2), z = zeros(s);
      candidate->batchnorm_forward_inference(x.first, gamma.first, beta.first, running_mean.first, running_var.first,
                                             z.first, epsilon, relu, candidate_residual);
      reference->batchnorm_forward_inference(x.second, gamma.second, beta.second, running_mean.second,
                                             running_var.second, z.second, epsilon, relu, reference_residual);
      EXPECT_LT(relative_error(z), tol()) << "inference forward";
    }
  }
}

TEST_P(BackendConformance, PoolingActivationsAndSums) {
  const Shape xs{2, 6, 9, 9};
  auto x = random_tensor(xs);
  // ResNet's 3 x 3 stride 2 (overlapping windows) and 2 x 2 stride 2; random values, and small
  // integers, whose ties must go to the same input as the reference's (the first in the window).
  for (const PoolGeometry g : {PoolGeometry{3, 2, 1}, PoolGeometry{2, 2, 0}}) {
    for (bool ties : {false, true}) {
      SCOPED_TRACE("maxpool " + std::to_string(g.kernel) + (ties ? " ties" : ""));
      auto pooled_input = ties ? random_tensor(xs, 0, 3) : random_tensor(xs);
      if (ties) {
        std::vector<float> values = read_all(*reference, pooled_input.second);
        for (float& v : values) v = std::floor(v);
        pooled_input = from_host(xs, values);
      }
      const Shape ys{2, 6, window_output(9, g.kernel, g.stride, g.pad), window_output(9, g.kernel, g.stride, g.pad)};
      auto dy = random_tensor(ys), y = zeros(ys), dx = zeros(xs);
      candidate->maxpool_forward(pooled_input.first, y.first, g);
      reference->maxpool_forward(pooled_input.second, y.second, g);
      EXPECT_LE(relative_error(y), ties ? 0 : exact_or_tol()) << "max pool forward";
      // 16-bit rounding can make two values of a window equal and move the maximum: checked in
      // fp32 storage, or where the values are small integers (exact in every type). Overlapping
      // windows add their gradients in an order of the backend's own.
      candidate->maxpool_backward(pooled_input.first, dy.first, dx.first, g);
      reference->maxpool_backward(pooled_input.second, dy.second, dx.second, g);
      if (fp32_storage(GetParam()) || ties) {
        EXPECT_LT(relative_error(dx), rounding_or_tol()) << "max pool backward";
      }
    }
  }

  const Shape pooled{2, 6, 1, 1};
  auto avg = zeros(pooled), davg = random_tensor(pooled), dx = zeros(xs);
  candidate->global_avgpool_forward(x.first, avg.first);
  reference->global_avgpool_forward(x.second, avg.second);
  EXPECT_LT(relative_error(avg), rounding_or_tol()) << "average pool forward";
  candidate->global_avgpool_backward(davg.first, dx.first);
  reference->global_avgpool_backward(davg.second, dx.second);
  EXPECT_LT(relative_error(dx), rounding_or_tol()) << "average pool backward";

  auto r = zeros(xs), dr = zeros(xs), grad = random_tensor(xs), sum = zeros(xs);
  candidate->relu_forward(x.first, r.first);
  reference->relu_forward(x.second, r.second);
  EXPECT_LE(relative_error(r), exact_or_tol()) << "relu forward";
  candidate->relu_backward(r.first, grad.first, dr.first);
  reference->relu_backward(r.second, grad.second, dr.second);
  EXPECT_LE(relative_error(dr), exact_or_tol()) << "relu backward";
  candidate->add(x.first, grad.first, sum.first);
  reference->add(x.second, grad.second, sum.second);
  EXPECT_LE(relative_error(sum), exact_or_tol()) << "add";
  candidate->axpby(0.5f, x.first, -2.0f, sum.first);
  reference->axpby(0.5f, x.second, -2.0f, sum.second);
  EXPECT_LT(relative_error(sum), rounding_or_tol()) << "axpby";
  auto copied = zeros(xs);
  candidate->copy(x.first, copied.first);
  reference->copy(x.second, copied.second);
  EXPECT_LE(relative_error(copied), exact_or_tol()) << "copy";
  const double squares = reference->sum_of_squares(x.second);
  EXPECT_NEAR(candidate->sum_of_squares(x.first), squares, rounding_or_tol() * squares);

  // The batched form runs the same deterministic sums, so it gives the same bits, empty arrays too.
  const Tensor empty = candidate->allocate({0, 3, 1, 1});
  const std::vector<const Tensor*> three = {&x.first, &empty, &grad.first};
  const std::vector<double> sums = candidate->sums_of_squares(three);
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums[0], candidate->sum_of_squares(x.first));
  EXPECT_EQ(sums[1], 0.0);
  EXPECT_EQ(sums[2], candidate->sum_of_squares(grad.first));
  // The overflow check of a recorded fp16 step, and the loss scale read from a tensor.
  Tensor flags = candidate->allocate({1, 3, 1, 1});
  candidate->write(flags, std::vector<float>{5, 0, 4});
  candidate->all_finite_into(three, flags, 1);
  EXPECT_EQ(read_all(*candidate, flags), (std::vector<float>{5, 1, 4}));
  std::vector<float> with_nan = read_all(*candidate, grad.first);
  with_nan[with_nan.size() / 2] = std::nanf("");
  candidate->write(grad.first, with_nan);
  candidate->all_finite_into(std::vector<const Tensor*>{&x.first, &grad.first}, flags, 2);
  EXPECT_EQ(read_all(*candidate, flags), (std::vector<float>{5, 1, 0}));
  auto scaled = random_tensor(xs);
  candidate->scale_by(scaled.first, flags, 0);
  reference->scale(scaled.second, 5.0f);
  EXPECT_LT(relative_error(scaled), rounding_or_tol()) << "scale_by";
}

TEST_P(BackendConformance, FullyConnectedAndLoss) {
  // Batch 1 makes (1, K, 1, 1) inputs: fp32 vectors that a 16-bit GEMM must convert.
  for (int64_t batch : {5, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const int64_t inputs = 37, outputs = 11;
    auto x = random_tensor({batch, inputs, 1, 1}), w = random_tensor({outputs, inputs, 1, 1});
    auto b = random_tensor(vector_shape(outputs)), y = zeros({batch, outputs, 1, 1});
    candidate->fc_forward(x.first, w.first, b.first, y.first);
    reference->fc_forward(x.second, w.second, b.second, y.second);
    EXPECT_LT(relative_error(y), tol()) << "fc forward";

    std::vector<int32_t> labels = {0, 3, 10, 7, 3};
    labels.resize(static_cast<size_t>(batch));
    auto dy = zeros({batch, outputs, 1, 1});
    const double loss = softmax_cross_entropy_now(*candidate, y.first, labels, 0.1f, dy.first);
    const double reference_loss = softmax_cross_entropy_now(*reference, y.second, labels, 0.1f, dy.second);
    EXPECT_NEAR(loss, reference_loss, tol() * reference_loss);
    EXPECT_LT(relative_error(dy), tol()) << "loss gradient";

    auto dx = zeros({batch, inputs, 1, 1}), dw = zeros({outputs, inputs, 1, 1}), db = zeros(vector_shape(outputs));
    candidate->fc_backward_data(dy.first, w.first, dx.first);
    reference->fc_backward_data(dy.second, w.second, dx.second);
    EXPECT_LT(relative_error(dx), tol()) << "fc backward data";
    candidate->fc_backward_weights(x.first, dy.first, dw.first, db.first);
    reference->fc_backward_weights(x.second, dy.second, dw.second, db.second);
    EXPECT_LT(relative_error(dw), tol()) << "fc backward weights";
    EXPECT_LT(relative_error(db), tol()) << "fc backward bias";
  }
}

// 100 small steps move the weights by amounts a 16-bit copy could not accumulate: a 16-bit
// candidate keeps fp32 masters, which still match the reference's fp32 update, through a tenfold
// cut of the rate with its momentum correction.
TEST_P(BackendConformance, MomentumUpdatesRunOnFp32Values) {
  const Shape s{16, 8, 3, 3};
  auto w = random_tensor(s), g = random_tensor(s, -1e-3f, 1e-3f), v = zeros(s);
  candidate->keep_fp32_master(w.first);
  candidate->keep_fp32_master(v.first);
  // Both sides start from the same (possibly 16-bit-rounded) weights.
  reference->write(w.second, read_all(*candidate, w.first));
  MomentumStep step;
  step.weight_decay = 1e-4f;
  for (int i = 0; i < 100; ++i) {
    step.lr = i < 50 ? 0.01f : 0.001f;
    step.momentum_scale = i == 50 ? 0.1f : 1.0f;
    candidate->momentum_update(w.first, g.first, v.first, step);
    reference->momentum_update(w.second, g.second, v.second, step);
  }
  // What differs: the gradient's 16-bit storage, and the rounding of the weights to fp32 at each
  // step (the reference backend keeps doubles: up to 100 x 2^-24 = 6e-6 of the largest weight).
  const Precision precision = GetParam().precision;
  const double tolerance = precision == Precision::bf16 ? 1e-3 : precision == Precision::fp16 ? 1e-4 : 1e-5;
  EXPECT_LT(relative_error(w), tolerance);
  EXPECT_LT(relative_error(v), 10 * tolerance);
  // write + read of a master is exact.
  std::vector<float> values(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f + static_cast<float>(i) * 1e-6f;
  candidate->write(w.first, values);
  EXPECT_EQ(read_all(*candidate, w.first), values);
}

TEST_P(BackendConformance, LayoutRoundTripsThroughWriteAndRead) {
  const Shape s{2, 3, 4, 5};
  std::vector<float> in(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);  // exact in every type
  Tensor t = candidate->allocate(s);
  candidate->write(t, in);
  EXPECT_EQ(read_all(*candidate, t), in);
}

// A batch prefetched from the backend's input memory reaches the tensor as a plain write does; a
// write of other data after it is not mistaken for the prefetched one. (A host backend's prefetch
// does nothing, and its write reads the batch itself.)
TEST_P(BackendConformance, PrefetchedWriteMatchesAPlainWrite) {
  EXPECT_EQ(candidate->copies_ahead(), GetParam().on_gpu);
  const Shape s{3, 3, 8, 8};
  const size_t n = static_cast<size_t>(s.count());
  HostFloats pinned(n, 0.0f, HostAllocator<float>(candidate->input_memory()));
  std::vector<float> other(n);
  for (size_t i = 0; i < n; ++i) {
    pinned[i] = static_cast<float>(i % 251);  // exact in every type
    other[i] = static_cast<float>((i * 7) % 113);
  }
  Tensor t = candidate->allocate(s);
  for (int round = 0; round < 2; ++round) {  // the second reuses the prefetch buffer
    candidate->prefetch(pinned);
    candidate->write(t, pinned);
    EXPECT_EQ(read_all(*candidate, t), std::vector<float>(pinned.begin(), pinned.end())) << "round " << round;
    candidate->write(t, other);
    EXPECT_EQ(read_all(*candidate, t), other) << "round " << round;
  }
}

// --accumulate writes a prefetched batch as consecutive slices (its micro-batches): each reads its
// part of the prefetched copy, and once the last slice is written the batch is forgotten, so a
// write of the same memory refilled by the loader copies the new contents.
TEST_P(BackendConformance, PrefetchedBatchWritesAsMicroBatchSlices) {
  const Shape sample{1, 3, 4, 4};
  const int64_t samples = 6, pixels = sample.count();
  const std::vector<int64_t> micro_counts = {2, 1, 3};  // consecutive, ending the batch
  HostFloats pinned(static_cast<size_t>(samples * pixels), 0.0f, HostAllocator<float>(candidate->input_memory()));
  for (size_t i = 0; i < pinned.size(); ++i) pinned[i] = static_cast<float>(i % 241);  // exact in every type
  candidate->prefetch(pinned);
  int64_t first = 0;
  for (const int64_t count : micro_counts) {
    Tensor t = candidate->allocate({count, sample.c, sample.h, sample.w});
    const auto slice = std::span<const float>(pinned).subspan(static_cast<size_t>(first * pixels),
                                                              static_cast<size_t>(count * pixels));
    candidate->write(t, slice);
    EXPECT_EQ(read_all(*candidate, t), std::vector<float>(slice.begin(), slice.end())) << "from sample " << first;
    first += count;
  }
  for (float& v : pinned) v += 1.0f;  // the loader refills the memory for a later batch
  Tensor whole = candidate->allocate({samples, sample.c, sample.h, sample.w});
  candidate->write(whole, pinned);
  EXPECT_EQ(read_all(*candidate, whole), std::vector<float>(pinned.begin(), pinned.end()));
}

// Two SGD steps of a small ResNet, with batch statistics, on both backends from the same
// initialisation: the losses and every parameter after the steps agree.
TEST_P(BackendConformance, TwoTrainingStepsOfAResNet) {
  const ResNetConfig config = make_resnet_config("resnet20", 3, 10, 16, 3);
  ResNet candidate_model(*candidate, config), reference_model(*reference, config);
  OptimizerConfig sgd;
  sgd.weight_decay = 5e-5f;
  Optimizer candidate_sgd(*candidate, candidate_model.parameters(), sgd);
  Optimizer reference_sgd(*reference, reference_model.parameters(), sgd);
  // The reference starts from the candidate's (possibly 16-bit-rounded) initial weights.
  for (size_t i = 0; i < candidate_model.parameters().size(); ++i)
    reference->write(reference_model.parameters()[i]->value,
                     read_all(*candidate, candidate_model.parameters()[i]->value));
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto images = random_tensor({8, 3, 16, 16});
    const std::vector<int32_t> labels = {1, 0, 9, 4, 4, 7, 2, 5};
    auto dlogits = zeros({8, 10, 1, 1});
    const double loss =
        softmax_cross_entropy_now(*candidate, candidate_model.forward(images.first), labels, 0, dlogits.first);
    const double reference_loss =
        softmax_cross_entropy_now(*reference, reference_model.forward(images.second), labels, 0, dlogits.second);
    EXPECT_NEAR(loss, reference_loss, 2 * tol() * reference_loss);
    candidate_model.backward(dlogits.first);
    reference_model.backward(dlogits.second);
    candidate_sgd.step(0.1f);
    reference_sgd.step(0.1f);
  }
  for (size_t i = 0; i < candidate_model.parameters().size(); ++i) {
    const Parameter& a = *candidate_model.parameters()[i];
    const Parameter& b = *reference_model.parameters()[i];
    EXPECT_LT(relative_error({a.value, b.value}), 2 * tol()) << a.name;
  }
}

// The same two SGD steps of a ResNet from the same initialisation, run twice, give the same
// weights bit for bit (no atomics in the reductions; deterministic convolution algorithms), which
// is what a resumed run relies on.
TEST_P(BackendConformance, RepeatedTrainingStepsAreBitIdentical) {
  const ResNetConfig config = make_resnet_config("resnet20", 3, 10, 16, 3);
  std::vector<std::vector<float>> weights[2];
  for (auto& run : weights) {
    ResNet model(*candidate, config);  // the same seed: the same initial weights
    Optimizer optimizer(*candidate, model.parameters(), OptimizerConfig{});
    std::mt19937 pixels_random(77);
    for (int step = 0; step < 2; ++step) {
      const std::vector<float> pixels = uniform_values(8 * 3 * 16 * 16, pixels_random, -1, 1);
      Tensor images = candidate->allocate({8, 3, 16, 16}), dlogits = candidate->allocate({8, 10, 1, 1});
      candidate->write(images, pixels);
      softmax_cross_entropy_now(*candidate, model.forward(images), std::vector<int32_t>{1, 0, 9, 4, 4, 7, 2, 5}, 0,
                                dlogits);
      model.backward(dlogits);
      optimizer.step(0.1f);
    }
    for (const Parameter* p : model.parameters()) run.push_back(read_all(*candidate, p->value));
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  for (size_t i = 0; i < weights[0].size(); ++i) EXPECT_EQ(weights[0][i], weights[1][i]) << "parameter " << i;
}

std::string pair_name(const ::testing::TestParamInfo<BackendPair>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Host, BackendConformance,
                         ::testing::Values(BackendPair{"onednn", "onednn", "reference", Precision::fp32, 2e-5, 1e-4,
                                                       false}),
                         pair_name);

#if SB_HAVE_CUDA
INSTANTIATE_TEST_SUITE_P(Cudnn, BackendConformance,
                         ::testing::Values(BackendPair{"fp32", "cudnn", "onednn", Precision::fp32, 1e-4, 2e-4, true},
                                           BackendPair{"tf32", "cudnn", "onednn", Precision::tf32, 1e-2, 2e-2, true},
                                           BackendPair{"fp16", "cudnn", "onednn", Precision::fp16, 1e-2, 2e-2, true},
                                           BackendPair{"bf16", "cudnn", "onednn", Precision::bf16, 5e-2, 1e-1, true}),
                         pair_name);
#endif

// The reference backend's own meaning, against values worked out by hand.
TEST(ReferenceBackend, LossOfUniformLogitsIsLogClasses) {
  ReferenceBackend r;
  Tensor logits = r.allocate({2, 10, 1, 1}), grad = r.allocate({2, 10, 1, 1});
  const std::vector<int32_t> labels = {4, 9};
  EXPECT_NEAR(softmax_cross_entropy_now(r, logits, labels, 0.0f, grad), std::log(10.0), 1e-12);
  // Gradient of the mean: (1/10 - onehot) / batch.
  EXPECT_NEAR(ReferenceBackend::data(grad)[4], (0.1 - 1) / 2, 1e-12);
  EXPECT_NEAR(ReferenceBackend::data(grad)[5], 0.1 / 2, 1e-12);
}

TEST(ReferenceBackend, FusedBatchnormIsReluOfBatchnormPlusResidual) {
  ReferenceBackend r;
  std::mt19937 random(5);
  auto random_tensor = [&](Shape shape) {
    Tensor t = r.allocate(shape);
    r.write(t, uniform_values(shape.count(), random, -2, 2));
    return t;
  };
  const Shape s{3, 7, 4, 4}, v = vector_shape(7);
  Tensor x = random_tensor(s), gamma = random_tensor(v), beta = random_tensor(v), residual = random_tensor(s);
  Tensor fused = r.allocate(s), plain = r.allocate(s), mean = r.allocate(v), variance = r.allocate(v);
  r.batchnorm_forward_training(x, gamma, beta, fused, mean, variance, 1e-5f, true, &residual);
  r.batchnorm_forward_training(x, gamma, beta, plain, mean, variance, 1e-5f, false, nullptr);
  const std::vector<float> f = read_all(r, fused), bn = read_all(r, plain), res = read_all(r, residual);
  for (size_t i = 0; i < f.size(); ++i) ASSERT_NEAR(f[i], std::max(bn[i] + res[i], 0.0f), 1e-6) << i;
}

// oneDNN keeps activations channels-last: element (n=0, c=1, h=0, w=0) is the second float in memory.
TEST(OnednnBackend, StoresActivationsChannelsLast) {
  OnednnBackend b;
  const Shape s{2, 3, 4, 5};
  std::vector<float> in(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  Tensor t = b.allocate(s);
  b.write(t, in);
  EXPECT_EQ(t.as<float>()[1], in[20]);
}

}  // namespace
}  // namespace sb::models
