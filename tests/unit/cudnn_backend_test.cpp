// The cuDNN backend against the oneDNN backend on the same inputs: every layer forward and
// backward, the optimizer step with fp32 masters, and two training steps of a small ResNet, at
// each precision (CUDA builds with a GPU; skipped otherwise). The error measure is
// max |cudnn - onednn| / max |onednn|; the tolerance per precision is what its rounding allows
// (fp32: accumulation order only; tf32: 10-bit products; fp16/bf16: 11/8-bit storage of every
// input and output), far below the O(1) error of a wrong index or formula.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "common/usage_error.hpp"
#include "models/data/host_memory.hpp"
#include "models/loss_scale.hpp"
#include "models/onednn_backend.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "tests/unit/gpu_skip.hpp"

#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#endif

namespace sb::models {
namespace {

TEST(CudnnBackend, PrecisionAndBackendChoicesAreCheckedUpFront) {
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_EQ(precision_name(parse_precision("tf32")), "tf32");
  EXPECT_THROW(parse_precision("fp8"), UsageError);
  EXPECT_THROW(make_backend("onednn", {1, Precision::fp16}), UsageError);  // the CPU path is fp32 only
  EXPECT_THROW(make_backend("tpu"), UsageError);
#if !SB_HAVE_CUDA
  EXPECT_THROW(make_backend("cudnn"), UsageError);
#endif
}

TEST(CudnnBackend, HostBackendsHaveNoDeviceMemory) {
  EXPECT_EQ(make_backend("onednn", {1})->peak_device_bytes(), 0);
  EXPECT_EQ(make_backend("recording:onednn", {1})->peak_device_bytes(), 0) << "a wrapper asks what it wraps";
}

#if SB_HAVE_CUDA

double tolerance(Precision p) {
  switch (p) {
    case Precision::fp32: return 1e-4;
    case Precision::tf32: return 1e-2;
    case Precision::fp16: return 1e-2;
    case Precision::bf16: return 5e-2;
  }
  return 0;
}

struct Pair {
  explicit Pair(Precision precision) : gpu(CudnnOptions{precision}) {}
  CudnnBackend gpu;
  OnednnBackend cpu{0};
  std::mt19937 random{4321};

