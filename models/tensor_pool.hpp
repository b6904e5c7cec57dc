#pragma once
// Tensors lent for the length of a pass, for what a pass needs only until the next layers have
// read it: evaluation's outputs, and backward's gradients with respect to the activations. A
// layer takes one from the pool, and the tensor is free again once the last Tensor copy of it is
// dropped, so a pass through a ResNet holds a few tensors of each activation shape instead of one
// per layer.
#include <cstdint>
#include <vector>

#include "models/backend.hpp"

namespace sb::models {

class TensorPool {
 public:
  explicit TensorPool(Backend& backend) : backend_(backend) {}
  TensorPool(const TensorPool&) = delete;
  TensorPool& operator=(const TensorPool&) = delete;

  // A tensor of this shape that nobody else holds, or a new one. Its contents are whatever its
  // last user left there: the caller writes all of it. The same takes and drops from the same
  // pool get the same tensors, so a step recorded once (CUDA graph) finds them where it did.
  Tensor take(const Shape& shape);
  // Lets go of every tensor: those still held elsewhere live on with their holders.
  void clear() { tensors_.clear(); }

  int64_t tensor_count() const { return static_cast<int64_t>(tensors_.size()); }
  int64_t element_count() const;  // over every tensor the pool holds

 private:
  Backend& backend_;
  std::vector<Tensor> tensors_;
};

}  // namespace sb::models
