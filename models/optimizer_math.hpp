#pragma once
// The element arithmetic of the optimizer step (MomentumStep in models/backend.hpp), written once
// for every backend's loop or grid.
#include "kernels/host_device.hpp"

namespace sb::models {

// Updates one weight and its momentum; returns nothing, writes through the references.
template <class T>
SB_HD void momentum_element(T& w, T g, T& v, T lr, T momentum, T weight_decay, bool nesterov) {
  const T decayed = g + weight_decay * w;
  v = momentum * v + lr * decayed;
  w -= nesterov ? momentum * v + lr * decayed : v;
}

}  // namespace sb::models
