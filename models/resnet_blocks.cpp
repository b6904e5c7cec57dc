#include "models/resnet_blocks.hpp"

namespace sb::models {
namespace {

struct ConvBn {
  std::unique_ptr<Conv2d> conv;
  std::unique_ptr<BatchNorm2d> bn;
};

// out = relu(main(x) + shortcut(x)), main being convolution + BN pairs with the ReLU fused into
// every BN but the last, shortcut the identity or the projection. The last BN takes the add and
// the ReLU too (one pass over the block's output instead of three), so the shortcut comes first.
class ResidualBlock final : public Block {
 public:
  ResidualBlock(std::vector<ConvBn> main, std::unique_ptr<ConvBn> downsample)
      : main_(std::move(main)), downsample_(std::move(downsample)) {}

  const Tensor& forward(Backend& backend, const Tensor& x) override {
    const Tensor& shortcut =
        downsample_ ? downsample_->bn->forward(backend, downsample_->conv->forward(backend, x)) : x;
    const Tensor* h = &x;
    for (size_t i = 0; i + 1 < main_.size(); ++i)
      h = &main_[i].bn->forward(backend, main_[i].conv->forward(backend, *h));
    ConvBn& last = main_.back();
    out_ = &last.bn->forward(backend, last.conv->forward(backend, *h), &shortcut);
    return *out_;
  }

  // As forward(), each intermediate dropped as soon as the next layer has read it: at most the
  // input, the shortcut and two tensors of the main branch are held at once (when they come from
  // the pool).
  Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const override {
    const Tensor shortcut =
        downsample_ ? downsample_->bn->infer(backend, downsample_->conv->infer(backend, x, pool), pool) : x;
    Tensor h = x;
    for (const ConvBn& layer : main_) {
      const Tensor convolved = layer.conv->infer(backend, h, pool);
      h = Tensor();
      h = layer.bn->infer(backend, convolved, pool, &layer == &main_.back() ? &shortcut : nullptr);
    }
    return h;
  }

  void release() override {
    auto release = [](ConvBn& layer) {
      layer.conv->release();
      layer.bn->release();
    };
    for (ConvBn& layer : main_) release(layer);
    if (downsample_) release(*downsample_);
    out_ = nullptr;
  }

  Tensor backward(Backend& backend, Tensor dy, TensorPool& pool) override {
    Tensor dsum = pool.take(out_->shape());
    backend.relu_backward(*out_, dy, dsum);  // once, for both branches
    dy = Tensor();
    Tensor grad = dsum;
    for (auto layer = main_.rbegin(); layer != main_.rend(); ++layer)
      grad = layer->conv->backward(backend, layer->bn->backward(backend, grad, pool), pool);
    const Tensor shortcut_grad =
        downsample_ ? downsample_->conv->backward(backend, downsample_->bn->backward(backend, dsum, pool), pool)
                    : dsum;
    backend.add(grad, shortcut_grad, grad);
    return grad;
  }

  void collect(std::vector<Parameter*>& parameters, std::vector<Buffer*>& buffers) override {
    auto add = [&](ConvBn& layer) {
      parameters.push_back(&layer.conv->weight());
      parameters.push_back(&layer.bn->gamma());
      parameters.push_back(&layer.bn->beta());
      buffers.push_back(&layer.bn->running_mean());
      buffers.push_back(&layer.bn->running_var());
    };
    for (ConvBn& layer : main_) add(layer);
    if (downsample_) add(*downsample_);
  }

  Shape output_shape(const Shape& x) const override {
    Shape s = x;
    for (const ConvBn& layer : main_) s = layer.conv->output_shape(s);
    return s;
  }

  int64_t flops_per_sample(const Shape& x) const override {
    int64_t flops = 0;
    Shape s = x;
    for (const ConvBn& layer : main_) {
      flops += layer.conv->flops_per_sample(s);
      s = layer.conv->output_shape(s);
    }
    if (downsample_) flops += downsample_->conv->flops_per_sample(x);
    return flops;
  }

 private:
  std::vector<ConvBn> main_;
  std::unique_ptr<ConvBn> downsample_;
  const Tensor* out_ = nullptr;  // the block's output: its last BN's, the add and ReLU fused in
};

ConvBn conv_bn(Backend& backend, const Init& init, const std::string& block, int index, int64_t in, int64_t out,
               int kernel, int stride, bool relu, bool zero_gamma, const BnSync* sync) {
  const std::string i = std::to_string(index);
  return {std::make_unique<Conv2d>(backend, init, block + ".conv" + i + ".weight", in, out, kernel, stride, kernel / 2),
          std::make_unique<BatchNorm2d>(backend, block + ".bn" + i, out, relu, zero_gamma, sync)};
}

std::unique_ptr<ConvBn> projection(Backend& backend, const Init& init, const BlockSpec& spec, int64_t out) {
  if (spec.stride == 1 && spec.in_channels == out) return nullptr;
  auto p = std::make_unique<ConvBn>();
  p->conv = std::make_unique<Conv2d>(backend, init, spec.name + ".downsample.0.weight", spec.in_channels, out, 1,
                                     spec.stride, 0);
  p->bn = std::make_unique<BatchNorm2d>(backend, spec.name + ".downsample.1", out, false, false, spec.bn_sync);
  return p;
}

}  // namespace

std::unique_ptr<Block> make_basic_block(Backend& backend, const Init& init, const BlockSpec& spec) {
  std::vector<ConvBn> main;
  main.push_back(conv_bn(backend, init, spec.name, 1, spec.in_channels, spec.width, 3, spec.stride, true, false, spec.bn_sync));
  main.push_back(conv_bn(backend, init, spec.name, 2, spec.width, spec.width, 3, 1, false, spec.zero_init_residual, spec.bn_sync));
  return std::make_unique<ResidualBlock>(std::move(main), projection(backend, init, spec, spec.width));
}

std::unique_ptr<Block> make_bottleneck(Backend& backend, const Init& init, const BlockSpec& spec) {
  const int64_t out = spec.width * kBottleneckExpansion;
  std::vector<ConvBn> main;
  main.push_back(conv_bn(backend, init, spec.name, 1, spec.in_channels, spec.width, 1, 1, true, false, spec.bn_sync));
  // v1.5: the stride is on the 3x3 convolution, not the first 1x1.
  main.push_back(conv_bn(backend, init, spec.name, 2, spec.width, spec.width, 3, spec.stride, true, false, spec.bn_sync));
  main.push_back(conv_bn(backend, init, spec.name, 3, spec.width, out, 1, 1, false, spec.zero_init_residual, spec.bn_sync));
  return std::make_unique<ResidualBlock>(std::move(main), projection(backend, init, spec, out));
}

}  // namespace sb::models
