#pragma once
// Measures when backward produces each parameter's gradient on a backend: the BackwardProfile the
// bucket benchmark replays, and the forward pass's time (loss included). One warm-up step (primitive creation), then the median over `steps`.
#include "collectives/buckets/backward_profile.hpp"
#include "models/resnet.hpp"

namespace sb::models {

BackwardProfile measure_backward(ResNet& model, int64_t batch, int64_t image_size, int steps);

}  // namespace sb::models
