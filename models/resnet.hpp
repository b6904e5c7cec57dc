#pragma once
// The ResNet family: ResNet-18/34/50/101/152 in the v1.5 form (the bottleneck's stride on its 3x3
// convolution, as torchvision and MLPerf have it) and the CIFAR-style ResNet-20/32/56. Two stems:
// the ImageNet one (7x7/2 convolution + 3x3/2 max-pool) for 224 px inputs, and a small-input one
// (3x3/1 convolution, no pool) for 28-64 px inputs. The model is written against Backend only.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/layers.hpp"

namespace sb::models {

enum class Stem { imagenet, small };

struct ResNetConfig {
  std::string name = "resnet20";
  int64_t in_channels = 3;
  int64_t num_classes = 10;
  Stem stem = Stem::small;
  bool zero_init_residual = false;  // last BN gamma of every residual block starts at 0
  uint64_t seed = 0;
  const BnSync* bn_sync = nullptr;  // every batch norm synchronised over a group of ranks, or local
};

// Names accepted by make_resnet_config, for --help and error messages.
const std::vector<std::string>& resnet_names();

// The configuration for a named model at an input size: the ImageNet stem from 100 px up, the
// small stem below. Throws UsageError for an unknown name.
ResNetConfig make_resnet_config(const std::string& name, int64_t in_channels, int64_t num_classes, int64_t image_size,
                                uint64_t seed);

class Block;

class ResNet {
 public:
  ResNet(Backend& backend, const ResNetConfig& config);
  ~ResNet();
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  // Training's forward pass: images (N, in_channels, H, W) -> logits (N, num_classes, 1, 1), batch
  // statistics (and running-statistics updates) in every BN, every layer's output kept for
  // backward().
  const Tensor& forward(const Tensor& images);
  // Evaluation's: the running statistics in every BN, and nothing kept. At the training batch each
  // layer writes into its training output; at another, the training tensors are let go first and
  // each output comes from a pool, given back as soon as the next layers have read it, so that a
  // pass holds a few tensors of each shape instead of one per layer. The logits hold until the
  // next forward() or infer().
  Tensor infer(const Tensor& images);
  const TensorPool& inference_pool() const { return inference_pool_; }
  const TensorPool& gradient_pool() const { return gradient_pool_; }
  // Fills every parameter's grad from the gradient of the loss with respect to the logits, of the
  // last forward(); std::logic_error when an infer() came after it (it rewrote or let go of what
  // backward reads). The gradients with respect to the activations come from a pool, each given
  // back once the layer before has read it: a few tensors per shape, not one per layer.
  void backward(const Tensor& dlogits);
  // Called during backward with the index (in parameters() order) of each parameter whose
  // gradient is final, module by module (fc, then each residual block from the last, then the
  // stem), so that gradient communication can start while backward goes on.
  using GradientReady = std::function<void(size_t parameter)>;
  void set_gradient_hook(GradientReady hook) { gradient_ready_ = std::move(hook); }

  // In torchvision's order (conv1.weight, bn1.weight, bn1.bias, layer1.0.conv1.weight, ...).
  const std::vector<Parameter*>& parameters() const { return parameters_; }
  const std::vector<Buffer*>& buffers() const { return buffers_; }
  int64_t parameter_count() const;
  // Forward multiply-adds x 2 for one sample of this shape (C, H, W); a training step is ~3x.
  int64_t forward_flops_per_sample(const Shape& image) const;
  const ResNetConfig& config() const { return config_; }
  Backend& backend() { return backend_; }

 private:
  Backend& backend_;
  ResNetConfig config_;
  std::unique_ptr<Conv2d> conv1_;
  std::unique_ptr<BatchNorm2d> bn1_;
  std::unique_ptr<MaxPool2d> maxpool_;  // ImageNet stem only
  std::vector<std::unique_ptr<Block>> blocks_;
  GlobalAvgPool avgpool_;
  std::unique_ptr<Linear> fc_;
  std::vector<Parameter*> parameters_;
  std::vector<Buffer*> buffers_;
  std::vector<size_t> block_first_parameter_;  // parameters() index of each block's first
  TensorPool inference_pool_;  // evaluation's outputs at a batch other than training's
  TensorPool gradient_pool_;   // backward's gradients with respect to the activations
  Shape inference_input_;  // the last infer() pass's images
  Shape training_input_;   // the images the layers' training tensors are shaped for, if any
  bool outputs_for_backward_ = false;  // forward()'s outputs are still there: no infer() since
  void release_training_tensors();
  GradientReady gradient_ready_;
  void report_ready(size_t first, size_t end) const;
};

}  // namespace sb::models
