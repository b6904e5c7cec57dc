// fp16's dynamic loss scaling: the scale's rule (halve and skip on overflow, double after N clean
// steps, never below the minimum, restored from a checkpoint), the overflow check on gradients,
// and the optimizer dividing the scale out (a scaled step equals the unscaled one). The same
// mechanism on a GPU, with a real fp16 overflow, is in cudnn_backend_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
