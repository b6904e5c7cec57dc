#include "models/tensor_pool.hpp"

namespace sb::models {

Tensor TensorPool::take(const Shape& shape) {
  // use_count 1: the pool's own copy is the only one left. Backends run a pass's ops in order
  // (the cuDNN one on one stream), so a tensor read by an op already issued can be rewritten by
  // the next.
  for (const Tensor& t : tensors_)
    if (t.shape() == shape && t.storage().use_count() == 1) return t;
  tensors_.push_back(backend_.allocate(shape));
  return tensors_.back();
}

int64_t TensorPool::element_count() const {
  int64_t count = 0;
  for (const Tensor& t : tensors_) count += t.count();
  return count;
}

}  // namespace sb::models
