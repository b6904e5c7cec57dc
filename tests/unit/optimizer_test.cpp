// The optimizers against steps computed by hand, and the learning-rate schedules at known points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/usage_error.hpp"
#include "models/lr_schedule.hpp"
#include "models/optimizer.hpp"
#include "models/reference_backend.hpp"

namespace sb::models {
namespace {

struct OneTensor {
  ReferenceBackend backend;
  Parameter weight{"layer.weight", ParamKind::weight, backend.allocate({1, 2, 1, 1}), backend.allocate({1, 2, 1, 1})};
  Parameter bias{"bn.bias", ParamKind::bn_beta, backend.allocate({1, 1, 1, 1}), backend.allocate({1, 1, 1, 1})};
  OneTensor() {
    set(weight.value, {3.0, -4.0});  // |w| = 5
    set(weight.grad, {0.6, 0.8});    // |g| = 1
    set(bias.value, {1.0});
    set(bias.grad, {0.5});
  }
  static void set(Tensor& t, std::vector<double> v) { std::copy(v.begin(), v.end(), ReferenceBackend::data(t)); }
  static double at(const Tensor& t, int i) { return ReferenceBackend::data(t)[i]; }
};

TEST(Optimizer, SgdMomentumTwoStepsByHand) {
  OneTensor t;
  Optimizer sgd(t.backend, {&t.weight, &t.bias}, {OptimizerKind::sgd, 0.9f, 0.01f, false, 0.001f});
  sgd.step(0.1f);
  // g' = 0.6 + 0.01 * 3 = 0.63; v = 0.1 * 0.63 = 0.063; w = 3 - 0.063.
  EXPECT_NEAR(t.at(t.weight.value, 0), 2.937, 1e-7);
  EXPECT_NEAR(t.at(t.bias.value, 0), 1.0 - 0.05, 1e-7);  // no decay on the bias
  sgd.step(0.1f);
  // g' = 0.6 + 0.01 * 2.937 = 0.62937; v = 0.9 * 0.063 + 0.062937 = 0.119637.
  EXPECT_NEAR(t.at(t.weight.value, 0), 2.937 - 0.119637, 1e-7);
  EXPECT_NEAR(t.at(sgd.state()[0].value, 0), 0.119637, 1e-7);
  EXPECT_EQ(sgd.state()[0].name, "layer.weight.momentum");
}

// A recorded step reads its learning rate, gradient scale and momentum scale from a tensor, as
// they are when the update runs, and the arguments are then ignored.
TEST(Optimizer, RatesFromATensorReplaceTheArguments) {
  OneTensor by_argument, by_tensor;
  const OptimizerConfig config{OptimizerKind::sgd, 0.9f, 0.01f, false, 0.001f};
  Optimizer a(by_argument.backend, {&by_argument.weight, &by_argument.bias}, config);
  Optimizer b(by_tensor.backend, {&by_tensor.weight, &by_tensor.bias}, config);
  Tensor rates = by_tensor.backend.allocate({1, step_rate::count, 1, 1});
  for (float lr : {0.1f, 0.05f}) {
    a.step(lr, 0.5f, nullptr, lr / 0.1f);
    OneTensor::set(rates, {lr, 0.5, 1, lr / 0.1f});
    b.step(99.0f, 7.0f, &rates, 3.0f);
  }
  EXPECT_EQ(OneTensor::at(by_argument.weight.value, 0), OneTensor::at(by_tensor.weight.value, 0));
  EXPECT_EQ(OneTensor::at(by_argument.weight.value, 1), OneTensor::at(by_tensor.weight.value, 1));
  EXPECT_EQ(OneTensor::at(by_argument.bias.value, 0), OneTensor::at(by_tensor.bias.value, 0));
  EXPECT_NE(OneTensor::at(by_argument.weight.value, 0), 3.0) << "no step was taken";
}

// A recorded fp16 step whose gradients overflowed: the apply flag 0 leaves weights and momentum
// as they were, on every backend (the GPU kernel is compared in cudnn_backend_test.cpp).
TEST(Optimizer, AZeroApplyFlagSkipsTheStep) {
  for (const std::string name : {"reference", "onednn"}) {
    std::unique_ptr<Backend> backend = make_backend(name);
    Parameter weight{"layer.weight", ParamKind::weight, backend->allocate({1, 2, 1, 1}),
                     backend->allocate({1, 2, 1, 1})};
    backend->write(weight.value, std::vector<float>{3, -4});
    backend->write(weight.grad, std::vector<float>{0.6f, 0.8f});
    Tensor rates = backend->allocate({1, step_rate::count, 1, 1});
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::lars}) {
      Optimizer optimizer(*backend, {&weight}, {kind, 0.9f, 0.01f, false, 0.001f});
      optimizer.step(0.1f);  // a momentum to keep
      const std::vector<float> w = read_all(*backend, weight.value);
      const std::vector<float> v = read_all(*backend, optimizer.state()[0].value);
      backend->write(rates, std::vector<float>{0.1f, 1, 0, 1});
      optimizer.step(0.1f, 1, &rates);
      EXPECT_EQ(read_all(*backend, weight.value), w) << name << " " << optimizer_name(kind);
      EXPECT_EQ(read_all(*backend, optimizer.state()[0].value), v) << name << " " << optimizer_name(kind);
      backend->write(rates, std::vector<float>{0.1f, 1, 1, 1});
      optimizer.step(0.1f, 1, &rates);
      EXPECT_NE(read_all(*backend, weight.value), w) << "the flag set, the step is taken";
    }
  }
}

