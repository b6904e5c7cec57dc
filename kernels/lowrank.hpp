#pragma once
// The small dense linear algebra of PowerSGD (Vogels et al. 2019) on a row-major n x m matrix M and
// thin n x r / m x r factors (r a few columns): the products M Q and M^T P, the orthogonalisation
// of a factor's columns, and the decoding M += P Q^T. Loops over M row by row, so that each
// product reads M once; r is small enough that the factor rows stay in registers and cache.
#include <cstddef>
#include <cstdint>

#if SB_HAVE_CUDA
struct CUstream_st;    // cudaStream_t
struct cublasContext;  // cublasHandle_t
#endif

namespace sb {

// p (n x r) = m (n x cols) q (cols x r).
void matmul_cpu(const float* m, size_t n, size_t cols, const float* q, size_t r, float* p);
// q (cols x r) = m^T (cols x n) p (n x r).
void matmul_transposed_cpu(const float* m, size_t n, size_t cols, const float* p, size_t r, float* q);
// Orthonormalises the r columns of p (n x r) in place by modified Gram-Schmidt; a column that is
// (numerically) dependent on the earlier ones becomes zero.
void orthonormalise_columns_cpu(float* p, size_t n, size_t r);
// m (n x cols) += weight p (n x r) q^T (r x cols).
void add_outer_cpu(const float* p, const float* q, size_t n, size_t cols, size_t r, float weight, float* m);

// PowerSGD's first Q: `count` standard normal values (Box-Muller) from `key` alone, so that
// every rank, on the host or the device (which uploads them), starts from the same factor.
void standard_normal_cpu(float* out, size_t count, uint64_t key);

// One factor of several laid end to end: rows x r values from `offset` (for a batched launch).
struct FactorView {
  uint64_t offset = 0, rows = 0, r = 0;
};

#if SB_HAVE_CUDA
// The same on device memory (lowrank_cuda.cu): the products through cuBLAS in fp32 (the handle
// carries the stream; its math mode must not allow TF32), the orthogonalisation of each factor
// by one block of threads (r columns of a few thousand rows: too little work for more), in
// double like the CPU, every factor of a bucket in one launch.
void matmul_cuda(cublasContext* handle, const float* m, size_t n, size_t cols, const float* q, size_t r, float* p);
void matmul_transposed_cuda(cublasContext* handle, const float* m, size_t n, size_t cols, const float* p, size_t r,
                            float* q);
// orthonormalise_columns_cpu on every factor p + f.offset of `factors` (device memory, `count`
// of them), a block each.
void orthonormalise_factors_cuda(float* p, const FactorView* factors, size_t count, CUstream_st* stream);
void add_outer_cuda(cublasContext* handle, const float* p, const float* q, size_t n, size_t cols, size_t r, float* m);
#endif

}  // namespace sb
