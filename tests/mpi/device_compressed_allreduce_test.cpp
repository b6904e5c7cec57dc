// The compressed allreduce on device buffers against the host one, on the same gradients, at any
// number of ranks with one GPU each (CUDA builds where every rank has a GPU; skipped otherwise):
// every compressor, three steps with error feedback; the averages and the residuals agree
// exactly but where a device sum runs in another order (agreement() says where and how far).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/compress/compressed_allreduce.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "common/usage_error.hpp"
#include "tests/mpi/gpu_ranks.hpp"
#if SB_HAVE_CUDA
#include "collectives/compress/device_compressed_allreduce.hpp"
#include "collectives/nccl_context.hpp"
#endif

namespace sb {
namespace {

#if SB_HAVE_CUDA
// How far the device average and residual may be from the host's, and on how many values.
// Exact: the dense and sparse compressors. A last-bit change of a scale summed in another order
// (QSGD's norms, TernGrad's clip at 2.5 standard deviations, sign's mean, onebit's chunk means)
// moves a few values by one level of QSGD or TernGrad (at most max |x| of gradient + residual,
// under the norm), or by a last bit of the mean; PowerSGD's cuBLAS products
// round differently in every value, by a few ulps of the gradient's scale.
struct Agreement {
  double tolerance;       // absolute
  double moved_fraction;  // of the values that may differ at all
};
Agreement agreement(const std::string& name, double norm, size_t n, int levels) {
  if (name == "qsgd") return {2 * std::sqrt(norm) / levels + 1e-6, 0.01};
  if (name == "terngrad") return {2 * std::sqrt(norm) + 1e-6, 0.01};
  if (name == "sign" || name == "efsign" || name == "onebit") return {1e-5 * std::sqrt(norm / static_cast<double>(n)) + 1e-7, 1.0};
  if (name == "powersgd") return {1e-4 * std::sqrt(norm / static_cast<double>(n)) + 1e-6, 1.0};
  return {0.0, 0.0};
}
#endif

TEST(DeviceCompressedAllreduce, MatchesTheHostOneStepAfterStep) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  NcclContext nccl(MPI_COMM_WORLD);
  const size_t n = 5003;  // not a square (PowerSGD pads), not a multiple of 8 or of onebit's chunk
  float* device = static_cast<float*>(nccl.allocate(n * sizeof(float)));
  for (std::string_view name_view : compressor_names()) {
    const std::string name(name_view);
    SCOPED_TRACE(name);
    CompressorParams params;
    params.stream = static_cast<uint64_t>(rank);
    CompressedAllreduce host(make_compressor(name, params), true, MPI_COMM_WORLD);
    DeviceCompressedAllreduce gpu(name, params, true, nccl);
    for (uint64_t step = 0; step < 3; ++step) {
      std::vector<float> g = heavy_tailed_gradient(n, 10 * static_cast<unsigned>(rank) + static_cast<unsigned>(step));
      double norm = 0;  // of gradient + residual, about twice the gradient's (the residual is smaller)
      for (float v : g) norm += 2.0 * static_cast<double>(v) * v;
      nccl.upload(device, g.data(), n * sizeof(float));
      gpu.run(device, n, step);
      host.run(g.data(), n, step);
      std::vector<float> got(n);
      SB_CUDA_CHECK(cudaStreamSynchronize(nccl.stream()));
      nccl.download(got.data(), device, n * sizeof(float));
      const std::vector<float> residual = gpu.residual();
      const Agreement within = agreement(name, norm, n, params.levels);
      ASSERT_EQ(residual.size(), host.residual().size());  // none: both keep no residual
      size_t moved = 0;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], g[i], within.tolerance) << "average, step " << step << " at " << i;
        if (!residual.empty()) {
          ASSERT_NEAR(residual[i], host.residual()[i], within.tolerance) << "residual at " << i;
        }
        moved += got[i] != g[i];
      }
      EXPECT_LE(moved, static_cast<size_t>(within.moved_fraction * n)) << "values that differ from the host's";
    }
  }
  nccl.release(device);
#endif
}

TEST(DeviceCompressedAllreduce, BadParametersAreUsageErrors) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
#if SB_HAVE_CUDA
  NcclContext nccl(MPI_COMM_WORLD);
  CompressorParams bad_ratio;
  bad_ratio.ratio = 1.5;
  EXPECT_THROW(DeviceCompressedAllreduce("topk", bad_ratio, true, nccl), UsageError);
  EXPECT_THROW(DeviceCompressedAllreduce("gzip", {}, true, nccl), UsageError);
#endif
}

}  // namespace
}  // namespace sb
