// The CUDA reductions against the CPU ones, bit for bit, for every type and op (CUDA builds with
// a GPU; skipped otherwise). Both run the same element functions, so they must agree exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/reduce.hpp"

#if SB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace sb {
namespace {

TEST(ReduceCuda, MatchesTheCpuForEveryTypeAndOp) {
#if !SB_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU visible";
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
#if !SB_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU visible";
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

}  // namespace
}  // namespace sb
