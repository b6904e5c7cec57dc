// The ResNet family: parameter counts against torchvision's, ResNet-50 forward and backward on
// oneDNN, deterministic initialisation, and finite-difference gradient checks of a small ResNet
// end to end in double precision on the reference backend.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/usage_error.hpp"
#include "models/onednn_backend.hpp"
#include "models/reference_backend.hpp"
#include "models/resnet.hpp"

namespace sb::models {
namespace {

TEST(ResNet, ParameterCountsAreTorchvisions) {
  OnednnBackend backend;
  const std::pair<const char*, int64_t> expected[] = {
      {"resnet18", 11689512}, {"resnet34", 21797672}, {"resnet50", 25557032}, {"resnet101", 44549160},
      {"resnet152", 60192808}};
  for (const auto& [name, count] : expected) {
    ResNet model(backend, make_resnet_config(name, 3, 1000, 224, 1));
    EXPECT_EQ(model.parameter_count(), count) << name;
  }
}

TEST(ResNet, NamesFollowTorchvision) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet50", 3, 1000, 224, 1));
  const auto& p = model.parameters();
  EXPECT_EQ(p.front()->name, "conv1.weight");
  EXPECT_EQ(p[1]->name, "bn1.weight");
  EXPECT_EQ(p[3]->name, "layer1.0.conv1.weight");
  EXPECT_EQ(p.back()->name, "fc.bias");
  EXPECT_EQ(p.size(), 161u);  // 53 conv/fc weights, 53 BN (gamma, beta) pairs, 1 fc bias
  bool has_downsample = false, has_stride_on_3x3 = false;
  for (const Parameter* q : p) {
    has_downsample |= q->name == "layer2.0.downsample.0.weight";
    has_stride_on_3x3 |= q->name == "layer4.2.conv3.weight";
  }
  EXPECT_TRUE(has_downsample && has_stride_on_3x3);
  EXPECT_EQ(model.buffers().front()->name, "bn1.running_mean");
  EXPECT_THROW(make_resnet_config("resnet51", 3, 10, 224, 1), UsageError);
}

TEST(ResNet, FlopCountOfResNet50IsTheKnownFigure) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet50", 3, 1000, 224, 1));
  // 4.1 G multiply-adds per 224 px image, i.e. ~8.2 GFLOP forward (convolutions and fc).
  const double gflops = model.forward_flops_per_sample({1, 3, 224, 224}) / 1e9;
  EXPECT_NEAR(gflops, 8.2, 0.1);
}

TEST(ResNet, ResNet50ForwardAndBackwardOnOnednnGiveAFiniteNonZeroGradientForEveryParameter) {
  OnednnBackend backend;
  ResNetConfig config = make_resnet_config("resnet50", 3, 1000, 224, 7);
  ResNet model(backend, config);
  Tensor images = backend.allocate({2, 3, 64, 64});
  Init noise{3};
  backend.write(images, noise.normal("images", images.count(), 1.0));
  const Tensor& logits = model.forward(images);
  ASSERT_EQ(logits.shape(), (Shape{2, 1000, 1, 1}));
  Tensor dlogits = backend.allocate(logits.shape());
  const std::vector<int32_t> labels = {3, 999};
  const double loss = softmax_cross_entropy_now(backend, logits, labels, 0.1f, dlogits);
  EXPECT_TRUE(std::isfinite(loss));
  model.backward(dlogits);
  for (const Parameter* p : model.parameters()) {
    const std::vector<float> g = read_all(backend, p->grad);
    double norm = 0;
    for (float v : g) {
      ASSERT_TRUE(std::isfinite(v)) << p->name;
      norm += static_cast<double>(v) * v;
    }
    EXPECT_GT(norm, 0) << p->name;
  }
}

TEST(ResNet, InitialisationIsDeterministicFromTheSeed) {
  OnednnBackend backend;
  ResNet a(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  ResNet b(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  ResNet c(backend, make_resnet_config("resnet20", 1, 10, 28, 6));
  const Parameter& wa = *a.parameters()[0];
  EXPECT_EQ(read_all(backend, wa.value), read_all(backend, b.parameters()[0]->value));
  EXPECT_NE(read_all(backend, wa.value), read_all(backend, c.parameters()[0]->value));
  // He fan-out: std sqrt(2 / (16 * 3 * 3)) for the 3x3 stem into 16 channels.
  const std::vector<float> w = read_all(backend, a.parameters()[3]->value);  // layer1.0.conv1.weight
  double sum_sq = 0;
  for (float v : w) sum_sq += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sum_sq / w.size()), std::sqrt(2.0 / (16 * 9)), 0.01);
}

// Central differences of the training loss (batch statistics) against the backward pass, for a
// few elements of every parameter tensor of a ResNet-20, all in double.
TEST(ResNet, GradientsMatchFiniteDifferencesInDoublePrecision) {
  ReferenceBackend backend;
  ResNetConfig config = make_resnet_config("resnet20", 2, 5, 6, 11);
  config.zero_init_residual = false;
  ResNet model(backend, config);
  Tensor images = backend.allocate({3, 2, 6, 6});
  Init noise{4};
  backend.write(images, noise.normal("images", images.count(), 1.0));
  const std::vector<int32_t> labels = {0, 4, 2};
  Tensor dlogits = backend.allocate({3, 5, 1, 1});
  auto loss = [&] { return softmax_cross_entropy_now(backend, model.forward(images), labels, 0.1f, dlogits); };
  loss();
  model.backward(dlogits);

  const double h = 1e-6;
  int checked = 0;
  for (Parameter* p : model.parameters()) {
    double* w = ReferenceBackend::data(p->value);
    const double* g = ReferenceBackend::data(p->grad);
    for (int64_t i : {int64_t{0}, p->value.count() / 2, p->value.count() - 1}) {
      const double saved = w[i];
      w[i] = saved + h;
      const double up = loss();
      w[i] = saved - h;
      const double down = loss();
      w[i] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(g[i], numeric, 1e-6 + 1e-4 * std::abs(numeric)) << p->name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * static_cast<int>(model.parameters().size()));
}

}  // namespace
}  // namespace sb::models