TEST(Optimizer, NesterovLooksAhead) {
  OneTensor t;
  Optimizer nesterov(t.backend, {&t.weight}, {OptimizerKind::nesterov, 0.9f, 0.0f, false, 0.001f});
  nesterov.step(0.1f);
  // v = 0.06; w -= 0.9 * 0.06 + 0.1 * 0.6 = 0.114.
  EXPECT_NEAR(t.at(t.weight.value, 0), 3 - 0.114, 1e-7);
}

// The momentum-correction tests' shared pieces: step s's weight gradient, and our step at a rate,
// rounded to fp32 as the optimizer holds it, corrected from the rate of the step before.
void weight_gradient_at(size_t s, double g[2]) {
  g[0] = std::sin(1.0 + static_cast<double>(s));
  g[1] = std::cos(2.0 * static_cast<double>(s));
}
double step_at(Optimizer& ours, double rate, double& previous_lr) {
  const double lr = static_cast<float>(rate);
  ours.step(static_cast<float>(lr), 1, nullptr, ours.momentum_scale(lr, previous_lr));
  previous_lr = lr;
  return lr;
}

// PyTorch's SGD keeps the rate out of its buffer (u = m u + g', w -= lr u; Nesterov: w -= lr (g' + m u)).
// Ours folds it in; with momentum correction the two take the same steps through any change of
// rate (warm-up, decay, a batch ramp), and without it they part at the first change.
TEST(Optimizer, MomentumCorrectionTakesPyTorchsStepsAsTheRateChanges) {
  const std::vector<double> rates = {0.1, 0.1, 0.02, 0.3, 0.3, 0.05, 0.2};
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::nesterov}) {
    for (bool correction : {true, false}) {
      OneTensor t;
      OptimizerConfig config{kind, 0.9f, 0.01f, false, 0.001f};
      config.momentum_correction = correction;
      Optimizer ours(t.backend, {&t.weight}, config);
      double w[2] = {3.0, -4.0}, u[2] = {0, 0};  // PyTorch's weights and buffer
      // The constants as the optimizer holds them (fp32), so that the two differ by the form alone.
      const double momentum = config.momentum, decay = config.weight_decay;
      double previous_lr = 0, worst = 0;
      for (size_t s = 0; s < rates.size(); ++s) {
        double g[2];
        weight_gradient_at(s, g);
        OneTensor::set(t.weight.grad, {g[0], g[1]});
        const double lr = step_at(ours, rates[s], previous_lr);
        for (int i = 0; i < 2; ++i) {
          const double decayed = g[i] + decay * w[i];
          u[i] = momentum * u[i] + decayed;
          w[i] -= lr * (kind == OptimizerKind::nesterov ? decayed + momentum * u[i] : u[i]);
          worst = std::max(worst, std::abs(OneTensor::at(t.weight.value, i) - w[i]));
        }
      }
      // The momentum scale is an fp32 ratio, within 6e-8 of the exact one at each step.
      if (correction) EXPECT_LT(worst, 1e-7) << optimizer_name(kind);
      else EXPECT_GT(worst, 1e-2) << optimizer_name(kind) << ": without the correction the steps differ";
    }
  }
  ReferenceBackend backend;
  OptimizerConfig lars;
  lars.kind = OptimizerKind::lars;
  Optimizer plain(backend, {}, lars);
  EXPECT_EQ(plain.momentum_scale(0.2, 0.1), 1.0f) << "LARS: off unless asked (MLPerf's reference)";
  Optimizer with(backend, {}, OptimizerConfig{});
  EXPECT_TRUE(OptimizerConfig{}.corrects_momentum()) << "SGD: on unless turned off (PyTorch's steps)";
  EXPECT_EQ(with.momentum_scale(0.2, 0.1), 2.0f);
  EXPECT_EQ(with.momentum_scale(0.2, 0.0), 1.0f) << "no step yet: the buffers are 0, and 0.2 / 0 is no scale";
}

TEST(Optimizer, DecayOfBnAndBiasIsAnOption) {
  OneTensor t;
  Optimizer sgd(t.backend, {&t.bias}, {OptimizerKind::sgd, 0.9f, 0.1f, true, 0.001f});
  sgd.step(1.0f);
  EXPECT_NEAR(t.at(t.bias.value, 0), 1.0 - (0.5 + 0.1), 1e-7);
}

