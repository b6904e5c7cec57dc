// The TensorPool and its two uses in a ResNet. Its tensors come back once nobody holds them.
// Backward's activation gradients: a few per shape instead of one per layer, the same ones every
// step. Evaluation: from the pool, a few per shape too; at the training batch it writes into the
// training tensors, at another it lets them go first; the logits do not depend on which tensors
// hold them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "models/onednn_backend.hpp"
#include "models/resnet.hpp"

namespace sb::models {
namespace {

Tensor noise_images(Backend& backend, const Shape& shape, uint64_t seed) {
  Tensor images = backend.allocate(shape);
  backend.write(images, Init{seed}.normal("images", images.count(), 1.0));
  return images;
}

TEST(TensorPool, GivesATensorBackOnlyOnceNobodyElseHoldsIt) {
  OnednnBackend backend;
  TensorPool pool(backend);
  const Shape shape{2, 3, 4, 4};
  Tensor a = pool.take(shape);
  Tensor b = pool.take(shape);
  EXPECT_NE(a.data(), b.data());  // a is still held
  void* const a_data = a.data();
  a = Tensor();
  EXPECT_EQ(pool.take(shape).data(), a_data);
  EXPECT_EQ(pool.tensor_count(), 2);
  Tensor other = pool.take({2, 3, 2, 2});  // free tensors of another shape are not reused
  EXPECT_EQ(pool.tensor_count(), 3);
  EXPECT_EQ(pool.element_count(), 2 * 96 + 24);
  pool.clear();
  EXPECT_EQ(pool.tensor_count(), 0);
  EXPECT_EQ(other.shape(), (Shape{2, 3, 2, 2}));  // a holder keeps its tensor
}

TEST(TensorPool, AResNet50EvaluationHoldsAFewTensorsPerShapeNotOnePerLayer) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet50", 3, 1000, 224, 7));
  const Tensor images = noise_images(backend, {2, 3, 64, 64}, 3);
  const Tensor logits = model.infer(images);
  ASSERT_EQ(logits.shape(), (Shape{2, 1000, 1, 1}));
  // Training keeps 109 outputs (53 convolutions, 53 batch norms, max-pool, average pool, fc).
  // A pass holds at most 4 at once (a block's input, its shortcut and two of its main branch),
  // and a pool per shape: 31 tensors for ResNet-50's 14 activation shapes.
  const TensorPool& pool = model.inference_pool();
  EXPECT_EQ(pool.tensor_count(), 31);
  // A second pass allocates only its logits: the first pass's are still held here.
  const Tensor again = model.infer(images);
  EXPECT_EQ(pool.tensor_count(), 32);
  EXPECT_EQ(read_all(backend, again), read_all(backend, logits));
}

std::vector<std::vector<float>> gradients(Backend& backend, const ResNet& model) {
  std::vector<std::vector<float>> g;
  for (const Parameter* p : model.parameters()) g.push_back(read_all(backend, p->grad));
  return g;
}

void train_step(Backend& backend, ResNet& model, const Tensor& images) {
  const Tensor& logits = model.forward(images);
  Tensor dlogits = backend.allocate(logits.shape());
  std::vector<int32_t> labels(static_cast<size_t>(logits.shape().n));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(7 * i % logits.shape().c);
  softmax_cross_entropy_now(backend, logits, labels, 0, dlogits);
  model.backward(dlogits);
}

TEST(TensorPool, AResNet50BackwardHoldsAFewGradientsPerShapeAndReusesThemEveryStep) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet50", 3, 1000, 224, 7));
  const Tensor images = noise_images(backend, {2, 3, 64, 64}, 3);
  train_step(backend, model, images);
  // One input gradient per layer and one ReLU-masked gradient per block was 124 tensors: 52
  // convolutions' (the first makes none), 53 batch norms', max-pool's, average pool's, fc's and
  // 16 blocks'. Now a block holds at most four at once: its masked gradient, its main branch's,
  // and the two its next batch norm and convolution make.
  const int64_t count = model.gradient_pool().tensor_count();
  EXPECT_EQ(count, 29);
  const std::vector<std::vector<float>> first = gradients(backend, model);
  // The same step again takes the same tensors, whatever the last step left in them, and gets
  // the same gradients (the running statistics moved, but training normalises by the batch's).
  train_step(backend, model, images);
  EXPECT_EQ(model.gradient_pool().tensor_count(), count);
  EXPECT_EQ(gradients(backend, model), first);
}