  // The same random tensor in both backends: first the GPU's, second the CPU's.
  std::pair<Tensor, Tensor> random_tensor(Shape shape, float low = -1, float high = 1) {
    std::uniform_real_distribution<float> dist(low, high);
    std::vector<float> host(static_cast<size_t>(shape.count()));
    for (float& v : host) v = dist(random);
    Tensor a = gpu.allocate(shape), b = cpu.allocate(shape);
    gpu.write(a, host);
    cpu.write(b, host);
    return {a, b};
  }
  std::pair<Tensor, Tensor> zeros(Shape shape) { return {gpu.allocate(shape), cpu.allocate(shape)}; }
};

double relative_error(Pair& p, const std::pair<Tensor, Tensor>& t) {
  const std::vector<float> a = read_all(p.gpu, t.first), b = read_all(p.cpu, t.second);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

class CudnnLayers : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override { SB_SKIP_WITHOUT_GPU(); }
};

TEST_P(CudnnLayers, ConvolutionForwardAndBackwardMatchOnednn) {
  Pair p(GetParam());
  const double tol = tolerance(GetParam());
  struct Case {
    Shape x;
    int out_channels, kernel, stride, pad;
  };
  // The ResNet shapes (3x3/1, 3x3/2, 1x1/1, 1x1/2, the 7x7/2 stem), a single-output filter (an
  // fp32 vector under 16-bit precision) and a ragged one.
  const std::vector<Case> cases = {
      {{2, 3, 9, 9}, 8, 3, 1, 1},    {{3, 16, 8, 8}, 16, 3, 2, 1}, {{2, 8, 7, 7}, 32, 1, 1, 0},
      {{2, 32, 6, 6}, 16, 1, 2, 0},  {{2, 3, 23, 23}, 8, 7, 2, 3}, {{2, 5, 5, 5}, 1, 1, 1, 0},
      {{4, 5, 11, 7}, 6, 3, 1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.x.str() + " k" + std::to_string(c.out_channels) + " r" + std::to_string(c.kernel));
    const ConvGeometry g{c.stride, c.pad};
    const Shape ws{c.out_channels, c.x.c, c.kernel, c.kernel};
    const Shape ys{c.x.n, c.out_channels, window_output(c.x.h, c.kernel, c.stride, c.pad),
                   window_output(c.x.w, c.kernel, c.stride, c.pad)};
    auto x = p.random_tensor(c.x), w = p.random_tensor(ws), dy = p.random_tensor(ys);
    auto y = p.zeros(ys), dx = p.zeros(c.x), dw = p.zeros(ws);
    p.gpu.conv_forward(x.first, w.first, y.first, g);
    p.cpu.conv_forward(x.second, w.second, y.second, g);
    EXPECT_LT(relative_error(p, y), tol) << "forward";
    p.gpu.conv_backward_data(dy.first, w.first, dx.first, g);
    p.cpu.conv_backward_data(dy.second, w.second, dx.second, g);
    EXPECT_LT(relative_error(p, dx), tol) << "backward data";
    p.gpu.conv_backward_weights(x.first, dy.first, dw.first, g);
    p.cpu.conv_backward_weights(x.second, dy.second, dw.second, g);
    EXPECT_LT(relative_error(p, dw), tol) << "backward weights";
  }
}

TEST_P(CudnnLayers, BatchnormWithAndWithoutReluMatchesOnednn) {
  Pair p(GetParam());
  const double tol = tolerance(GetParam());
  const float epsilon = 1e-5f;
  // 70 channels: three column blocks of the per-channel reduction, the last one ragged.
  for (const Shape s : {Shape{4, 3, 5, 5}, Shape{2, 70, 6, 6}, Shape{8, 10, 1, 1}}) {
    // Plain, with the ReLU fused, and with a residual added before it (a residual block's last BN).
    for (int variant = 0; variant < 3; ++variant) {
      const bool relu = variant > 0, with_residual = variant == 2;
      SCOPED_TRACE(s.str() + (relu ? " relu" : "") + (with_residual ? " residual" : ""));
      const Shape v = vector_shape(s.c);
      auto x = p.random_tensor(s, -2, 3), gamma = p.random_tensor(v, 0.5, 1.5), beta = p.random_tensor(v);
      auto dy = p.random_tensor(s), residual = p.random_tensor(s, -1, 1);
      const Tensor* residual_gpu = with_residual ? &residual.first : nullptr;
      const Tensor* residual_cpu = with_residual ? &residual.second : nullptr;
      auto y = p.zeros(s), mean = p.zeros(v), variance = p.zeros(v);
      p.gpu.batchnorm_forward_training(x.first, gamma.first, beta.first, y.first, mean.first, variance.first, epsilon,
                                       relu, residual_gpu);
      p.cpu.batchnorm_forward_training(x.second, gamma.second, beta.second, y.second, mean.second, variance.second,
                                       epsilon, relu, residual_cpu);
      EXPECT_LT(relative_error(p, y), tol) << "training forward";
      EXPECT_LT(relative_error(p, mean), tol) << "batch mean";
      EXPECT_LT(relative_error(p, variance), tol) << "batch variance";

      // With a residual the block masks dy itself: the BN's backward takes no y.
      const bool mask = relu && !with_residual;
      auto dx = p.zeros(s), dgamma = p.zeros(v), dbeta = p.zeros(v);
      p.gpu.batchnorm_backward(x.first, dy.first, gamma.first, mean.first, variance.first, mask ? &y.first : nullptr,
                               dx.first, dgamma.first, dbeta.first, epsilon);
      p.cpu.batchnorm_backward(x.second, dy.second, gamma.second, mean.second, variance.second,
                               mask ? &y.second : nullptr, dx.second, dgamma.second, dbeta.second, epsilon);
      EXPECT_LT(relative_error(p, dx), 2 * tol) << "backward data";
      EXPECT_LT(relative_error(p, dgamma), tol) << "backward gamma";
      EXPECT_LT(relative_error(p, dbeta), tol) << "backward beta";

      auto running_mean = p.random_tensor(v), running_var = p.random_tensor(v, 0.5, 2), z = p.zeros(s);
      p.gpu.batchnorm_forward_inference(x.first, gamma.first, beta.first, running_mean.first, running_var.first, z.first,
                                        epsilon, relu, residual_gpu);
      p.cpu.batchnorm_forward_inference(x.second, gamma.second, beta.second, running_mean.second, running_var.second,
                                        z.second, epsilon, relu, residual_cpu);
      EXPECT_LT(relative_error(p, z), tol) << "inference forward";
    }
  }
}

TEST_P(CudnnLayers, PoolingReluAddMatchOnednn) {
  Pair p(GetParam());
  const bool exact = GetParam() == Precision::fp32 || GetParam() == Precision::tf32;  // fp32 storage
  const double tol = tolerance(GetParam());
  const Shape xs{2, 6, 9, 9};
  auto x = p.random_tensor(xs);
  // ResNet's 3 x 3 stride 2 (overlapping windows) and 2 x 2 stride 2; random values, and small
  // integers, whose ties must go to the same input as on the CPU (the first in the window).
  for (const PoolGeometry g : {PoolGeometry{3, 2, 1}, PoolGeometry{2, 2, 0}}) {
    for (bool ties : {false, true}) {
      SCOPED_TRACE("maxpool " + std::to_string(g.kernel) + (ties ? " ties" : ""));
      auto pooled_input = ties ? p.random_tensor(xs, 0, 3) : p.random_tensor(xs);
      if (ties) {
        std::vector<float> values = read_all(p.cpu, pooled_input.second);
        for (float& v : values) v = std::floor(v);
        p.gpu.write(pooled_input.first, values);
        p.cpu.write(pooled_input.second, values);
      }
      const Shape ys{2, 6, window_output(9, g.kernel, g.stride, g.pad), window_output(9, g.kernel, g.stride, g.pad)};
      auto dy = p.random_tensor(ys), y = p.zeros(ys), dx = p.zeros(xs);
      p.gpu.maxpool_forward(pooled_input.first, y.first, g);
      p.cpu.maxpool_forward(pooled_input.second, y.second, g);
      EXPECT_LE(relative_error(p, y), exact || ties ? 0 : tol) << "max pool forward";
      // 16-bit rounding can make two values of a window equal and move the maximum: exact in
      // fp32 only, or where the values are small integers (exact in every type).
      p.gpu.maxpool_backward(pooled_input.first, dy.first, dx.first, g);
      p.cpu.maxpool_backward(pooled_input.second, dy.second, dx.second, g);
      if (exact || ties) {
        EXPECT_LT(relative_error(p, dx), exact ? 1e-6 : tol) << "max pool backward";
      }
    }
  }

  const Shape pooled{2, 6, 1, 1};
  auto avg = p.zeros(pooled), davg = p.random_tensor(pooled), dx2 = p.zeros(xs);
  p.gpu.global_avgpool_forward(x.first, avg.first);
  p.cpu.global_avgpool_forward(x.second, avg.second);
  EXPECT_LT(relative_error(p, avg), exact ? 1e-6 : tol) << "average pool forward";
  p.gpu.global_avgpool_backward(davg.first, dx2.first);
  p.cpu.global_avgpool_backward(davg.second, dx2.second);
  EXPECT_LT(relative_error(p, dx2), exact ? 1e-6 : tol) << "average pool backward";

  auto r = p.zeros(xs), dr = p.zeros(xs), grad = p.random_tensor(xs), sum = p.zeros(xs);
  p.gpu.relu_forward(x.first, r.first);
  p.cpu.relu_forward(x.second, r.second);
  EXPECT_LE(relative_error(p, r), exact ? 0 : tol) << "relu forward";
  p.gpu.relu_backward(r.first, grad.first, dr.first);
  p.cpu.relu_backward(r.second, grad.second, dr.second);
  EXPECT_LE(relative_error(p, dr), exact ? 0 : tol) << "relu backward";
  p.gpu.add(x.first, grad.first, sum.first);
  p.cpu.add(x.second, grad.second, sum.second);
  EXPECT_LE(relative_error(p, sum), exact ? 0 : tol) << "add";
  p.gpu.axpby(0.5f, x.first, -2.0f, sum.first);
  p.cpu.axpby(0.5f, x.second, -2.0f, sum.second);
  EXPECT_LT(relative_error(p, sum), exact ? 1e-7 : tol) << "axpby";
  const double squares = p.cpu.sum_of_squares(x.second);
  EXPECT_NEAR(p.gpu.sum_of_squares(x.first), squares, (exact ? 1e-6 : tol) * squares);
  // The batched form runs the same deterministic sums, so it gives the same bits, empty arrays too.
  const Tensor empty = p.gpu.allocate({0, 3, 1, 1});
  const std::vector<double> sums = p.gpu.sums_of_squares(std::vector<const Tensor*>{&x.first, &empty, &grad.first});
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums[0], p.gpu.sum_of_squares(x.first));
  EXPECT_EQ(sums[1], 0.0);
  EXPECT_EQ(sums[2], p.gpu.sum_of_squares(grad.first));
  // The overflow check of a recorded fp16 step, and the loss scale read from the device.
  Tensor flags = p.gpu.allocate({1, 3, 1, 1});
  p.gpu.write(flags, std::vector<float>{5, 0, 4});
  p.gpu.all_finite_into(std::vector<const Tensor*>{&x.first, &empty, &grad.first}, flags, 1);
  EXPECT_EQ(read_all(p.gpu, flags), (std::vector<float>{5, 1, 4}));
  std::vector<float> with_nan = read_all(p.gpu, grad.first);
  with_nan[with_nan.size() / 2] = std::nanf("");
  p.gpu.write(grad.first, with_nan);
  p.gpu.all_finite_into(std::vector<const Tensor*>{&x.first, &grad.first}, flags, 2);
  EXPECT_EQ(read_all(p.gpu, flags), (std::vector<float>{5, 1, 0}));
  auto scaled = p.random_tensor(xs);
  p.gpu.scale_by(scaled.first, flags, 0);
  p.cpu.scale(scaled.second, 5.0f);
  EXPECT_LT(relative_error(p, scaled), exact ? 1e-7 : tol) << "scale_by";
}

TEST_P(CudnnLayers, FullyConnectedAndLossMatchOnednn) {
  Pair p(GetParam());
  const double tol = tolerance(GetParam());
  // Batch 1 makes (1, K, 1, 1) inputs: fp32 vectors that the 16-bit GEMM must convert.
  for (int64_t batch : {5, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const int64_t inputs = 37, outputs = 11;
    auto x = p.random_tensor({batch, inputs, 1, 1}), w = p.random_tensor({outputs, inputs, 1, 1});
    auto b = p.random_tensor(vector_shape(outputs)), y = p.zeros({batch, outputs, 1, 1});
    p.gpu.fc_forward(x.first, w.first, b.first, y.first);
    p.cpu.fc_forward(x.second, w.second, b.second, y.second);
    EXPECT_LT(relative_error(p, y), tol) << "fc forward";

    std::vector<int32_t> labels = {0, 3, 10, 7, 3};
    labels.resize(static_cast<size_t>(batch));
    auto dy = p.zeros({batch, outputs, 1, 1});
    const double loss = softmax_cross_entropy_now(p.gpu, y.first, labels, 0.1f, dy.first);
    const double cpu_loss = softmax_cross_entropy_now(p.cpu, y.second, labels, 0.1f, dy.second);
    EXPECT_NEAR(loss, cpu_loss, tol * cpu_loss);
    EXPECT_LT(relative_error(p, dy), tol) << "loss gradient";

    auto dx = p.zeros({batch, inputs, 1, 1}), dw = p.zeros({outputs, inputs, 1, 1});
    auto db = p.zeros(vector_shape(outputs));
    p.gpu.fc_backward_data(dy.first, w.first, dx.first);
    p.cpu.fc_backward_data(dy.second, w.second, dx.second);
    EXPECT_LT(relative_error(p, dx), tol) << "fc backward data";
    p.gpu.fc_backward_weights(x.first, dy.first, dw.first, db.first);
    p.cpu.fc_backward_weights(x.second, dy.second, dw.second, db.second);
    EXPECT_LT(relative_error(p, dw), tol) << "fc backward weights";
    EXPECT_LT(relative_error(p, db), tol) << "fc backward bias";
  }
}

// The update runs on fp32 masters: 100 small steps move the weights by amounts a 16-bit copy
// could not accumulate, and the masters still match the CPU's fp32 update, through a tenfold cut
// of the rate with its momentum correction.
TEST_P(CudnnLayers, MomentumUpdatesRunOnFp32Masters) {
  Pair p(GetParam());
  const Shape s{16, 8, 3, 3};
  auto w = p.random_tensor(s), g = p.random_tensor(s, -1e-3f, 1e-3f), v = p.zeros(s);
  p.gpu.keep_fp32_master(w.first);
  p.gpu.keep_fp32_master(v.first);
  // Both sides start from the same (16-bit-rounded) weights.
  std::vector<float> start = read_all(p.gpu, w.first);
  p.cpu.write(w.second, start);
  MomentumStep step;
  step.lr = 0.01f;
  step.weight_decay = 1e-4f;
  for (int i = 0; i < 100; ++i) {
    step.lr = i < 50 ? 0.01f : 0.001f;
    step.momentum_scale = i == 50 ? 0.1f : 1.0f;
    p.gpu.momentum_update(w.first, g.first, v.first, step);
    p.cpu.momentum_update(w.second, g.second, v.second, step);
  }
  // Only the gradient's 16-bit storage differs between the two.
  const double tol = GetParam() == Precision::bf16 ? 1e-3 : GetParam() == Precision::fp16 ? 1e-4 : 1e-6;
  EXPECT_LT(relative_error(p, w), tol);
  EXPECT_LT(relative_error(p, v), 10 * tol);
  // write + read of a master is exact.
  std::vector<float> values(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f + static_cast<float>(i) * 1e-6f;
  p.gpu.write(w.first, values);
  EXPECT_EQ(read_all(p.gpu, w.first), values);
}

TEST_P(CudnnLayers, LayoutRoundTripsThroughWriteAndRead) {
  Pair p(GetParam());
  const Shape s{2, 3, 4, 5};
  std::vector<float> in(static_cast<size_t>(s.count()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);  // exact in every type
  Tensor t = p.gpu.allocate(s);
  p.gpu.write(t, in);
  EXPECT_EQ(read_all(p.gpu, t), in);
}

// A batch prefetched from the pinned pool reaches the tensor as a plain write does; a write of
// other data after it is not mistaken for the prefetched one.
TEST_P(CudnnLayers, PrefetchedWriteMatchesAPlainWrite) {
  Pair p(GetParam());
  ASSERT_TRUE(p.gpu.copies_ahead());
  const Shape s{3, 3, 8, 8};
  const size_t n = static_cast<size_t>(s.count());
  HostFloats pinned(n, 0.0f, HostAllocator<float>(p.gpu.input_memory()));
  std::vector<float> other(n);
  for (size_t i = 0; i < n; ++i) {
    pinned[i] = static_cast<float>(i % 251);  // exact in every type
    other[i] = static_cast<float>((i * 7) % 113);
  }
  Tensor t = p.gpu.allocate(s);
  for (int round = 0; round < 2; ++round) {  // the second reuses the prefetch buffer
    p.gpu.prefetch(pinned);
    p.gpu.write(t, pinned);
    EXPECT_EQ(read_all(p.gpu, t), std::vector<float>(pinned.begin(), pinned.end())) << "round " << round;
    p.gpu.write(t, other);
    EXPECT_EQ(read_all(p.gpu, t), other) << "round " << round;
  }
}

// --accumulate writes a prefetched batch as consecutive slices (its micro-batches): each reads its
// part of the prefetched copy, and once the last slice is written the batch is forgotten, so a
// write of the same memory refilled by the loader copies the new contents.
TEST_P(CudnnLayers, PrefetchedBatchWritesAsMicroBatchSlices) {
  Pair p(GetParam());
  const Shape sample{1, 3, 4, 4};
  const int64_t samples = 6, pixels = sample.count();
  const std::vector<int64_t> micro_counts = {2, 1, 3};  // consecutive, ending the batch
  HostFloats pinned(static_cast<size_t>(samples * pixels), 0.0f, HostAllocator<float>(p.gpu.input_memory()));
  for (size_t i = 0; i < pinned.size(); ++i) pinned[i] = static_cast<float>(i % 241);  // exact in every type
  p.gpu.prefetch(pinned);
  int64_t first = 0;
  for (const int64_t count : micro_counts) {
    Tensor t = p.gpu.allocate({count, sample.c, sample.h, sample.w});
    const auto slice = std::span<const float>(pinned).subspan(static_cast<size_t>(first * pixels),
                                                              static_cast<size_t>(count * pixels));
    p.gpu.write(t, slice);
    EXPECT_EQ(read_all(p.gpu, t), std::vector<float>(slice.begin(), slice.end())) << "from sample " << first;
    first += count;
  }
  for (float& v : pinned) v += 1.0f;  // the loader refills the memory for a later batch
  Tensor whole = p.gpu.allocate({samples, sample.c, sample.h, sample.w});
  p.gpu.write(whole, pinned);
  EXPECT_EQ(read_all(p.gpu, whole), std::vector<float>(pinned.begin(), pinned.end()));
}

// Two SGD steps of a small ResNet, with batch statistics, on both backends from the same
// initialisation: the losses and every parameter after the steps agree.
TEST_P(CudnnLayers, TwoTrainingStepsOfAResNetMatchOnednn) {
  Pair p(GetParam());
  const ResNetConfig config = make_resnet_config("resnet20", 3, 10, 16, 3);
  ResNet gpu_model(p.gpu, config), cpu_model(p.cpu, config);
  OptimizerConfig sgd;
  sgd.weight_decay = 5e-5f;
  Optimizer gpu_opt(p.gpu, gpu_model.parameters(), sgd), cpu_opt(p.cpu, cpu_model.parameters(), sgd);
  // The CPU starts from the GPU's (possibly 16-bit-rounded) initial weights.
  for (size_t i = 0; i < gpu_model.parameters().size(); ++i)
    p.cpu.write(cpu_model.parameters()[i]->value, read_all(p.gpu, gpu_model.parameters()[i]->value));
  const double tol = tolerance(GetParam());
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto images = p.random_tensor({8, 3, 16, 16});
    const std::vector<int32_t> labels = {1, 0, 9, 4, 4, 7, 2, 5};
    const Shape logits_shape{8, 10, 1, 1};
    auto dlogits = p.zeros(logits_shape);
    const double gpu_loss = softmax_cross_entropy_now(p.gpu, gpu_model.forward(images.first), labels, 0, dlogits.first);
    const double cpu_loss =
        softmax_cross_entropy_now(p.cpu, cpu_model.forward(images.second), labels, 0, dlogits.second);
    EXPECT_NEAR(gpu_loss, cpu_loss, 2 * tol * cpu_loss);
    gpu_model.backward(dlogits.first);
    cpu_model.backward(dlogits.second);
    gpu_opt.step(0.1f);
    cpu_opt.step(0.1f);
  }
  for (size_t i = 0; i < gpu_model.parameters().size(); ++i) {
    const Parameter& a = *gpu_model.parameters()[i];
    const Parameter& b = *cpu_model.parameters()[i];
    EXPECT_LT(relative_error(p, {a.value, b.value}), 2 * tol) << a.name;
  }
}

// The GPU path is deterministic: the same two SGD steps of a ResNet from the same initialisation,
// run twice, give the same weights bit for bit (no atomics in the reductions; deterministic
// convolution algorithms), which is what a resumed GPU run relies on.
TEST_P(CudnnLayers, RepeatedTrainingStepsAreBitIdentical) {
  CudnnBackend gpu(CudnnOptions{GetParam()});
  const ResNetConfig config = make_resnet_config("resnet20", 3, 10, 16, 3);
  std::vector<std::vector<float>> weights[2];
  for (auto& run : weights) {
    ResNet model(gpu, config);  // the same seed: the same initial weights
    Optimizer optimizer(gpu, model.parameters(), OptimizerConfig{});
    std::mt19937 random(77);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (int step = 0; step < 2; ++step) {
      std::vector<float> pixels(8 * 3 * 16 * 16);
      for (float& v : pixels) v = dist(random);
      Tensor images = gpu.allocate({8, 3, 16, 16}), dlogits = gpu.allocate({8, 10, 1, 1});
      gpu.write(images, pixels);
      softmax_cross_entropy_now(gpu, model.forward(images), std::vector<int32_t>{1, 0, 9, 4, 4, 7, 2, 5}, 0, dlogits);
      model.backward(dlogits);
      optimizer.step(0.1f);
    }
    for (const Parameter* p : model.parameters()) run.push_back(read_all(gpu, p->value));
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  for (size_t i = 0; i < weights[0].size(); ++i) EXPECT_EQ(weights[0][i], weights[1][i]) << "parameter " << i;
}

// fp16 training with a loss scale far too large: dlogits x scale overflows fp16, the step is
// skipped (weights untouched) and the scale halved until the gradients fit; then steps apply, and
// after growth_interval clean steps the scale doubles again. Twice: decided on the host
// (gradients_finite), and on the device as a recorded step decides it (all_finite_into, the update
// reading the flag from its rates), which must give the same weights bit for bit.
TEST(CudnnLossScale, Fp16OverflowIsSkippedAndTheScaleRecovers) {
  SB_SKIP_WITHOUT_GPU();
  std::vector<std::vector<float>> final_weights;
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "decided on the device" : "decided on the host");
    CudnnBackend gpu(CudnnOptions{Precision::fp16});
    ResNet model(gpu, make_resnet_config("resnet20", 3, 10, 16, 5));
    Optimizer optimizer(gpu, model.parameters(), OptimizerConfig{});
    DynamicLossScale scale(std::ldexp(1.0, 40), 2);
    std::vector<float> images(static_cast<size_t>(4 * 3 * 16 * 16));
    for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(static_cast<float>(i));
    Tensor input = gpu.allocate({4, 3, 16, 16}), dlogits = gpu.allocate({4, 10, 1, 1});
    Tensor rates = gpu.allocate({1, step_rate::count, 1, 1});
    gpu.write(input, images);
    const std::vector<int32_t> labels = {3, 1, 4, 1};
    std::vector<const Tensor*> gradients;
    for (const Parameter* p : model.parameters()) gradients.push_back(&p->grad);
    const Tensor& first_weight = model.parameters()[0]->value;
    int skipped = 0, applied = 0;
    for (int step = 0; step < 40 && applied < 3; ++step) {
      const std::vector<float> before = read_all(gpu, first_weight);
      softmax_cross_entropy_now(gpu, model.forward(input), labels, 0, dlogits);
      gpu.scale(dlogits, static_cast<float>(scale.scale()));
      model.backward(dlogits);
      const double used = scale.scale();
      bool finite = false;
      if (on_device) {
        gpu.write(rates, std::vector<float>{0.01f, static_cast<float>(1.0 / used), 1, 1});
        gpu.all_finite_into(gradients, rates, step_rate::apply);
        optimizer.step(0, 1, &rates);
        finite = read_all(gpu, rates)[step_rate::apply] != 0;
        EXPECT_EQ(finite, gradients_finite(gpu, model.parameters()));
        scale.update(finite);
      } else {
        finite = scale.update(gradients_finite(gpu, model.parameters()));
        if (finite) optimizer.step(0.01f, static_cast<float>(1.0 / used));
      }
      if (finite) {
        ++applied;
        EXPECT_NE(read_all(gpu, first_weight), before) << "an applied step moves the weights";
      } else {
        ++skipped;
        EXPECT_EQ(read_all(gpu, first_weight), before) << "a skipped step leaves them";
        EXPECT_EQ(scale.scale(), used / 2);
      }
    }
    EXPECT_GE(skipped, 10);  // 2^40 x O(0.1) is far beyond fp16's 65504
    EXPECT_EQ(applied, 3);
    EXPECT_EQ(scale.skipped_steps(), skipped);
    std::vector<float> all;
    for (const Parameter* p : model.parameters())
      for (float v : read_all(gpu, p->value)) {
        ASSERT_TRUE(std::isfinite(v)) << p->name;
        all.push_back(v);
      }
    final_weights.push_back(std::move(all));
  }
  EXPECT_EQ(final_weights[0], final_weights[1]);
}

// The peak is the device's memory in use: a 1 GiB tensor raises it by at least that, and it stays
// up after the tensor is freed; it never passes the device's total.
TEST(CudnnBackend, PeakDeviceMemoryCountsATensorAndStaysAfterItGoes) {
  SB_SKIP_WITHOUT_GPU();
  CudnnBackend gpu(CudnnOptions{Precision::fp32});
  gpu.synchronize();
  const int64_t before = gpu.peak_device_bytes();
  EXPECT_GT(before, 0) << "the CUDA context alone holds memory";
  constexpr int64_t kGiB = int64_t{1} << 30;
  {
    Tensor big = gpu.allocate({kGiB / 4, 1, 1, 1});
    EXPECT_GE(gpu.peak_device_bytes(), before + kGiB);
  }
  gpu.synchronize();
  EXPECT_GE(gpu.peak_device_bytes(), before + kGiB) << "a peak, not what is in use now";
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_LE(gpu.peak_device_bytes(), static_cast<int64_t>(total_bytes));
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudnnLayers,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16),
                         [](const ::testing::TestParamInfo<Precision>& info) { return precision_name(info.param); });

#endif  // SB_HAVE_CUDA

}  // namespace
}  // namespace sb::models
