#include "bench/compress/device_measure.hpp"

#include <mpi.h>

#include <memory>

#include "collectives/allreduce_impl.hpp"
#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/stats.hpp"
#if SB_HAVE_CUDA
#include "collectives/compress/device_compressed_allreduce.hpp"
#include "collectives/nccl_context.hpp"
#include "kernels/device_compress.hpp"
#endif

namespace sb {

std::string device_unavailable() {
#if SB_HAVE_CUDA
  const AllreduceImplInfo* nccl = find_allreduce_impl("nccl");
  const std::string why = nccl ? nccl->unavailable(discover_world_layout()) : "no nccl implementation";
  // Every rank gives the reason of the first that cannot (a node without a GPU).
  return first_reason_against(why, MPI_COMM_WORLD).value_or("");
#else
  return "built without CUDA (make CUDA=1)";
#endif
}

#if SB_HAVE_CUDA
namespace {

// The communicator is made once per run: every size and compressor reuses it.
NcclContext& context() {
  static NcclContext nccl(MPI_COMM_WORLD);
  return nccl;
}

// Median over iters of the slowest rank's CUDA-event time of `enqueue`, after warm-up calls.
template <class Enqueue>
double median_slowest_device_us(const CompressOptions& o, Enqueue&& enqueue) {
  NcclContext& nccl = context();
  for (int i = 0; i < o.warmup_iters; ++i) nccl.time(enqueue);
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    SB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double mine = nccl.time(enqueue) * 1e6, slowest = 0;
    SB_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    times.push_back(slowest);
  }
  return percentile(times, 50);
}

}  // namespace

std::optional<DeviceTimes> measure_on_device(const std::string& compressor, const std::vector<float>& gradient,
                                             const std::vector<TensorView>& tensors, const CompressOptions& o, int rank) {
  NcclContext& nccl = context();
  const size_t count = gradient.size(), bytes = count * sizeof(float);
  float* original = static_cast<float*>(nccl.allocate(bytes));
  float* work = static_cast<float*>(nccl.allocate(bytes));
  nccl.upload(original, gradient.data(), bytes);
  CompressorParams params = o.params;
  params.stream = static_cast<uint64_t>(rank);
  params.tensors = tensors;
  DeviceCompressedAllreduce allreduce(compressor, params, o.error_feedback, nccl);
  int nranks = 1;
  SB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  uint64_t step = 0;
  DeviceTimes t;
  // Both time a fresh copy of the gradient, as the host rows do.
  t.compressed_us = median_slowest_device_us(o, [&] {
    SB_CUDA_CHECK(cudaMemcpyAsync(work, original, bytes, cudaMemcpyDeviceToDevice, nccl.stream()));
    allreduce.run(work, count, step++);
  });
  t.nccl_us = median_slowest_device_us(o, [&] {
    SB_CUDA_CHECK(cudaMemcpyAsync(work, original, bytes, cudaMemcpyDeviceToDevice, nccl.stream()));
    SB_NCCL_CHECK(ncclAllReduce(work, work, count, ncclFloat32, ncclSum, nccl.comm(), nccl.stream()));
    scale_cuda(work, count, 1.0f / static_cast<float>(nranks), nccl.stream());
  });
  SB_CUDA_CHECK(cudaStreamSynchronize(nccl.stream()));
  nccl.release(original);
  nccl.release(work);
  return t;
}
#else
std::optional<DeviceTimes> measure_on_device(const std::string&, const std::vector<float>&, const std::vector<TensorView>&,
                                             const CompressOptions&, int) {
  return std::nullopt;
}
#endif

}  // namespace sb