TEST(TensorPool, TrainingAtANewBatchLetsTheLastBatchsGradientsGo) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  train_step(backend, model, noise_images(backend, {3, 1, 28, 28}, 1));
  const int64_t at_three = model.gradient_pool().tensor_count();
  train_step(backend, model, noise_images(backend, {5, 1, 28, 28}, 1));
  EXPECT_EQ(model.gradient_pool().tensor_count(), at_three);  // the batch-3 tensors are gone
  model.infer(noise_images(backend, {6, 1, 28, 28}, 2));       // another batch: training's tensors go
  EXPECT_EQ(model.gradient_pool().tensor_count(), 0);
}

TEST(TensorPool, EvaluationAtTheTrainingBatchWritesIntoTheTrainingTensors) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  const Tensor train = noise_images(backend, {4, 1, 28, 28}, 1);
  const Tensor trained = model.forward(train);
  const Tensor evaluated = model.infer(noise_images(backend, {4, 1, 28, 28}, 2));
  EXPECT_EQ(evaluated.data(), trained.data());
  EXPECT_EQ(model.inference_pool().tensor_count(), 0);
  EXPECT_EQ(model.forward(train).data(), trained.data());
}

TEST(TensorPool, EvaluationAtAnotherBatchLetsTheTrainingTensorsGoFirst) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  const Tensor train = noise_images(backend, {4, 1, 28, 28}, 1);
  const Tensor trained = model.forward(train);  // a copy: the model's own is let go of
  EXPECT_EQ(trained.storage().use_count(), 2);
  model.infer(noise_images(backend, {6, 1, 28, 28}, 2));
  EXPECT_EQ(trained.storage().use_count(), 1);
  EXPECT_GT(model.inference_pool().tensor_count(), 0);
  model.forward(train);  // training needs none of the evaluation's tensors
  EXPECT_EQ(model.inference_pool().tensor_count(), 0);
}

TEST(TensorPool, BackwardAfterAnEvaluationIsRefused) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  const Tensor train = noise_images(backend, {2, 1, 28, 28}, 1);
  const Tensor& logits = model.forward(train);
  Tensor dlogits = backend.allocate(logits.shape());
  model.infer(train);
  EXPECT_THROW(model.backward(dlogits), std::logic_error);
  model.forward(train);
  EXPECT_NO_THROW(model.backward(dlogits));
}

// Each path (the training tensors at the training batch, the pool at another; reused or new)
// gives the logits of the others.
TEST(TensorPool, LogitsOfABatchAreThoseOfItsHalvesWhicheverTensorsHoldThem) {
  OnednnBackend backend;
  ResNet model(backend, make_resnet_config("resnet20", 1, 10, 28, 5));
  const Shape half{3, 1, 28, 28};
  const Tensor whole = noise_images(backend, {6, 1, 28, 28}, 2);
  const std::vector<float> pixels = read_all(backend, whole);
  Tensor first = backend.allocate(half), second = backend.allocate(half);
  backend.write(first, std::span<const float>(pixels).first(half.count()));
  backend.write(second, std::span<const float>(pixels).subspan(half.count()));
  model.forward(noise_images(backend, half, 1));  // running statistics not 0 and 1; training at 3

  std::vector<float> halves = read_all(backend, model.infer(first));  // the training tensors
  const std::vector<float> rest = read_all(backend, model.infer(second));
  halves.insert(halves.end(), rest.begin(), rest.end());
  const std::vector<float> expected = read_all(backend, model.infer(whole));  // the pool's, new
  ASSERT_EQ(halves.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(halves[i], expected[i], 1e-4 * (1 + std::abs(expected[i])));
  const std::vector<float> first_logits(halves.begin(), halves.begin() + static_cast<std::ptrdiff_t>(rest.size()));
  EXPECT_EQ(read_all(backend, model.infer(first)), first_logits);  // the pool's, at a new shape
  EXPECT_EQ(read_all(backend, model.infer(whole)), expected);      // and again: reused tensors
}

}  // namespace
}  // namespace sb::models
