// The compressed allreduce on device buffers against the host one, on the same gradients, at any
// number of ranks with one GPU each (CUDA builds where every rank has a GPU; skipped otherwise):
// the averages and the error-feedback residuals agree exactly, but for QSGD, whose scale (a norm)
// is summed in another order on the device and may differ in its last bit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/compress/compressed_allreduce.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#if SB_HAVE_CUDA
#include "collectives/compress/device_compressed_allreduce.hpp"
#include "collectives/nccl_context.hpp"
#endif

namespace sb {
namespace {

bool gpu_on_every_rank() {
  const AllreduceImplInfo* nccl = find_allreduce_impl("nccl");
  int missing = nccl && nccl->unavailable(discover_world_layout()).empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&missing, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 0;
}

TEST(DeviceCompressedAllreduce, MatchesTheHostOneStepAfterStep) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  NcclContext nccl(MPI_COMM_WORLD);
  const size_t n = 5003;
  float* device = static_cast<float*>(nccl.allocate(n * sizeof(float)));
  for (const std::string name : {"none", "fp16", "bf16", "qsgd", "terngrad"}) {
    SCOPED_TRACE(name);
    CompressorParams params;
    params.stream = static_cast<uint64_t>(rank);
    CompressedAllreduce host(make_compressor(name, params), true, MPI_COMM_WORLD);
    DeviceCompressedAllreduce gpu(name, params, true, nccl);
    for (uint64_t step = 0; step < 3; ++step) {
      std::vector<float> g = heavy_tailed_gradient(n, 10 * static_cast<unsigned>(rank) + static_cast<unsigned>(step));
      double norm = 0;  // of gradient + residual, what QSGD scales by (the residual is small beside it)
      for (float v : g) norm += 2.0 * static_cast<double>(v) * v;
      nccl.upload(device, g.data(), n * sizeof(float));
      gpu.run(device, n, step);
      host.run(g.data(), n, step);
      std::vector<float> got(n);
      SB_CUDA_CHECK(cudaStreamSynchronize(nccl.stream()));
      nccl.download(got.data(), device, n * sizeof(float));
      const std::vector<float> residual = gpu.residual();
      // QSGD: a last-bit change of the scale can move a value across a rounding boundary: one
      // level (the scale / 16, the scale being the norm of gradient + residual) on some values.
      const double unit = name == "qsgd" ? 2 * std::sqrt(norm) / params.levels + 1e-6 : 0.0;
      size_t moved = 0;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], g[i], unit) << "average, step " << step << " at " << i;
        ASSERT_NEAR(residual[i], host.residual()[i], unit) << "residual at " << i;
        moved += got[i] != g[i];
      }
      EXPECT_LE(moved, name == "qsgd" ? n / 100 : 0) << "values that differ from the host's";
    }
  }
  nccl.release(device);
#endif
}

TEST(DeviceCompressedAllreduce, CompressorsWithoutADeviceFormAreUsageErrors) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  NcclContext nccl(MPI_COMM_WORLD);
  EXPECT_THROW(DeviceCompressedAllreduce("topk", {}, true, nccl), UsageError);
  EXPECT_TRUE(DeviceCompressedAllreduce::supports("qsgd"));
  EXPECT_FALSE(DeviceCompressedAllreduce::supports("powersgd"));
#endif
}

}  // namespace
}  // namespace sb
