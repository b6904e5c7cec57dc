#include "models/resnet.hpp"

#include <map>
#include <stdexcept>
#include <utility>

#include "common/usage_error.hpp"
#include "models/resnet_blocks.hpp"

namespace sb::models {
namespace {

struct Architecture {
  bool bottleneck;
  std::vector<int> blocks_per_stage;
  std::vector<int64_t> widths;
  bool cifar;  // CIFAR-style: 16-channel 3x3 stem, always small, three stages
};

const std::map<std::string, Architecture>& architectures() {
  static const std::map<std::string, Architecture> table = {
      {"resnet18", {false, {2, 2, 2, 2}, {64, 128, 256, 512}, false}},
      {"resnet34", {false, {3, 4, 6, 3}, {64, 128, 256, 512}, false}},
      {"resnet50", {true, {3, 4, 6, 3}, {64, 128, 256, 512}, false}},
      {"resnet101", {true, {3, 4, 23, 3}, {64, 128, 256, 512}, false}},
      {"resnet152", {true, {3, 8, 36, 3}, {64, 128, 256, 512}, false}},
      {"resnet20", {false, {3, 3, 3}, {16, 32, 64}, true}},
      {"resnet32", {false, {5, 5, 5}, {16, 32, 64}, true}},
      {"resnet56", {false, {9, 9, 9}, {16, 32, 64}, true}},
  };
  return table;
}

const Architecture& architecture(const std::string& name) {
  auto it = architectures().find(name);
  if (it == architectures().end()) throw UsageError("unknown model '" + name + "'");
  return it->second;
}

}  // namespace

const std::vector<std::string>& resnet_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, arch] : architectures()) n.push_back(name);
    return n;
  }();
  return names;
}

ResNetConfig make_resnet_config(const std::string& name, int64_t in_channels, int64_t num_classes, int64_t image_size,
                                uint64_t seed) {
  const Architecture& arch = architecture(name);
  ResNetConfig config;
  config.name = name;
  config.in_channels = in_channels;
  config.num_classes = num_classes;
  config.stem = arch.cifar || image_size < 100 ? Stem::small : Stem::imagenet;
  config.seed = seed;
  return config;
}

ResNet::ResNet(Backend& backend, const ResNetConfig& config)
    : backend_(backend), config_(config), inference_pool_(backend), gradient_pool_(backend) {
  const Architecture& arch = architecture(config.name);
  const Init init{config.seed};
  const int64_t stem_width = arch.widths.front();
  if (config.stem == Stem::imagenet) {
    conv1_ = std::make_unique<Conv2d>(backend, init, "conv1.weight", config.in_channels, stem_width, 7, 2, 3);
    maxpool_ = std::make_unique<MaxPool2d>(PoolGeometry{3, 2, 1});
  } else {
    conv1_ = std::make_unique<Conv2d>(backend, init, "conv1.weight", config.in_channels, stem_width, 3, 1, 1);
  }
  bn1_ = std::make_unique<BatchNorm2d>(backend, "bn1", stem_width, true, false, config.bn_sync);
  parameters_ = {&conv1_->weight(), &bn1_->gamma(), &bn1_->beta()};
  buffers_ = {&bn1_->running_mean(), &bn1_->running_var()};

  int64_t channels = stem_width;
  for (size_t stage = 0; stage < arch.blocks_per_stage.size(); ++stage) {
    for (int b = 0; b < arch.blocks_per_stage[stage]; ++b) {
      BlockSpec spec{"layer" + std::to_string(stage + 1) + "." + std::to_string(b), channels, arch.widths[stage],
                     stage > 0 && b == 0 ? 2 : 1, config.zero_init_residual, config.bn_sync};
      blocks_.push_back(arch.bottleneck ? make_bottleneck(backend, init, spec) : make_basic_block(backend, init, spec));
      block_first_parameter_.push_back(parameters_.size());
      blocks_.back()->collect(parameters_, buffers_);
      channels = arch.bottleneck ? spec.width * kBottleneckExpansion : spec.width;
    }
  }
  fc_ = std::make_unique<Linear>(backend, init, "fc", channels, config.num_classes);
  parameters_.push_back(&fc_->weight());
  parameters_.push_back(&fc_->bias());
}

