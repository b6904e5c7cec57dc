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

// The same, widened to double once, for products that would otherwise widen each value per row.
std::vector<double> transpose_wide(const float* a, size_t cols, size_t r) {
  std::vector<double> t(cols * r);
  for (size_t j = 0; j < cols; ++j)
    for (size_t c = 0; c < r; ++c) t[c * cols + j] = a[j * r + c];
  return t;
}

// sum a[j] b[j] in eight double lanes.
SB_VECTOR_CLONES double dot(const float* a, const double* b, size_t n) {
  double lanes[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t k = 0; k < 8; ++k) lanes[k] += static_cast<double>(a[j + k]) * b[j + k];
  double sum = 0;
  for (; j < n; ++j) sum += static_cast<double>(a[j]) * b[j];
  for (double lane : lanes) sum += lane;
  return sum;
}

// Four of dot() at once, a against b0..b3, with the same lanes and order each: one pass over a,
// each value widened once (a product of rank r otherwise reads and widens M r times).
SB_VECTOR_CLONES void dot4(const float* a, const double* b0, const double* b1, const double* b2, const double* b3,
                           size_t n, double* out) {
  double l0[8] = {}, l1[8] = {}, l2[8] = {}, l3[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t k = 0; k < 8; ++k) {
      const double x = a[j + k];
      l0[k] += x * b0[j + k];
      l1[k] += x * b1[j + k];
      l2[k] += x * b2[j + k];
      l3[k] += x * b3[j + k];
    }
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (; j < n; ++j) {
    const double x = a[j];
    s0 += x * b0[j];
    s1 += x * b1[j];
    s2 += x * b2[j];
    s3 += x * b3[j];
  }
  for (size_t k = 0; k < 8; ++k) {
    s0 += l0[k];
    s1 += l1[k];
    s2 += l2[k];
    s3 += l3[k];
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
}

// y[j] += alpha x[j], in double.
SB_VECTOR_CLONES void axpy(double alpha, const float* x, double* y, size_t n) {
  for (size_t j = 0; j < n; ++j) y[j] += alpha * static_cast<double>(x[j]);
}

// axpy() of four rows x0..x3 in turn into y, with the same order of additions, y read and
// written once instead of four times. a: the four alphas.
SB_VECTOR_CLONES void axpy4(const double* a, const float* x0, const float* x1, const float* x2, const float* x3,
                            double* y, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double v = y[j];
    v += a[0] * static_cast<double>(x0[j]);
    v += a[1] * static_cast<double>(x1[j]);
    v += a[2] * static_cast<double>(x2[j]);
    v += a[3] * static_cast<double>(x3[j]);
    y[j] = v;
  }
}

// row[j] = sum over c in order of p[c] qt[c][j], in fp32 (the order and type of the plain loop),
// four columns per pass over the row.
SB_VECTOR_CLONES void combine_columns(const float* p, const float* qt, size_t cols, size_t r, float* row) {
  for (size_t j = 0; j < cols; ++j) row[j] = 0;
  size_t c = 0;
  for (; c + 4 <= r; c += 4) {
    const float* q0 = qt + c * cols;
    const float *q1 = q0 + cols, *q2 = q1 + cols, *q3 = q2 + cols;
    for (size_t j = 0; j < cols; ++j) {
      float v = row[j];
      v += p[c] * q0[j];
      v += p[c + 1] * q1[j];
      v += p[c + 2] * q2[j];
      v += p[c + 3] * q3[j];
      row[j] = v;
    }
  }
  for (; c < r; ++c)
    for (size_t j = 0; j < cols; ++j) row[j] += p[c] * qt[c * cols + j];
}

}  // namespace

void matmul_cpu(const float* m, size_t n, size_t cols, const float* q, size_t r, float* p) {
  const std::vector<double> qt = transpose_wide(q, cols, r);
  const double* b = qt.data();
  for (size_t i = 0; i < n; ++i) {
    const float* row = m + i * cols;
    size_t c = 0;
    for (; c + 4 <= r; c += 4) {
      double out[4];
      dot4(row, b + c * cols, b + (c + 1) * cols, b + (c + 2) * cols, b + (c + 3) * cols, cols, out);
      for (size_t k = 0; k < 4; ++k) p[i * r + c + k] = static_cast<float>(out[k]);
    }
    for (; c < r; ++c) p[i * r + c] = static_cast<float>(dot(row, b + c * cols, cols));
  }
}

void matmul_transposed_cpu(const float* m, size_t n, size_t cols, const float* p, size_t r, float* q) {
  std::vector<double> sum(r * cols, 0.0);  // column c of q as a contiguous row
  size_t i = 0;
  for (; i + 4 <= n; i += 4)  // four rows into each column's sum at once, in row order
    for (size_t c = 0; c < r; ++c) {
      const double a[4] = {p[i * r + c], p[(i + 1) * r + c], p[(i + 2) * r + c], p[(i + 3) * r + c]};
      axpy4(a, m + i * cols, m + (i + 1) * cols, m + (i + 2) * cols, m + (i + 3) * cols, sum.data() + c * cols, cols);
    }
  for (; i < n; ++i)
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
