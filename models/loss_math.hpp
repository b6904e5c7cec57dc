#pragma once
// Softmax cross-entropy with label smoothing over rows of logits, written once for every backend's
// element type (fp32 in oneDNN's, double in the reference one): the mean over the rows of
// -sum_k q_k log softmax(z)_k with q = (1 - s) onehot + s / classes, and its gradient
// (softmax(z) - q) / rows. Accumulates in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace sb::models {

template <class T>
double softmax_cross_entropy_rows(const T* logits, const int32_t* labels, int64_t rows, int64_t classes,
                                  double smoothing, T* grad) {
  double loss = 0;
  for (int64_t n = 0; n < rows; ++n) {
    const T* z = logits + n * classes;
    const double top = static_cast<double>(*std::max_element(z, z + classes));
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k]) - top);
    const double log_sum = top + std::log(sum);
    for (int64_t k = 0; k < classes; ++k) {
      const double target = smoothing / static_cast<double>(classes) + (k == labels[n] ? 1.0 - smoothing : 0.0);
      const double log_p = static_cast<double>(z[k]) - log_sum;
      loss -= target * log_p;
      grad[n * classes + k] = static_cast<T>((std::exp(log_p) - target) / static_cast<double>(rows));
    }
  }
  return loss / static_cast<double>(rows);
}

}  // namespace sb::models
