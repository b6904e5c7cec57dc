// The scratch buffer that calls share for what does not outlive them: it grows to the largest size
// asked for and keeps it; and the oneDNN backend's use of it, one buffer for every layer and batch
// size (the weights' reordered copies were per layer and per size), which leaves results as they
// were.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "models/onednn_backend.hpp"
#include "models/resnet.hpp"
#include "models/scratch_buffer.hpp"

namespace sb::models {
namespace {

TEST(ScratchBuffer, GrowsToTheLargestSizeAskedForAndKeepsIt) {
  ScratchBuffer scratch;
  EXPECT_EQ(scratch.bytes(), 0u);
  void* first = scratch.at_least(100);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % ScratchBuffer::kAlignment, 0u);
  EXPECT_EQ(scratch.bytes(), 128u) << "rounded up to the alignment";
  EXPECT_EQ(scratch.at_least(128), first) << "what fits is served from the same memory";
  EXPECT_EQ(scratch.at_least(1), first);
  EXPECT_EQ(scratch.bytes(), 128u) << "a smaller request does not shrink it";
  void* grown = scratch.at_least(1000);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(grown) % ScratchBuffer::kAlignment, 0u);
  EXPECT_EQ(scratch.bytes(), 1024u);
}

// One training pass (forward, loss, backward) of `model` on `images`; every parameter's gradient.
std::vector<std::vector<float>> gradients(OnednnBackend& backend, ResNet& model, const Tensor& images) {
  const Tensor& logits = model.forward(images);
  Tensor dlogits = backend.allocate(logits.shape());
  std::vector<int32_t> labels(static_cast<size_t>(images.shape().n));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 10);
  softmax_cross_entropy_now(backend, logits, labels, 0.0f, dlogits);
  model.backward(dlogits);
  std::vector<std::vector<float>> out;
  for (const Parameter* p : model.parameters()) out.push_back(read_all(backend, p->grad));
  return out;
}

Tensor random_images(OnednnBackend& backend, int64_t batch) {
  Tensor images = backend.allocate({batch, 3, 32, 32});
  Init noise{static_cast<uint64_t>(batch)};
  backend.write(images, noise.normal("images", images.count(), 1.0));
  return images;
}

TEST(ScratchBuffer, TheOnednnBackendSharesOneForEveryLayerAndBatchSize) {
  OnednnBackend backend(2);
  ResNet model(backend, make_resnet_config("resnet18", 3, 10, 32, 7));
  size_t conv_weight_bytes = 0;
  for (const Parameter* p : model.parameters())
    if (is_weight(p->kind) && p->name != "fc.weight")
      conv_weight_bytes += static_cast<size_t>(p->value.count()) * sizeof(float);

  const Tensor images = random_images(backend, 4);
  const std::vector<std::vector<float>> first = gradients(backend, model, images);
  const size_t scratch = backend.scratch_bytes();
  const size_t primitives = backend.cached_primitives();
  // The largest layer's reordered weights and the largest mask, not every layer's: per layer it
  // would be at least the sum of the convolutions' weights (ResNet-18: 11 M floats, 44 MB).
  EXPECT_LT(scratch, conv_weight_bytes / 2);

  for (int64_t batch : {2, 3}) {
    const Tensor smaller = random_images(backend, batch);
    gradients(backend, model, smaller);
  }
  EXPECT_GT(backend.cached_primitives(), primitives) << "the other batch sizes have their own primitives";
  EXPECT_EQ(backend.scratch_bytes(), scratch) << "but smaller batches fit in the scratch already there";
  EXPECT_EQ(gradients(backend, model, images), first)
      << "the same images give the same gradients after the scratch served other shapes";
}

}  // namespace
}  // namespace sb::models
