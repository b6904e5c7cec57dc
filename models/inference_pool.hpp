#pragma once
// Output tensors for forward passes in inference mode. Training keeps every layer's output for
// the backward pass; inference needs each only until the next layers have read it. A layer takes
// its output from the pool, and the tensor is free again once the last Tensor copy of it is
// dropped, so a pass through a ResNet holds a few tensors of each activation shape instead of one
// per layer, and leaves the training activations where they are.
#include <cstdint>
#include <vector>

#include "models/backend.hpp"

namespace sb::models {

class InferencePool {
 public:
  explicit InferencePool(Backend& backend) : backend_(backend) {}
  InferencePool(const InferencePool&) = delete;
  InferencePool& operator=(const InferencePool&) = delete;

  // A tensor of this shape that nobody else holds, or a new one. Its contents are whatever the
  // last pass left there: the caller writes all of it.
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
