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

}  // namespace
}  // namespace sb
