#include "kernels/lowrank.hpp"

#include <cmath>
#include <vector>

#include "kernels/random.hpp"
#include "kernels/vector_clones.hpp"

namespace sb {

namespace {

// The r columns of a (cols x r, row-major) as r contiguous rows: the layout the loops below read
// with unit stride.
std::vector<float> transpose(const float* a, size_t cols, size_t r) {
  std::vector<float> t(cols * r);
  for (size_t j = 0; j < cols; ++j)
    for (size_t c = 0; c < r; ++c) t[c * cols + j] = a[j * r + c];
  return t;
}

// sum a[j] b[j] in eight double lanes.
SB_VECTOR_CLONES double dot(const float* a, const float* b, size_t n) {
  double lanes[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t k = 0; k < 8; ++k) lanes[k] += static_cast<double>(a[j + k]) * b[j + k];
  double sum = 0;
  for (; j < n; ++j) sum += static_cast<double>(a[j]) * b[j];
  for (double lane : lanes) sum += lane;
  return sum;
}

// y[j] += alpha x[j], in double.
SB_VECTOR_CLONES void axpy(double alpha, const float* x, double* y, size_t n) {
  for (size_t j = 0; j < n; ++j) y[j] += alpha * static_cast<double>(x[j]);
}

// row[j] = sum over c in order of p[c] qt[c][j], in fp32 (the order and type of the plain loop).
SB_VECTOR_CLONES void combine_columns(const float* p, const float* qt, size_t cols, size_t r, float* row) {
  for (size_t j = 0; j < cols; ++j) row[j] = 0;
  for (size_t c = 0; c < r; ++c)
    for (size_t j = 0; j < cols; ++j) row[j] += p[c] * qt[c * cols + j];
}

}  // namespace

void matmul_cpu(const float* m, size_t n, size_t cols, const float* q, size_t r, float* p) {
  const std::vector<float> qt = transpose(q, cols, r);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < r; ++c) p[i * r + c] = static_cast<float>(dot(m + i * cols, qt.data() + c * cols, cols));
}

void matmul_transposed_cpu(const float* m, size_t n, size_t cols, const float* p, size_t r, float* q) {
  std::vector<double> sum(r * cols, 0.0);  // column c of q as a contiguous row
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < r; ++c) axpy(p[i * r + c], m + i * cols, sum.data() + c * cols, cols);
  for (size_t j = 0; j < cols; ++j)
    for (size_t c = 0; c < r; ++c) q[j * r + c] = static_cast<float>(sum[c * cols + j]);
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

void add_outer_cpu(const float* p, const float* q, size_t n, size_t cols, size_t r, float weight, float* m) {
  const std::vector<float> qt = transpose(q, cols, r);
  std::vector<float> row(cols);
  for (size_t i = 0; i < n; ++i) {
    combine_columns(p + i * r, qt.data(), cols, r, row.data());
    float* mi = m + i * cols;
    for (size_t j = 0; j < cols; ++j) mi[j] += weight * row[j];
  }
}

void standard_normal_cpu(float* out, size_t count, uint64_t key) {
  for (size_t k = 0; k < count; ++k) {
    const double u = (static_cast<double>(random_bits(key, 2 * k) >> 11) + 0.5) * 0x1p-53;
    const double v = static_cast<double>(random_bits(key, 2 * k + 1) >> 11) * 0x1p-53;
    out[k] = static_cast<float>(std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v));
  }
}

}  // namespace sb