TEST(Optimizer, LarsScalesWeightsByTheTrustRatioAndLeavesBnAlone) {
  OneTensor t;
  Optimizer lars(t.backend, {&t.weight, &t.bias}, {OptimizerKind::lars, 0.9f, 0.01f, true, 0.001f});
  lars.step(2.0f);
  // trust = 0.001 * 5 / (1 + 0.01 * 5) = 0.0047619...; v = 2 * trust * (0.6 + 0.03).
  const double trust = 0.001 * 5 / 1.05;
  EXPECT_NEAR(Optimizer::lars_trust_ratio(5, 1, 0.001, 0.01), trust, 1e-15);
  EXPECT_NEAR(t.at(t.weight.value, 0), 3 - 2 * trust * 0.63, 1e-7);
  EXPECT_NEAR(t.at(t.weight.value, 1), -4 - 2 * trust * (0.8 - 0.04), 1e-7);
  EXPECT_NEAR(t.at(t.bias.value, 0), 1 - 2 * 0.5, 1e-7);  // plain momentum SGD, no decay even when asked
  EXPECT_EQ(Optimizer::lars_trust_ratio(0, 1, 0.001, 0.01), 1.0);
}

// LARS asked for the correction (`--optimizer lars --momentum-correction 1`) takes the steps of
// LARC (apex's, trust ratio on the decayed gradient, no clipping) on PyTorch's SGD, which keeps the
// rate out of its buffer: u = m u + trust (g + wd w), w -= lr u. BN and bias parameters: plain
// momentum, no decay, in both.
TEST(Optimizer, LarsMomentumCorrectionTakesLarcOnPyTorchsSgdSteps) {
  const std::vector<double> rates = {0.5, 1.5, 3.0, 3.0, 0.6, 2.0};
  for (bool correction : {true, false}) {
    OneTensor t;
    OptimizerConfig config{OptimizerKind::lars, 0.9f, 0.01f, false, 0.02f};
    config.momentum_correction = correction;
    Optimizer ours(t.backend, {&t.weight, &t.bias}, config);
    double w[2] = {3.0, -4.0}, u[2] = {0, 0}, b = 1.0, ub = 0;  // PyTorch's weights and buffers
    const double momentum = config.momentum, decay = config.weight_decay, eta = config.lars_eta;
    double previous_lr = 0, worst = 0;
    for (size_t s = 0; s < rates.size(); ++s) {
      double g[2];
      weight_gradient_at(s, g);
      const double gb = 0.5 * std::cos(static_cast<double>(s));
      OneTensor::set(t.weight.grad, {g[0], g[1]});
      OneTensor::set(t.bias.grad, {gb});
      const double lr = step_at(ours, rates[s], previous_lr);
      const double trust = eta * std::hypot(w[0], w[1]) / (std::hypot(g[0], g[1]) + decay * std::hypot(w[0], w[1]));
      for (int i = 0; i < 2; ++i) {
        u[i] = momentum * u[i] + trust * (g[i] + decay * w[i]);
        w[i] -= lr * u[i];
        worst = std::max(worst, std::abs(OneTensor::at(t.weight.value, i) - w[i]));
      }
      ub = momentum * ub + gb;
      b -= lr * ub;
      worst = std::max(worst, std::abs(OneTensor::at(t.bias.value, 0) - b));
    }
    // fp32 rounding of the rate times the trust ratio, and of the momentum scale, at each step.
    if (correction) EXPECT_LT(worst, 1e-6);
    else EXPECT_GT(worst, 1e-2) << "without the correction the steps differ";
  }
}

TEST(LrSchedule, WarmupThenCosinePolyAndStep) {
  LrSchedule s;
  s.peak = LrSchedule::scaled_peak(0.1, 1024);
  EXPECT_DOUBLE_EQ(s.peak, 0.4);
  s.warmup_steps = 10;
  s.total_steps = 110;
  EXPECT_DOUBLE_EQ(s.at(0), 0.04);
  EXPECT_DOUBLE_EQ(s.at(9), 0.4);
  EXPECT_DOUBLE_EQ(s.at(10), 0.4);
  EXPECT_NEAR(s.at(60), 0.2, 1e-12);  // half way through the cosine
  EXPECT_NEAR(s.at(110), 0.0, 1e-12);
  s.decay = DecayKind::poly;
  s.end_lr = 0.0001;
  EXPECT_NEAR(s.at(60), 0.0001 + (0.4 - 0.0001) * 0.25, 1e-12);
  s.decay = DecayKind::step;
  s.warmup_steps = 0;
  s.total_steps = 90;
  EXPECT_NEAR(s.at(29), 0.4, 1e-12);
  EXPECT_NEAR(s.at(30), 0.04, 1e-12);
  EXPECT_NEAR(s.at(85), 0.0004, 1e-12);
  EXPECT_THROW(parse_decay("linear"), UsageError);
  EXPECT_THROW(parse_optimizer("adam"), UsageError);
}

}  // namespace
}  // namespace sb::models
