#pragma once
// A model's learnable tensors and running statistics, named as torchvision names them
// (layer1.0.conv1.weight, bn1.running_mean, fc.bias) so that checkpoints and per-tensor tables map
// one-to-one onto other frameworks' ResNets.
#include <string>

#include "models/tensor.hpp"

namespace sb::models {

// What a parameter is decides how the optimizer treats it: weight decay and LARS's trust ratio
// apply to weights only, never to batch-norm parameters or biases (as MLPerf's ResNet does).
enum class ParamKind { weight, bias, bn_gamma, bn_beta };

inline bool is_weight(ParamKind kind) { return kind == ParamKind::weight; }

struct Parameter {
  std::string name;
  ParamKind kind = ParamKind::weight;
  Tensor value;
  Tensor grad;
};

// Running statistics: saved and restored with the model, not trained.
struct Buffer {
  std::string name;
  Tensor value;
};

}  // namespace sb::models
