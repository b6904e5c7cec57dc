#include "kernels/lowrank.hpp"

#include <cmath>
#include <vector>

namespace sb {

void matmul_cpu(const float* m, size_t n, size_t cols, const float* q, size_t r, float* p) {
  std::vector<double> row(r);
  for (size_t i = 0; i < n; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    const float* mi = m + i * cols;
    for (size_t j = 0; j < cols; ++j)
      for (size_t c = 0; c < r; ++c) row[c] += static_cast<double>(mi[j]) * q[j * r + c];
    for (size_t c = 0; c < r; ++c) p[i * r + c] = static_cast<float>(row[c]);
  }
}

void matmul_transposed_cpu(const float* m, size_t n, size_t cols, const float* p, size_t r, float* q) {
  std::vector<double> sum(cols * r, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const float* mi = m + i * cols;
    const float* pi = p + i * r;
    for (size_t j = 0; j < cols; ++j)
      for (size_t c = 0; c < r; ++c) sum[j * r + c] += static_cast<double>(mi[j]) * pi[c];
  }
  for (size_t k = 0; k < cols * r; ++k) q[k] = static_cast<float>(sum[k]);
}

void orthonormalise_columns_cpu(float* p, size_t n, size_t r) {
  for (size_t c = 0; c < r; ++c) {
    double before = 0;
    for (size_t i = 0; i < n; ++i) before += static_cast<double>(p[i * r + c]) * p[i * r + c];
    for (size_t earlier = 0; earlier < c; ++earlier) {
      double dot = 0;
      for (size_t i = 0; i < n; ++i) dot += static_cast<double>(p[i * r + c]) * p[i * r + earlier];
      for (size_t i = 0; i < n; ++i) p[i * r + c] -= static_cast<float>(dot * p[i * r + earlier]);
    }
    double norm = 0;
    for (size_t i = 0; i < n; ++i) norm += static_cast<double>(p[i * r + c]) * p[i * r + c];
    norm = std::sqrt(norm);
    // What is left of a column that lay in the span of the earlier ones is rounding noise.
    const float scale = norm > 1e-6 * std::sqrt(before) && norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    for (size_t i = 0; i < n; ++i) p[i * r + c] *= scale;
  }
}

void add_outer_cpu(const float* p, const float* q, size_t n, size_t cols, size_t r, float* m) {
  for (size_t i = 0; i < n; ++i) {
    const float* pi = p + i * r;
    float* mi = m + i * cols;
    for (size_t j = 0; j < cols; ++j) {
      float sum = 0;
      for (size_t c = 0; c < r; ++c) sum += pi[c] * q[j * r + c];
      mi[j] += sum;
    }
  }
}

}  // namespace sb
