#pragma once
// A model's real gradients, for benchmarks that want them instead of synthetic data (sb-compress
// --model): one forward and backward pass of a freshly initialised model on random images and
// labels, and every parameter's gradient, flattened in the model's order (torchvision's names).
#include <cstdint>
#include <string>
#include <vector>

namespace sb::models {

struct GradientSample {
  std::vector<float> values;       // every parameter's gradient, one after another
  std::vector<std::string> names;  // the parameters, in that order
  std::vector<size_t> counts;
  std::vector<size_t> rows;        // each one's first dimension (1 for a vector)
};

// `seed` varies the images and labels (a rank's own), not the weights (the same on every rank).
// Throws UsageError for an unknown model.
GradientSample sample_gradients(const std::string& model, int64_t image_size, int64_t batch, uint64_t seed, int threads);

}  // namespace sb::models
