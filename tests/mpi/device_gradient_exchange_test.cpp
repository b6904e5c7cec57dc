// The GPU gradient exchange against the host one at any number of ranks with one GPU each (CUDA
// builds where every rank has a GPU; skipped otherwise): the same plan, the same gradients, the
// same averages, uncompressed (by ncclAllReduce and by schedules on the nccl transport), narrowed
// to fp16, and through the device compressors (whose
// payloads and decoding order are the host's, so top-k and random-k agree exactly), weighted
// ranks included.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/buckets/gradient_exchange.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "collectives/schedule_allreduce.hpp"
#include "tests/mpi/gpu_ranks.hpp"
#if SB_HAVE_CUDA
#include <cuda_runtime.h>

#include "models/device_gradient_exchange.hpp"
#endif

namespace sb {
namespace {

TEST(DeviceGradientExchange, AveragesAsTheHostExchangeDoes) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<GradientTensor> tensors = {{"conv", 4608}, {"bn.w", 32}, {"bn.b", 32}, {"fc", 6410}, {"fc.b", 10}};
  struct Case {
    std::string compressor;
    float weight;
    double tolerance;  // relative to the gradients' largest magnitude
    std::string algorithm = "nccl";
  };
  // NCCL's, the schedules' and MPI's sums may add ranks in other orders: a few ulps for the
  // uncompressed and fp16.
  const Case cases[] = {{"none", 1, 1e-6},
                        {"none", static_cast<float>(rank + 1), 1e-6, "ring"},
                        {"none", 1, 1e-6, "rabenseifner"},
                        {"fp16", 1, 2e-3},
                        {"fp16", 1, 2e-3, "rd"},
                        {"topk", 1, 0},
                        {"randomk", static_cast<float>(rank + 1), 0},
                        {"powersgd", 1, 1e-4},
                        {"efsign", 1, 1e-5}};
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreate(&compute), cudaSuccess);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.compressor + " over " + c.algorithm);
    const BucketPlan plan = plan_buckets(tensors, BucketStrategy::ddp, 0.02);
    ExchangeConfig config;
    config.compressor = c.compressor == "fp16" ? "none" : c.compressor;  // fp16 narrowing is compared loosely
    std::vector<std::vector<float>> host(tensors.size());
    std::vector<float*> host_pointers;
    std::vector<models::gpu::Elements> device;
    for (size_t k = 0; k < tensors.size(); ++k) {
      host[k].resize(tensors[k].count);
      host_pointers.push_back(host[k].data());
      void* d = nullptr;
      ASSERT_EQ(cudaMalloc(&d, tensors[k].count * sizeof(float)), cudaSuccess);
      device.push_back({d, models::gpu::ElementType::f32});
    }
    GradientExchange cpu(MPI_COMM_WORLD, config, plan, host_pointers);
    models::DeviceExchangeOptions options;
    options.compressor = c.compressor;
    options.bucket_type = c.compressor == "fp16" ? models::gpu::ElementType::f16 : models::gpu::ElementType::f32;
    options.error_feedback = c.compressor != "none";
    options.algorithm = find_allreduce_impl(c.algorithm)->algorithm;  // null for nccl: ncclAllReduce
    ImplConfig impl;
    impl.type = c.compressor == "fp16" ? DataType::float16 : DataType::float32;
    options.algorithm_params = algorithm_params(impl);
    models::DeviceGradientExchange gpu(MPI_COMM_WORLD, plan, device, compute, options);
    cpu.set_weight(c.weight);
    gpu.set_weight(c.weight);
    for (int step = 0; step < 2; ++step) {
      double largest = 0;
      for (size_t k = 0; k < tensors.size(); ++k) {
        host[k] = heavy_tailed_gradient(tensors[k].count, 100 * static_cast<unsigned>(rank) + 10 * k + static_cast<unsigned>(step));
        for (float v : host[k]) largest = std::max(largest, std::fabs(static_cast<double>(v)));
        cudaMemcpy(device[k].data, host[k].data(), host[k].size() * sizeof(float), cudaMemcpyHostToDevice);
      }
      for (GradientAverager* exchange : {static_cast<GradientAverager*>(&cpu), static_cast<GradientAverager*>(&gpu)}) {
        exchange->begin_step();
        for (size_t k = tensors.size(); k-- > 0;) exchange->tensor_ready(k);
        exchange->finish();
      }
      ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
      for (size_t k = 0; k < tensors.size(); ++k) {
        std::vector<float> got(tensors[k].count);
        cudaMemcpy(got.data(), device[k].data, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], host[k][i], c.tolerance * largest * c.weight) << tensors[k].name << "[" << i << "] step " << step;
        }
      }
    }
    for (const models::gpu::Elements& d : device) cudaFree(d.data);
  }
  cudaStreamDestroy(compute);
#endif
}

// The device exchange's carried state (fp16 narrowing residuals, compressors' residuals and
// warm starts) handed to a fresh one, with the step: the next step's averages are the same.
TEST(DeviceGradientExchange, CarriedStateContinuesInAFreshExchange) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<GradientTensor> tensors = {{"a", 3000}, {"b", 16}, {"c", 1000}};
  const BucketPlan plan = plan_buckets(tensors, BucketStrategy::ddp, 0.01);
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreate(&compute), cudaSuccess);
  for (const char* compressor : {"fp16", "powersgd", "randomk"}) {
    SCOPED_TRACE(compressor);
    models::DeviceExchangeOptions options;
    options.compressor = compressor;
    options.bucket_type = std::string(compressor) == "fp16" ? models::gpu::ElementType::f16 : models::gpu::ElementType::f32;
    std::vector<models::gpu::Elements> first, second;
    for (const GradientTensor& t : tensors) {
      void *a = nullptr, *b = nullptr;
      ASSERT_EQ(cudaMalloc(&a, t.count * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&b, t.count * sizeof(float)), cudaSuccess);
      first.push_back({a, models::gpu::ElementType::f32});
      second.push_back({b, models::gpu::ElementType::f32});
    }
    auto step_through = [&](GradientAverager& exchange, const std::vector<models::gpu::Elements>& g, int step) {
      for (size_t k = 0; k < tensors.size(); ++k) {
        const std::vector<float> values = heavy_tailed_gradient(tensors[k].count, 1000 * step + 10 * k + rank);
        cudaMemcpy(g[k].data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice);
      }
      exchange.begin_step();
      for (size_t k = tensors.size(); k-- > 0;) exchange.tensor_ready(k);
      exchange.finish();
      cudaStreamSynchronize(compute);
    };
    models::DeviceGradientExchange original(MPI_COMM_WORLD, plan, first, compute, options);
    for (int step = 0; step < 3; ++step) step_through(original, first, step);
    const std::vector<NamedFloats> carried = original.carried_state();
    EXPECT_FALSE(carried.empty());
    models::DeviceGradientExchange resumed(MPI_COMM_WORLD, plan, second, compute, options);
    resumed.set_step(3);
    resumed.restore_carried_state(carried);
    step_through(original, first, 3);
    step_through(resumed, second, 3);
    for (size_t k = 0; k < tensors.size(); ++k) {
      std::vector<float> a(tensors[k].count), b(tensors[k].count);
      cudaMemcpy(a.data(), first[k].data, a.size() * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(b.data(), second[k].data, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
      EXPECT_EQ(a, b) << tensors[k].name;
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
      cudaFree(first[k].data);
      cudaFree(second[k].data);
    }
  }
  cudaStreamDestroy(compute);
#endif
}

}  // namespace
}  // namespace sb
