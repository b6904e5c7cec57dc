#pragma once
// The residual blocks: BasicBlock (two 3x3 convolutions; ResNet-18/34 and the CIFAR ResNets) and
// Bottleneck (1x1, 3x3 with the stride, 1x1 with 4x expansion; ResNet-50/101/152). A block whose
// shape changes has a projection shortcut: 1x1 convolution with the stride + BN ("downsample").
#include <memory>
#include <string>
#include <vector>

#include "models/layers.hpp"

namespace sb::models {

class Block {
 public:
  virtual ~Block() = default;
  virtual const Tensor& forward(Backend& backend, const Tensor& x) = 0;
  virtual Tensor infer(Backend& backend, const Tensor& x, TensorPool& pool) const = 0;
  virtual void release() = 0;  // every layer's output
  // dy is taken by value so that the block lets go of it as soon as it has read it.
  virtual Tensor backward(Backend& backend, Tensor dy, TensorPool& pool) = 0;
  virtual void collect(std::vector<Parameter*>& parameters, std::vector<Buffer*>& buffers) = 0;
  virtual int64_t flops_per_sample(const Shape& x) const = 0;
  virtual Shape output_shape(const Shape& x) const = 0;
};

struct BlockSpec {
  std::string name;  // "layer2.0"
  int64_t in_channels, width;
  int stride;
  bool zero_init_residual;
  const BnSync* bn_sync = nullptr;  // synchronised batch norm, or local
};

std::unique_ptr<Block> make_basic_block(Backend& backend, const Init& init, const BlockSpec& spec);
std::unique_ptr<Block> make_bottleneck(Backend& backend, const Init& init, const BlockSpec& spec);
inline constexpr int64_t kBottleneckExpansion = 4;

}  // namespace sb::models
