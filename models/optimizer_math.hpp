#pragma once
// The element arithmetic of the optimizer step (MomentumStep in models/backend.hpp), written once
// for every backend's loop or grid.
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace sb::models {

// Where a recorded step's rates tensor (MomentumStep::rates) keeps each value; `count` of them.
namespace step_rate {
constexpr int64_t lr = 0, grad_scale = 1, apply = 2, momentum_scale = 3, count = 4;
}

// Updates one weight and its momentum; returns nothing, writes through the references.
// momentum_scale multiplies the momentum carried from the last step only (momentum correction),
// not the Nesterov look-ahead, which is of this step's buffer.
template <class T>
SB_HD void momentum_element(T& w, T g, T& v, T lr, T momentum, T momentum_scale, T weight_decay, bool nesterov) {
  const T decayed = g + weight_decay * w;
  v = momentum_scale * momentum * v + lr * decayed;
  w -= nesterov ? momentum * v + lr * decayed : v;
}

// LARS's trust ratio eta |w| / (|g| + wd |w|) of one tensor, from its squared weight and gradient
// norms (the stored gradient's: grad_scale multiplies its norm here); 1 where either norm is zero.
SB_HD double lars_trust(double weight_squares, double grad_squares, double grad_scale, double eta,
                        double weight_decay) {
  const double weight_norm = sqrt(weight_squares), grad_norm = grad_scale * sqrt(grad_squares);
  if (weight_norm <= 0 || grad_norm <= 0) return 1.0;
  return eta * weight_norm / (grad_norm + weight_decay * weight_norm);
}

// The learning rate of a LARS update: lr times the trust ratio, rounded to fp32 for the update.
SB_HD float lars_rate(float lr, double weight_squares, double grad_squares, float grad_scale, float eta,
                      float weight_decay) {
  return static_cast<float>(static_cast<double>(lr) *
                            lars_trust(weight_squares, grad_squares, grad_scale, eta, weight_decay));
}

}  // namespace sb::models
