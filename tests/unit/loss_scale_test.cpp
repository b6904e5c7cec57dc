// fp16's dynamic loss scaling: the scale's rule (halve and skip on overflow, double after N clean
// steps, never below the minimum, restored from a checkpoint), the overflow check on gradients,
// and the optimizer dividing the scale out (a scaled step equals the unscaled one). The same
// mechanism on a GPU, with a real fp16 overflow, is in cudnn_backend_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "models/loss_scale.hpp"
#include "models/optimizer.hpp"
#include "models/reference_backend.hpp"

namespace sb::models {
namespace {

TEST(DynamicLossScale, OverflowSkipsAndHalvesCleanStepsGrowIt) {
  DynamicLossScale s(1024, 3, 256);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);  // two clean steps: not yet
  EXPECT_FALSE(s.update(false));  // an overflow restarts the count
  EXPECT_EQ(s.scale(), 256);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 256);  // the minimum holds
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);  // three clean steps in a row double it
  EXPECT_EQ(s.skipped_steps(), 3);
  EXPECT_EQ(s.clean_steps(), 0);
  s.update(true);
  DynamicLossScale resumed(1024, 3, 256);
  resumed.restore(s.scale(), s.clean_steps());
  for (int i = 0; i < 2; ++i) {
    s.update(true);
    resumed.update(true);
  }
  EXPECT_EQ(resumed.scale(), s.scale());
  EXPECT_EQ(resumed.scale(), 1024);
}

TEST(DynamicLossScale, GrowthStopsAtTheMaximum) {
  DynamicLossScale s(DynamicLossScale::kMaximum / 2, 1);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), DynamicLossScale::kMaximum);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), DynamicLossScale::kMaximum);
}

TEST(DynamicLossScale, GradientsFiniteFindsOneInfOrNan) {
  ReferenceBackend backend;
  Parameter a{"a", ParamKind::weight, backend.allocate({2, 2, 1, 1}), backend.allocate({2, 2, 1, 1})};
  Parameter b{"b", ParamKind::bias, backend.allocate({1, 3, 1, 1}), backend.allocate({1, 3, 1, 1})};
  backend.fill(a.grad, 1e30f);  // large but finite: its square is still a double
  EXPECT_TRUE(gradients_finite(backend, {&a, &b}));
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    backend.write(b.grad, std::vector<float>{0, bad, 0});
    EXPECT_FALSE(gradients_finite(backend, {&a, &b}));
  }
}

// The overflow check a recorded step runs on the device: the same verdict as gradients_finite,
// into one element of a tensor, the others left alone; and the loss scale read from a tensor.
TEST(DynamicLossScale, DeviceOverflowCheckAndScaleAgreeWithTheHostOnes) {
  for (const std::string name : {"reference", "onednn", "recording:onednn"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Backend> backend = make_backend(name);
    Parameter a{"a", ParamKind::weight, backend->allocate({2, 2, 1, 1}), backend->allocate({2, 2, 1, 1})};
    Parameter b{"b", ParamKind::bias, backend->allocate({1, 3, 1, 1}), backend->allocate({1, 3, 1, 1})};
    Tensor rates = backend->allocate({1, 4, 1, 1});
    const std::vector<const Tensor*> gradients = {&a.grad, &b.grad};
    // On the recording backend the ops run at replay, reading the tensors as they are then.
    const bool recording = name.rfind("recording:", 0) == 0;
    if (recording) {
      backend->begin_capture();
      backend->all_finite_into(gradients, rates, step_rate::apply);
      backend->scale_by(a.grad, rates, 3);
      backend->end_capture();
    }
    auto check_and_scale = [&] {
      if (recording) return backend->replay();
      backend->all_finite_into(gradients, rates, step_rate::apply);
      backend->scale_by(a.grad, rates, 3);
    };
    backend->fill(a.grad, 1e30f);
    backend->fill(b.grad, 0);
    backend->write(rates, std::vector<float>{7, 8, 0, 0.5f});
    check_and_scale();
    EXPECT_EQ(read_all(*backend, rates), (std::vector<float>{7, 8, 1, 0.5f}));
    EXPECT_EQ(read_all(*backend, a.grad), std::vector<float>(4, 0.5e30f)) << "scaled by rates[3]";
    for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
      backend->write(b.grad, std::vector<float>{0, bad, 0});
      backend->write(rates, std::vector<float>{7, 8, 1, 2});
      check_and_scale();
      EXPECT_EQ(read_all(*backend, rates), (std::vector<float>{7, 8, 0, 2})) << bad;
      EXPECT_FALSE(gradients_finite(*backend, {&a, &b}));
    }
  }
}

TEST(DynamicLossScale, OptimizerDividesTheScaleOut) {
  ReferenceBackend backend;
  auto make = [&](float grad) {
    Parameter p{"w", ParamKind::weight, backend.allocate({1, 4, 1, 1}), backend.allocate({1, 4, 1, 1})};
    backend.write(p.value, std::vector<float>{1, -2, 3, -4});
    backend.fill(p.grad, grad);
    return p;
  };
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::lars}) {
    Parameter plain = make(0.25f), scaled = make(0.25f * 1024);
    OptimizerConfig config{kind, 0.9f, 0.01f, false, 0.001f};
    Optimizer a(backend, {&plain}, config), b(backend, {&scaled}, config);
    for (int step = 0; step < 3; ++step) {
      a.step(0.1f);
      b.step(0.1f, 1.0f / 1024);
    }
    std::vector<float> want(4), got(4);
    backend.read(plain.value, want);
    backend.read(scaled.value, got);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << optimizer_name(kind) << " " << i;
  }
}

}  // namespace
}  // namespace sb::models
