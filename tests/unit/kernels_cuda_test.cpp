// The CUDA kernels against the CPU ones, bit for bit: reductions for every type and op, and the
// fp16/bf16 conversions (CUDA builds with a GPU; skipped otherwise). Both sides run the same
// element functions, so they must agree exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/convert.hpp"
#include "kernels/reduce.hpp"
#include "tests/unit/gpu_skip.hpp"

#if SB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace sb {
namespace {

TEST(ReduceCuda, MatchesTheCpuForEveryTypeAndOp) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  const size_t n = 100003;  // several blocks' worth, and a ragged end
  for (DataType type : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      const size_t bytes = n * size_of(type);
      std::vector<unsigned char> a(bytes), b(bytes), want(bytes), got(bytes);
      // Bytes that make valid, varied values of every type (fp16/bf16 included; NaNs compare
      // bitwise below, and both sides produce the same NaN bits).
      for (size_t i = 0; i < bytes; ++i) {
        a[i] = static_cast<unsigned char>((i * 37 + 11) % 251 & 0x3f);
        b[i] = static_cast<unsigned char>((i * 91 + 5) % 241 & 0x3f);
      }
      want = a;
      reduce_into_cpu(want.data(), b.data(), n, type, op);
      void *da = nullptr, *db = nullptr;
      ASSERT_EQ(cudaMalloc(&da, bytes), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&db, bytes), cudaSuccess);
      cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
      reduce_into_cuda(da, db, n, type, op, nullptr);
      ASSERT_EQ(cudaMemcpy(got.data(), da, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(da);
      cudaFree(db);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << name_of(type) << " " << name_of(op);
    }
  }
#endif
}

TEST(DivideCuda, MatchesTheCpu) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  for (DataType type : kAllDataTypes) {
    const size_t n = 4099, bytes = n * size_of(type);
    std::vector<unsigned char> values(bytes), want, got(bytes);
    for (size_t i = 0; i < bytes; ++i) values[i] = static_cast<unsigned char>((i * 13) % 256 & 0x3f);
    want = values;
    divide_cpu(want.data(), n, type, 3);
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
    cudaMemcpy(d, values.data(), bytes, cudaMemcpyHostToDevice);
    divide_cuda(d, n, type, 3, nullptr);
    ASSERT_EQ(cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << name_of(type);
  }
#endif
}

TEST(ConvertCuda, MatchesTheCpu) {
  SB_SKIP_WITHOUT_GPU();
#if SB_HAVE_CUDA
  const size_t n = 1 << 20;
  std::vector<float> values(n), back_cpu(n), back_gpu(n);
  for (size_t i = 0; i < n; ++i) {  // every kind of float: bit patterns from a simple hash
    const uint32_t bits = static_cast<uint32_t>(i * 2654435761u);
    std::memcpy(&values[i], &bits, sizeof bits);
  }
  std::vector<float16> half_cpu(n), half_gpu(n);
  std::vector<bfloat16> brain_cpu(n), brain_gpu(n);
  to_float16_cpu(values.data(), half_cpu.data(), n);
  to_bfloat16_cpu(values.data(), brain_cpu.data(), n);
  float *d_values = nullptr, *d_back = nullptr;
  float16* d_half = nullptr;
  bfloat16* d_brain = nullptr;
  ASSERT_EQ(cudaMalloc(&d_values, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_back, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_half, n * sizeof(float16)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_brain, n * sizeof(bfloat16)), cudaSuccess);
  cudaMemcpy(d_values, values.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  to_float16_cuda(d_values, d_half, n, nullptr);
  to_bfloat16_cuda(d_values, d_brain, n, nullptr);
  cudaMemcpy(half_gpu.data(), d_half, n * sizeof(float16), cudaMemcpyDeviceToHost);
  cudaMemcpy(brain_gpu.data(), d_brain, n * sizeof(bfloat16), cudaMemcpyDeviceToHost);
  EXPECT_EQ(std::memcmp(half_gpu.data(), half_cpu.data(), n * sizeof(float16)), 0);
  EXPECT_EQ(std::memcmp(brain_gpu.data(), brain_cpu.data(), n * sizeof(bfloat16)), 0);
  to_float_cuda(d_half, d_back, n, nullptr);
  cudaMemcpy(back_gpu.data(), d_back, n * sizeof(float), cudaMemcpyDeviceToHost);
  to_float_cpu(half_cpu.data(), back_cpu.data(), n);
  EXPECT_EQ(std::memcmp(back_gpu.data(), back_cpu.data(), n * sizeof(float)), 0);
  to_float_cuda(d_brain, d_back, n, nullptr);
  cudaMemcpy(back_gpu.data(), d_back, n * sizeof(float), cudaMemcpyDeviceToHost);
  to_float_cpu(brain_cpu.data(), back_cpu.data(), n);
  EXPECT_EQ(std::memcmp(back_gpu.data(), back_cpu.data(), n * sizeof(float)), 0);
  cudaFree(d_values);
  cudaFree(d_back);
  cudaFree(d_half);
  cudaFree(d_brain);
#endif
}

}  // namespace
}  // namespace sb