ResNet::~ResNet() = default;

const Tensor& ResNet::forward(const Tensor& images) {
  inference_pool_.clear();  // the last evaluation's tensors: training needs none of them
  inference_input_ = Shape();
  if (!(images.shape() == training_input_)) gradient_pool_.clear();  // shaped for another batch
  training_input_ = images.shape();
  outputs_for_backward_ = true;
  const Tensor* h = &bn1_->forward(backend_, conv1_->forward(backend_, images));
  if (maxpool_) h = &maxpool_->forward(backend_, *h);
  for (auto& block : blocks_) h = &block->forward(backend_, *h);
  return fc_->forward(backend_, avgpool_.forward(backend_, *h));
}

Tensor ResNet::infer(const Tensor& images) {
  // Every shape of a pass follows from its input's. A new one (the eval loader's last, smaller
  // batch; a new image size) lets the last shape's tensors go before this pass takes its own, so
  // the two sets are never held together.
  if (!(images.shape() == inference_input_)) {
    inference_pool_.clear();
    inference_input_ = images.shape();
  }
  // At the training batch, each layer writes into its training output, which the next training
  // pass rewrites. At another, the training tensors go first: evaluation's peak is then its pool,
  // not the pool on top of training's tensors; the next training pass allocates them again.
  if (!(images.shape() == training_input_)) {
    release_training_tensors();
    training_input_ = Shape();
  }
  outputs_for_backward_ = false;
  Tensor h = bn1_->infer(backend_, conv1_->infer(backend_, images, inference_pool_), inference_pool_);
  if (maxpool_) h = maxpool_->infer(backend_, h, inference_pool_);
  for (const auto& block : blocks_) h = block->infer(backend_, h, inference_pool_);
  return fc_->infer(backend_, avgpool_.infer(backend_, h, inference_pool_), inference_pool_);
}

void ResNet::release_training_tensors() {
  gradient_pool_.clear();
  conv1_->release();
  bn1_->release();
  if (maxpool_) maxpool_->release();
  for (auto& block : blocks_) block->release();
  avgpool_.release();
  fc_->release();
}

void ResNet::report_ready(size_t first, size_t end) const {
  if (!gradient_ready_) return;
  for (size_t p = end; p-- > first;) gradient_ready_(p);
}

void ResNet::backward(const Tensor& dlogits) {
  if (!outputs_for_backward_) throw std::logic_error("ResNet::backward without a forward() since the last infer()");
  Tensor grad = avgpool_.backward(backend_, fc_->backward(backend_, dlogits, gradient_pool_), gradient_pool_);
  const size_t fc_first = parameters_.size() - 2;
  report_ready(fc_first, parameters_.size());
  for (size_t b = blocks_.size(); b-- > 0;) {
    grad = blocks_[b]->backward(backend_, std::move(grad), gradient_pool_);
    report_ready(block_first_parameter_[b], b + 1 < blocks_.size() ? block_first_parameter_[b + 1] : fc_first);
  }
  if (maxpool_) grad = maxpool_->backward(backend_, grad, gradient_pool_);
  conv1_->backward(backend_, bn1_->backward(backend_, grad, gradient_pool_), gradient_pool_, /*need_input_grad=*/false);
  report_ready(0, block_first_parameter_.front());
}

int64_t ResNet::parameter_count() const {
  int64_t count = 0;
  for (const Parameter* p : parameters_) count += p->value.count();
  return count;
}

int64_t ResNet::forward_flops_per_sample(const Shape& image) const {
  Shape s{1, image.c, image.h, image.w};
  int64_t flops = conv1_->flops_per_sample(s);
  s = conv1_->output_shape(s);
  if (maxpool_) s = maxpool_->output_shape(s);
  for (const auto& block : blocks_) {
    flops += block->flops_per_sample(s);
    s = block->output_shape(s);
  }
  return flops + 2 * s.c * config_.num_classes;
}

}  // namespace sb::models
