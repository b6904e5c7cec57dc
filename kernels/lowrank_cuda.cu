// PowerSGD's linear algebra on device memory (kernels/lowrank.hpp). The matrices are row-major,
// cuBLAS is column-major: a row-major a x b matrix is the column-major b x a one, its transpose.
// So, with every matrix read as its column-major transpose,
//   P = M Q     is  P^T = Q^T M^T    gemm(N, N), r x n
//   Q = M^T P   is  Q^T = P^T M      gemm(N, T), r x cols
//   M += P Q^T  is  M^T += Q P^T     gemm(T, N), cols x n, beta 1.
#include <cublas_v2.h>

#include "common/check.hpp"
#include "common/cudnn_check.hpp"
#include "common/cuda_check.hpp"
#include "kernels/cuda_loops.cuh"
#include "kernels/lowrank.hpp"

namespace sb {
namespace {

int dim(size_t n) {
  SB_CHECK(n <= 0x7fffffff, "PowerSGD: a matrix dimension over cuBLAS's int");
  return static_cast<int>(n);
}

void gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, size_t m, size_t n, size_t k,
          const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc) {
  const float alpha = 1.0f;
  SB_CUBLAS_CHECK(cublasSgemm(handle, op_a, op_b, dim(m), dim(n), dim(k), &alpha, a, dim(lda), b, dim(ldb), &beta, c,
                              dim(ldc)));
}

// Modified Gram-Schmidt, as orthonormalise_columns_cpu: column c loses its projections on the
// earlier (already unit) columns, then is scaled to unit length, or to zero when what is left is
// rounding noise. One block; each sum is a block total in double, so every thread sees it.
__device__ void orthonormalise_in_block(float* p, size_t n, size_t r) {
  for (size_t c = 0; c < r; ++c) {
    double sum = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(p[i * r + c]) * p[i * r + c];
    const double before = block_total(sum);
    for (size_t earlier = 0; earlier < c; ++earlier) {
      double dot = 0;
      for (size_t i = threadIdx.x; i < n; i += blockDim.x) dot += static_cast<double>(p[i * r + c]) * p[i * r + earlier];
      dot = block_total(dot);
      for (size_t i = threadIdx.x; i < n; i += blockDim.x) p[i * r + c] -= static_cast<float>(dot * p[i * r + earlier]);
      __syncthreads();
    }
    double norm = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) norm += static_cast<double>(p[i * r + c]) * p[i * r + c];
    norm = sqrt(block_total(norm));
    const float scale = norm > 1e-6 * sqrt(before) && norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) p[i * r + c] *= scale;
    __syncthreads();
  }
}

// A block per factor: every matrix's P of a bucket at once, where one launch each left the GPU
// with one busy multiprocessor at a time.
__global__ void orthonormalise_factors_kernel(float* p, const FactorView* factors) {
  const FactorView f = factors[blockIdx.x];
  orthonormalise_in_block(p + f.offset, f.rows, f.r);
}

}  // namespace

void matmul_cuda(cublasHandle_t handle, const float* m, size_t n, size_t cols, const float* q, size_t r, float* p) {
  gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, r, n, cols, q, r, m, cols, 0.0f, p, r);
}

void matmul_transposed_cuda(cublasHandle_t handle, const float* m, size_t n, size_t cols, const float* p, size_t r,
                            float* q) {
  gemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, r, cols, n, p, r, m, cols, 0.0f, q, r);
}

void orthonormalise_factors_cuda(float* p, const FactorView* factors, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  SB_CHECK(count <= 0x7fffffff, "PowerSGD: over 2^31 factors in one bucket");
  orthonormalise_factors_kernel<<<static_cast<unsigned>(count), 1024, 0, stream>>>(p, factors);
  SB_CUDA_CHECK(cudaGetLastError());
}

void add_outer_cuda(cublasHandle_t handle, const float* p, const float* q, size_t n, size_t cols, size_t r, float* m) {
  gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, cols, n, r, q, r, p, r, 1.0f, m, cols);
}

}  // namespace sb
